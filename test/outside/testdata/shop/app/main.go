// Command app is a shop team's CDK app, in a module of its own, written as teams write
// them, with nothing changed for the local kit:
//   - stack Shop: an orders table that is CDK's TableV2 (a global table, with an index and
//     time to live), filled by an intake pipeline of these constructs; and a refunds queue
//     read by a plain GoFunction using aws-lambda-go directly, which writes to a refunds
//     table the account has already, its ARN a CfnParameter with a default;
//   - stage Legacy, stack Bridge: a queue mapped onto a function that exists already.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

func main() {
	defer validate.ExitOnInvalidProps()
	app := awscdk.NewApp(nil)
	NewShop(app, "Shop")
	NewBridge(awscdk.NewStage(app, jsii.String("Legacy"), nil), "Bridge")
	app.Synth(nil)
}

// NewShop is the shop's stack: orders in through the intake pipeline, refunds through the
// refunds function.
func NewShop(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	orders := awsdynamodb.NewTableV2(stack, jsii.String("Orders"), &awsdynamodb.TablePropsV2{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("orderId"), Type: awsdynamodb.AttributeType_STRING},
		TimeToLiveAttribute: jsii.String("expiresAt"),
		GlobalSecondaryIndexes: &[]*awsdynamodb.GlobalSecondaryIndexPropsV2{{
			IndexName:    jsii.String("byCustomer"),
			PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("customer"), Type: awsdynamodb.AttributeType_STRING},
		}},
	})
	intake := pipeline.NewPipeline(stack, "Intake", &pipeline.PipelineProps{
		Consumer: &consumer.IdempotentConsumerProps{
			Function: function.Options{
				Entry:       "functions/intake",
				Environment: map[string]string{"ORDERS_TABLE_NAME": *orders.TableName()},
			},
		},
	})
	orders.GrantWriteData(intake.Consumer().Function())

	refundsArn := awscdk.NewCfnParameter(stack, jsii.String("RefundsTableArn"), &awscdk.CfnParameterProps{
		Type: jsii.String("String"), Default: jsii.String("arn:aws:dynamodb:eu-west-1:111122223333:table/refunds-dev"),
	})
	refunds := awsdynamodb.Table_FromTableArn(stack, jsii.String("RefundsTable"), refundsArn.ValueAsString())
	dlq := awssqs.NewQueue(stack, jsii.String("RefundsDLQ"), &awssqs.QueueProps{EnforceSSL: jsii.Bool(true)})
	queue := awssqs.NewQueue(stack, jsii.String("RefundsQueue"), &awssqs.QueueProps{
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(30)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(2)},
	})
	fn := awscdklambdagoalpha.NewGoFunction(stack, jsii.String("Refunds"), &awscdklambdagoalpha.GoFunctionProps{
		Entry:       jsii.String("functions/refunds"),
		Timeout:     awscdk.Duration_Seconds(jsii.Number(10)),
		Environment: &map[string]*string{"REFUNDS_TABLE": refunds.TableName()},
		Events: &[]awslambda.IEventSource{awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{
			BatchSize: jsii.Number(10), ReportBatchItemFailures: jsii.Bool(true),
		})},
	})
	refunds.GrantWriteData(fn)
	awscdk.NewCfnOutput(stack, jsii.String("RefundsTableName"), &awscdk.CfnOutputProps{Value: refunds.TableName()})
	return stack
}

// NewBridge is the legacy bridge: a queue the existing orders-legacy function reads.
func NewBridge(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	dlq := awssqs.NewQueue(stack, jsii.String("InboxDLQ"), &awssqs.QueueProps{EnforceSSL: jsii.Bool(true)})
	inbox := awssqs.NewQueue(stack, jsii.String("Inbox"), &awssqs.QueueProps{
		EnforceSSL:      jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	})
	awslambda.NewEventSourceMapping(stack, jsii.String("ExistingMapping"), &awslambda.EventSourceMappingProps{
		Target:         awslambda.Function_FromFunctionName(stack, jsii.String("Existing"), jsii.String("orders-legacy")),
		EventSourceArn: inbox.QueueArn(),
		BatchSize:      jsii.Number(10),
	})
	return stack
}
