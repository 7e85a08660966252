package pipeline_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
)

// Two pipelines in another app, sharing one idempotency table (each consumer keeps its own
// key prefix, the pipeline's id). Bundling is skipped here; `cdk synth` builds the functions.
func Example() {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
	stack := awscdk.NewStack(app, jsii.String("Billing"), nil)

	shared := table.NewIdempotencyTable(stack, "Idempotency", nil)
	invoices := pipeline.NewPipeline(stack, "Invoices", &pipeline.PipelineProps{
		Fifo:  true,
		Table: shared,
		Dispatcher: &dispatcher.ScheduledDispatcherProps{
			Cron:     "0 2 * * ? *",
			TimeZone: "Europe/Berlin",
			Items:    []dispatcher.WorkItem{{ID: "invoice-run", Group: "tenant-a"}},
		},
	})
	// A queue fed by other producers: no dispatcher.
	refunds := pipeline.NewPipeline(stack, "Refunds", &pipeline.PipelineProps{
		Table:      shared,
		Monitoring: invoices.Monitoring(),
	})
	fmt.Println(invoices.Queue().Fifo(), refunds.Queue().Fifo(), refunds.Dispatcher() == nil)
	// Output: true false true
}

// A pipeline on resources that exist already: an idempotency table created by Powertools for
// AWS Lambda, a queue with its DLQ, the on-call SNS topic, and one customer managed key for
// what the pipeline creates. The consumer is your own main package on functions/consume.
func Example_existingResources() {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
	stack := awscdk.NewStack(app, jsii.String("Payments"), nil)

	payments := pipeline.NewPipeline(stack, "Payments", &pipeline.PipelineProps{
		Table: table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
			TableName: "powertools-idempotency", // partition key id, TTL on expiration
		}),
		ExistingQueue: queue.ImportProcessingQueue(stack, "Queue", &queue.ExistingProcessingQueueProps{
			QueueName:           "payments.fifo",
			DeadLetterQueueName: "payments-dlq.fifo",
			VisibilityTimeout:   3 * time.Minute, // the queue's settings, which CDK cannot read
			RetentionPeriod:     4 * 24 * time.Hour,
		}),
		EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("Key"),
			jsii.String("arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab")),
		MonitoringProps: &monitoring.PipelineMonitoringProps{
			Topic: awssns.Topic_FromTopicArn(stack, jsii.String("OnCall"), jsii.String("arn:aws:sns:eu-west-1:111122223333:on-call")),
		},
		Consumer: &consumer.IdempotentConsumerProps{
			Function: function.Options{
				Entry:       "../../functions/consumer", // your own main package, e.g. cmd/payments
				Environment: map[string]string{"LEDGER_TABLE": "ledger"},
			},
		},
	})
	fmt.Println(payments.Queue().Fifo(), *payments.Consumer().Function().Runtime().Name())
	// Output: true provided.al2023
}
