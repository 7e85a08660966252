package dispatcher_test

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// fakeQueue stands in for constructs/queue's ProcessingQueue: an encrypted, SSL-only queue
// with a redrive policy to a DLQ of the same type, so the fixture's cdk-nag run judges only
// what the dispatcher adds.
type fakeQueue struct {
	queue awssqs.IQueue
	fifo  bool
}

func (q *fakeQueue) Queue() awssqs.IQueue { return q.queue }
func (q *fakeQueue) Fifo() bool           { return q.fifo }

var _ dispatcher.Target = (*fakeQueue)(nil)

func newFakeQueue(scope constructs.Construct, id string, fifo bool) *fakeQueue {
	q, _ := cdktest.PlainQueue(scope, id, fifo, 0, 0)
	return &fakeQueue{queue: q, fifo: fifo}
}
