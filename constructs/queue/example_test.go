package queue_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/queue"
)

// A FIFO work queue for a consumer function with a one-minute timeout; the visibility
// timeout follows from it (6x). Hand Queue() to the consumer's event source and alarm on
// DeadLetterQueue()'s depth.
func ExampleNewProcessingQueue() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	q := queue.NewProcessingQueue(stack, "Work", &queue.ProcessingQueueProps{
		Fifo:            true,
		QueueName:       "orders-work",
		ConsumerTimeout: time.Minute,
	})

	fmt.Println(q.Fifo(), q.VisibilityTimeout(), q.MaxReceiveCount(), *q.Queue().Node().Id())
	// Output: true 6m0s 5 Resource
}
