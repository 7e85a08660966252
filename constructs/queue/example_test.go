package queue_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
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

// An existing FIFO queue and its DLQ, imported by name: FIFO is read from the ".fifo"
// suffix, and the visibility timeout and retention are the queue's own settings (CDK cannot
// read them, and the consumer checks its timeout against them). Hand the result to the
// consumer's Queue prop (it dead-letters to the DLQ) or the dispatcher's.
func ExampleImportProcessingQueue() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	q := queue.ImportProcessingQueue(stack, "Work", &queue.ExistingProcessingQueueProps{
		QueueName:           "orders-work.fifo",
		DeadLetterQueueName: "orders-work-dlq.fifo",
		VisibilityTimeout:   6 * time.Minute,
		RetentionPeriod:     4 * 24 * time.Hour,
		MaxReceiveCount:     5,
	})

	fmt.Println(q.Fifo(), q.VisibilityTimeout(), q.RetentionPeriod(), *q.Queue().Node().Id(), *q.DeadLetterQueue().Node().Id())
	// Output: true 6m0s 96h0m0s Resource DeadLetterQueue
}

// Queues of another account with SSE-KMS, imported by ARN, each with its key: the consumer's
// grants then cover decrypting from the queue and encrypting into the DLQ. The owner's queue
// and key policies must admit the consumer's role as well.
func ExampleImportProcessingQueue_byArn() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
	})
	key := awskms.Key_FromKeyArn(stack, jsii.String("QueueKey"),
		jsii.String("arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"))

	q := queue.ImportProcessingQueue(stack, "Work", &queue.ExistingProcessingQueueProps{
		QueueArn:           "arn:aws:sqs:eu-west-1:210987654321:orders-work",
		DeadLetterQueueArn: "arn:aws:sqs:eu-west-1:210987654321:orders-work-dlq",
		VisibilityTimeout:  3 * time.Minute,
		RetentionPeriod:    24 * time.Hour,
		EncryptionKey:      key, // DeadLetterEncryptionKey defaults to it
	})

	fmt.Println(q.Fifo(), *q.Queue().QueueName(), q.DeadLetterQueue().EncryptionMasterKey() != nil)
	// Output: false orders-work true
}
