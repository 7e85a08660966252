// Command app is a billing team's CDK app, in a module of its own: one pipeline whose
// consumer is theirs (functions/billing) and writes an invoices table of theirs, reading a
// queue (and DLQ) that exists already in their account.
package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

func main() {
	defer validate.ExitOnInvalidProps()
	app := awscdk.NewApp(nil)
	NewBilling(app, "Billing")
	app.Synth(nil)
}

// NewBilling is the billing stack: the invoices table and the pipeline that fills it.
func NewBilling(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	invoices := awsdynamodb.NewTable(stack, jsii.String("Invoices"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("invoiceId"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	existing := queue.ImportProcessingQueue(stack, "Queue", &queue.ExistingProcessingQueueProps{
		QueueName: "billing-invoices", DeadLetterQueueName: "billing-invoices-dlq",
		VisibilityTimeout: 3 * time.Minute, RetentionPeriod: 4 * 24 * time.Hour, MaxReceiveCount: 5,
	})
	p := pipeline.NewPipeline(stack, "Invoicing", &pipeline.PipelineProps{
		ExistingQueue: existing,
		Consumer: &consumer.IdempotentConsumerProps{
			Function: function.Options{
				Entry:       "functions/billing",
				Environment: map[string]string{"INVOICES_TABLE_NAME": *invoices.TableName()},
			},
		},
	})
	invoices.Grant(p.Consumer().Function(), jsii.String("dynamodb:PutItem"))
	return stack
}
