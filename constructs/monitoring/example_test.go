package monitoring_test

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
)

// Another CDK app watches its pipeline. Any CDK queue, function, table or schedule works,
// including imported ones; here the queues are new and the rest is imported by name.
func ExampleNewPipelineMonitoring() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	dlq := awssqs.NewQueue(stack, jsii.String("OrdersDLQ"), nil)
	orders := awssqs.NewQueue(stack, jsii.String("Orders"), &awssqs.QueueProps{
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	})
	dispatchFailures := awssqs.NewQueue(stack, jsii.String("DispatchFailures"), nil)
	scheduleDLQ := awssqs.NewQueue(stack, jsii.String("ScheduleDLQ"), nil)
	consumer := awslambda.Function_FromFunctionName(stack, jsii.String("Consumer"), jsii.String("orders-consumer"))
	dispatcher := awslambda.Function_FromFunctionName(stack, jsii.String("Dispatcher"), jsii.String("orders-dispatcher"))
	schedule := awsscheduler.Schedule_FromScheduleArn(stack, jsii.String("Nightly"),
		jsii.String("arn:aws:scheduler:eu-west-1:123456789012:schedule/default/orders-nightly"))
	table := awsdynamodb.Table_FromTableName(stack, jsii.String("Idempotency"), jsii.String("orders-idempotency"))

	mon := monitoring.NewPipelineMonitoring(stack, "Monitoring", &monitoring.PipelineMonitoringProps{
		AlarmEmails:      []string{"oncall@example.com"},
		OldestMessageAge: 30 * time.Minute,
		NotifyOnOK:       true,
	})
	mon.WatchQueue("Orders", orders, dlq)
	consumerAlarms := mon.WatchConsumer("Orders", consumer, orders)
	mon.WatchDispatcher("Nightly", dispatcher, schedule, scheduleDLQ, dispatchFailures)
	mon.WatchTable("Idempotency", table)

	// The returned alarms are ordinary CDK alarms: compose them, e.g. one page when the
	// consumer is down for either reason.
	down := awscloudwatch.NewCompositeAlarm(stack, jsii.String("OrdersConsumerDown"), &awscloudwatch.CompositeAlarmProps{
		AlarmRule: awscloudwatch.AlarmRule_AnyOf(consumerAlarms.Errors, consumerAlarms.Stalled),
	})
	down.AddAlarmAction(awscloudwatchactions.NewSnsAction(mon.Topic()))

	fmt.Println(len(mon.Alarms()), "alarms notify", *mon.Topic().Node().Id())
	// Output: 16 alarms notify Topic
}

// Pages and tickets go to different people: the pager subscribes to Topic(), the team's
// ticket inbox gets TicketTopic() by email, a Slack channel sees both, and one customer
// managed key encrypts the topics and the undelivered-notifications queue.
func ExamplePipelineMonitoringProps_severities() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)
	key := awskms.NewKey(stack, jsii.String("PipelineKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})

	mon := monitoring.NewPipelineMonitoring(stack, "Monitoring", &monitoring.PipelineMonitoringProps{
		TicketEmails:     []string{"orders-team@example.com"},
		EncryptionKey:    key,
		RunbookURL:       "https://wiki.example.com/orders/runbooks",
		SlackWorkspaceId: "T0123ABCD",
		SlackChannelId:   "C0123ABCD",
	})
	dlq := awssqs.NewQueue(stack, jsii.String("OrdersDLQ"), nil)
	orders := awssqs.NewQueue(stack, jsii.String("Orders"), &awssqs.QueueProps{
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)},
	})
	mon.WatchQueue("Orders", orders, dlq)
	mon.WatchConsumer("Orders", awslambda.Function_FromFunctionName(stack, jsii.String("Consumer"), jsii.String("orders-consumer")), orders)

	// A pager integration (here an HTTPS endpoint) on the paging topic only.
	mon.Topic().AddSubscription(awssnssubscriptions.NewUrlSubscription(jsii.String("https://events.pagerduty.example/integration/abc"), nil))

	fmt.Println(len(mon.PagingAlarms()), "paging and", len(mon.TicketAlarms()), "ticketing alarms")
	// Output: 2 paging and 4 ticketing alarms
}
