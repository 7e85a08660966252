package consumer_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
)

// ordersQueue adapts a queue of your own to consumer.Source (constructs/queue's
// ProcessingQueue already has these methods).
type ordersQueue struct{ q awssqs.IQueue }

func (q ordersQueue) Queue() awssqs.IQueue             { return q.q }
func (q ordersQueue) Fifo() bool                       { return false }
func (q ordersQueue) VisibilityTimeout() time.Duration { return 6 * time.Minute }
func (q ordersQueue) RetentionPeriod() time.Duration   { return 4 * 24 * time.Hour }

// idempotencyTable adapts a table of your own to consumer.Store (constructs/table's
// IdempotencyTable already has these methods).
type idempotencyTable struct{ t awsdynamodb.Table }

func (t idempotencyTable) Table() awsdynamodb.ITable { return t.t }
func (t idempotencyTable) PartitionKeyName() string  { return "id" }
func (t idempotencyTable) SortKeyName() string       { return "" }
func (t idempotencyTable) GrantIdempotency(g awsiam.IGrantable) awsiam.Grant {
	return t.t.Grant(g, jsii.String("dynamodb:UpdateItem"))
}

func ExampleNewIdempotentConsumer() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	queue := awssqs.NewQueue(stack, jsii.String("Queue"), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Minutes(jsii.Number(6)),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
	})
	table := awsdynamodb.NewTable(stack, jsii.String("Idempotency"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expiration"),
	})

	c := consumer.NewIdempotentConsumer(stack, "OrderConsumer", &consumer.IdempotentConsumerProps{
		Queue:    ordersQueue{queue},
		Table:    idempotencyTable{table},
		Function: function.Options{Timeout: time.Minute}, // the queue's 6m visibility timeout covers 6 x 1m
	})
	fmt.Println(c.Timeout(), c.RecordTTL(), c.KeyPrefix(), c.BatchSize(), c.MaxConcurrency())
	// Output: 1m0s 264h0m0s OrderConsumer 10 10
}

// Your own function on resources that already exist: the main package in
// testdata/shipping is consume.Start with an effect of its own; the idempotency table is an
// existing one keyed on "pk" (a table made by Powertools for AWS Lambda, keyed on "id",
// needs no PartitionKey at all); the queue is imported by ARN.
func ExampleNewIdempotentConsumer_ownFunction() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shipping"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
	})

	shipQueue := queue.ImportProcessingQueue(stack, "Queue", &queue.ExistingProcessingQueueProps{
		QueueName: "shipments", DeadLetterQueueName: "shipments-dlq",
		VisibilityTimeout: 6 * time.Minute, RetentionPeriod: 4 * 24 * time.Hour, MaxReceiveCount: 5,
	})
	idem := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
		TableName: "shipping-idempotency", PartitionKey: "pk",
	})
	shipments := awsdynamodb.Table_FromTableName(stack, jsii.String("Shipments"), jsii.String("shipments"))

	c := consumer.NewIdempotentConsumer(stack, "Shipping", &consumer.IdempotentConsumerProps{
		Queue: shipQueue,
		Table: idem,
		Function: function.Options{
			Entry:       "testdata/shipping", // the directory of your main package
			Environment: map[string]string{"SHIPMENTS_TABLE": "shipments"},
		},
	})
	// What the effect needs beyond the consumer's own grants.
	shipments.GrantWriteData(c.Function())

	vars := assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::Lambda::Function"), nil)
	for _, fn := range *vars {
		env := (*fn)["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
		fmt.Println(env["IDEMPOTENCY_PARTITION_KEY"], env["SHIPMENTS_TABLE"], env["DEAD_LETTER_QUEUE_URL"] != nil)
	}
	// Output: pk shipments true
}
