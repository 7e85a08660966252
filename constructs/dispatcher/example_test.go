package dispatcher_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
)

// reportsQueue adapts a queue of your own to dispatcher.Target (constructs/queue's
// ProcessingQueue already has these methods).
type reportsQueue struct{ q awssqs.IQueue }

func (r reportsQueue) Queue() awssqs.IQueue { return r.q }
func (r reportsQueue) Fifo() bool           { return true }

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
		Queue:    reportsQueue{queue},
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
