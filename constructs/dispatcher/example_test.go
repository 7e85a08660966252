package dispatcher_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
)

// reportsQueue adapts a queue of your own to dispatcher.Target (constructs/queue's
// ProcessingQueue already has these methods).
type reportsQueue struct {
	q    awssqs.IQueue
	fifo bool
}

func (r reportsQueue) Queue() awssqs.IQueue { return r.q }
func (r reportsQueue) Fifo() bool           { return r.fifo }

func ExampleNewScheduledDispatcher() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Reports"), nil)
	queue := awssqs.NewQueue(stack, jsii.String("Queue"), &awssqs.QueueProps{
		Fifo:       jsii.Bool(true),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL: jsii.Bool(true),
	})

	// 02:00 Berlin time on weekdays. Each run's keys name its own scheduled occurrence: a
	// retried or repeated run sends duplicates the consumer discards, while two runs never
	// share a key, also across daylight-saving changes.
	d := dispatcher.NewScheduledDispatcher(stack, "NightlyReports", &dispatcher.ScheduledDispatcherProps{
		Queue:    reportsQueue{queue, true},
		Cron:     "0 2 ? * MON-FRI *",
		TimeZone: "Europe/Berlin",
		Items: []dispatcher.WorkItem{
			{ID: "sales", Group: "tenant-1", Payload: map[string]any{"report": "sales"}},
			{ID: "stock", Group: "tenant-1", Payload: map[string]any{"report": "stock"}},
		},
	})
	fmt.Println(d.JobName(), d.Timeout())
	// d.FailureQueue() and d.ScheduleDeadLetterQueue() are where failures land: alarm on both.
	// Output: NightlyReports 1m0s
}

// Your own function: the main package in testdata/shards is dispatch.Start with an
// ItemSource of its own, so the schedule lists no items. The function gets what its source
// reads on top of the construct's own grants, and the queues the construct creates use the
// stack's customer managed key.
func ExampleNewScheduledDispatcher_ownFunction() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Shards"), nil)
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	queue := awssqs.NewQueue(stack, jsii.String("Queue"), &awssqs.QueueProps{
		Encryption: awssqs.QueueEncryption_KMS, EncryptionMasterKey: key, EnforceSSL: jsii.Bool(true),
	})
	shards := awsdynamodb.Table_FromTableName(stack, jsii.String("ShardTable"), jsii.String("shards"))

	d := dispatcher.NewScheduledDispatcher(stack, "Shards", &dispatcher.ScheduledDispatcherProps{
		Queue:         reportsQueue{queue, false},
		Function:      function.Options{Entry: "testdata/shards", Environment: map[string]string{"SHARDS_TABLE": "shards"}}, // the directory of your main package
		Cron:          "*/15 * * * ? *",
		EncryptionKey: key, // the schedule DLQ and the failure queue
	})
	shards.GrantReadData(d.Function())

	fmt.Println(d.JobName(), *d.Function().Architecture().Name(), d.FailureQueue().EncryptionMasterKey() == key)
	// Output: Shards arm64 true
}
