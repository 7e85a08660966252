package dispatcher_test

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
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
	dlq := awssqs.NewQueue(scope, jsii.String(id+"DLQ"), &awssqs.QueueProps{
		Fifo:            jsii.Bool(fifo),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(dlq, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("Serverless-SQSRedrivePolicy"), Reason: jsii.String("test fake: this queue is the dead-letter queue"),
	}}, nil)
	q := awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Fifo:            jsii.Bool(fifo),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	})
	return &fakeQueue{queue: q, fifo: fifo}
}
