package monitoring

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// PipelineMonitoring is the pipeline's alarm topic, dashboard and alarms. Each Watch method
// adds the alarms for one part of the pipeline and one dashboard row, and returns the alarms
// it created (for composite alarms or extra actions). Labels name the dashboard row and the
// alarms' construct ids: letters, digits, "-" and "_", up to 64, unique per Watch method.
// A Watch method panics with a *validate.Error on a bad label or a nil resource, as the
// constructor does on bad props.
type PipelineMonitoring interface {
	constructs.IConstruct

	// WatchQueue alarms on a source queue and its dead-letter queue: any message in the DLQ
	// (immediate), the oldest message older than OldestMessageAge, and a backlog of at least
	// QueueDepth visible messages for BacklogEvaluationPeriods.
	WatchQueue(label string, source, deadLetter awssqs.IQueue) QueueAlarms

	// WatchConsumer alarms on a consumer function fed by source: function errors, throttles,
	// and a stalled consumer (messages on source and none deleted for StalledConsumerPeriods).
	// Its dashboard row also shows the consumer's record outcomes (Processed, Duplicate,
	// InFlightElsewhere, Failed, LockTakenOver, InvalidInput, DeadLettered from
	// MetricsNamespace, with Service = the function's name).
	WatchConsumer(label string, fn awslambda.IFunction, source awssqs.IQueue) ConsumerAlarms

	// WatchDispatcher alarms on a scheduled dispatcher: function errors and throttles, the
	// schedule's target errors, dropped invocations and failed DLQ deliveries, and any
	// message in the schedule's DLQ or in the function's on-failure destination queue.
	//
	// EventBridge Scheduler publishes its metrics per schedule group (dimension
	// ScheduleGroup; "default" when the schedule has no group), so these alarms cover every
	// schedule in that group: give each dispatcher's schedule its own group to tell them apart.
	WatchDispatcher(label string, fn awslambda.IFunction, schedule awsscheduler.ISchedule, scheduleDeadLetter, failureQueue awssqs.IQueue) DispatcherAlarms

	// WatchTable alarms on the idempotency table: read throttles, write throttles and system
	// errors. UserErrors and ConditionalCheckFailedRequests are charted, not alarmed: every
	// duplicate message and every lock held elsewhere is a conditional check failure by design.
	WatchTable(label string, table awsdynamodb.ITable) TableAlarms

	// Topic is the SNS topic every alarm notifies.
	Topic() awssns.ITopic
	// Dashboard is the CloudWatch dashboard, one row per Watch call.
	Dashboard() awscloudwatch.Dashboard
	// Alarms are every alarm created so far, in creation order.
	Alarms() []awscloudwatch.IAlarm
}

// QueueAlarms are the alarms WatchQueue creates.
type QueueAlarms struct {
	DeadLetterMessages awscloudwatch.Alarm // DLQ ApproximateNumberOfMessagesVisible >= 1
	OldestMessage      awscloudwatch.Alarm // source ApproximateAgeOfOldestMessage >= OldestMessageAge
	Backlog            awscloudwatch.Alarm // source ApproximateNumberOfMessagesVisible >= QueueDepth
}

// ConsumerAlarms are the alarms WatchConsumer creates.
type ConsumerAlarms struct {
	Errors    awscloudwatch.Alarm // function Errors >= 1
	Throttles awscloudwatch.Alarm // function Throttles >= 1
	Stalled   awscloudwatch.Alarm // messages on the source queue while none are deleted
}

// DispatcherAlarms are the alarms WatchDispatcher creates.
type DispatcherAlarms struct {
	Errors                   awscloudwatch.Alarm // function Errors >= 1
	Throttles                awscloudwatch.Alarm // function Throttles >= 1
	ScheduleTargetErrors     awscloudwatch.Alarm // AWS/Scheduler TargetErrorCount >= 1
	ScheduleDropped          awscloudwatch.Alarm // AWS/Scheduler InvocationDroppedCount >= 1
	ScheduleDeadLetterFailed awscloudwatch.Alarm // AWS/Scheduler InvocationsFailedToBeSentToDeadLetterCount >= 1
	ScheduleDeadLetter       awscloudwatch.Alarm // schedule DLQ ApproximateNumberOfMessagesVisible >= 1
	FailureDestination       awscloudwatch.Alarm // on-failure queue ApproximateNumberOfMessagesVisible >= 1
}

// TableAlarms are the alarms WatchTable creates.
type TableAlarms struct {
	ReadThrottles  awscloudwatch.Alarm // ReadThrottleEvents >= 1
	WriteThrottles awscloudwatch.Alarm // WriteThrottleEvents >= 1
	SystemErrors   awscloudwatch.Alarm // SystemErrors (GetItem+PutItem+UpdateItem+DeleteItem) >= 1
}

type pipelineMonitoring struct {
	constructs.Construct
	s         settings
	topic     awssns.ITopic
	action    awscloudwatch.IAlarmAction
	dashboard awscloudwatch.Dashboard
	alarms    []awscloudwatch.IAlarm
	labels    map[string]bool // kind + "/" + label
}

const constructKind = "PipelineMonitoring"

// NewPipelineMonitoring creates the alarm topic (unless props.Topic is given), its email
// subscriptions (with a dead-letter queue for undeliverable notifications) and the dashboard
// with its "Alarm notifications" row; the Watch methods add alarms and rows. props may be
// nil. It panics with a *validate.Error listing every invalid prop.
func NewPipelineMonitoring(scope constructs.Construct, id string, props *PipelineMonitoringProps) PipelineMonitoring {
	s := withDefaults(props)
	problems := validate.NewIn(constructKind, scope, id)
	s.validate(problems)
	problems.Check()

	// Children get the embedded jsii Construct as their scope, never the Go wrapper m: jsii
	// knows only the former.
	this := constructs.NewConstruct(scope, jsii.String(id))
	m := &pipelineMonitoring{Construct: this, s: s, labels: map[string]bool{}}
	m.topic = s.topic
	if m.topic == nil {
		m.topic = newAlarmTopic(this)
	}
	var undelivered awssqs.IQueue
	if len(s.emails) > 0 {
		undelivered = newUndeliveredQueue(this)
	}
	for _, e := range s.emails {
		m.topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(e), &awssnssubscriptions.EmailSubscriptionProps{
			DeadLetterQueue: undelivered,
		}))
	}
	m.action = awscloudwatchactions.NewSnsAction(m.topic)

	var name *string
	if s.dashboardName != "" {
		name = jsii.String(s.dashboardName)
	}
	m.dashboard = awscloudwatch.NewDashboard(this, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   name,
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	m.notificationRow(undelivered)
	return m
}

// newUndeliveredQueue keeps alarm notifications SNS could not deliver to a subscription (the
// subscription's redrive policy), for 14 days: the record of which alerts nobody received.
// It is charted, not alarmed: an alarm about the alarm topic would notify that same topic.
// SSE-SQS rather than a KMS key: SNS can write to it with the queue policy CDK adds alone.
func newUndeliveredQueue(scope constructs.Construct) awssqs.IQueue {
	q := awssqs.NewQueue(scope, jsii.String("UndeliveredNotifications"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{
		{
			Id:     jsii.String("AwsSolutions-SQS3"),
			Reason: jsii.String("This queue is itself a dead-letter queue (the redrive target of the alarm topic's email subscriptions); cdk-nag recognizes only SQS-to-SQS redrive."),
		},
		{
			Id:     jsii.String("Serverless-SQSRedrivePolicy"),
			Reason: jsii.String("This queue is itself a dead-letter queue (SNS subscription redrive target) and has no consumer: a redrive policy on it would need a DLQ for the DLQ."),
		},
	}, jsii.Bool(false))
	checkov.Add(q, checkov.QueueSQSManagedEncryption)
	return q
}

// notificationRow is the dashboard's first row: is the alarm topic delivering?
func (m *pipelineMonitoring) notificationRow(undelivered awssqs.IQueue) {
	p := m.s.period
	widgets := []awscloudwatch.IWidget{
		header(fmt.Sprintf("### Alarm notifications\nTopic `%s`", *m.topic.TopicName())),
		graph("Notifications", []awscloudwatch.IMetric{
			m.topic.MetricNumberOfMessagesPublished(metricOpts(p, "Sum", "published")),
			m.topic.MetricNumberOfNotificationsDelivered(metricOpts(p, "Sum", "delivered")),
			m.topic.MetricNumberOfNotificationsFailed(metricOpts(p, "Sum", "failed")),
		}, nil),
	}
	if undelivered != nil {
		widgets = append(widgets, graph("Undelivered notifications", []awscloudwatch.IMetric{
			undelivered.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "in the subscriptions' DLQ")),
		}, nil))
	}
	m.dashboard.AddWidgets(widgets...)
}

// newAlarmTopic is the secure default topic. CloudWatch alarms publish as the service
// principal cloudwatch.amazonaws.com, so both the key policy and the topic policy name it:
// the AWS managed key alias/aws/sns has no such grant and cannot be given one.
func newAlarmTopic(scope constructs.Construct) awssns.ITopic {
	stack := awscdk.Stack_Of(scope)
	cloudwatch := awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)

	key := awskms.NewKey(scope, jsii.String("TopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Encrypts the pipeline alarm topic; CloudWatch alarms use it to publish."),
		EnableKeyRotation: jsii.Bool(true),
	})
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchAlarmsToUseTheKey"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
	}), nil)

	topic := awssns.NewTopic(scope, jsii.String("Topic"), &awssns.TopicProps{
		MasterKey:  key,
		EnforceSSL: jsii.Bool(true),
	})
	// EnforceSSL gives the topic an explicit policy, which replaces SNS's default owner-only
	// policy: CloudWatch needs its own grant, limited to this account's alarms in this Region
	// (the confused-deputy guard CloudWatch documents for alarm topics).
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchAlarmsToPublish"),
		Principals: &[]awsiam.IPrincipal{cloudwatch},
		Actions:    jsii.Strings("sns:Publish"),
		Resources:  &[]*string{topic.TopicArn()},
		Conditions: &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike": map[string]any{"aws:SourceArn": awscdk.Fn_Join(jsii.String(""), &[]*string{
				jsii.String("arn:"), stack.Partition(), jsii.String(":cloudwatch:"), stack.Region(),
				jsii.String(":"), stack.Account(), jsii.String(":alarm:*"),
			})},
		},
	}))
	return topic
}

func (m *pipelineMonitoring) Topic() awssns.ITopic               { return m.topic }
func (m *pipelineMonitoring) Dashboard() awscloudwatch.Dashboard { return m.dashboard }
func (m *pipelineMonitoring) Alarms() []awscloudwatch.IAlarm {
	return append([]awscloudwatch.IAlarm(nil), m.alarms...)
}

// required names a Watch argument that must not be nil.
type required struct {
	name  string
	isNil bool
}

// begin validates a Watch call (label and required arguments; all problems at once) and
// returns the scope its alarms live in. The scope id is kind + label, so equal labels of
// different kinds ("Orders" queue and "Orders" consumer) never collide, and no label can
// collide with the construct's own children (Topic, TopicKey, Dashboard).
func (m *pipelineMonitoring) begin(kind, label string, args ...required) constructs.Construct {
	method := "Watch" + kind
	p := validate.New(constructKind, *m.Node().Path())
	switch {
	case !labelRe.MatchString(label):
		p.Add(method+" label", fmt.Sprintf("%q", label), `use 1-64 characters from A-Z, a-z, 0-9, "-" and "_"`)
	case m.labels[kind+"/"+label]:
		p.Add(method+" label", fmt.Sprintf("%q", label), "use a label not yet given to "+method+" on this construct: it names the dashboard row and the alarms")
	}
	for _, a := range args {
		if a.isNil {
			p.Add(method+" "+a.name, "nil", "pass the resource to watch (an imported one works: FromXxxArn)")
		}
	}
	p.Check()
	m.labels[kind+"/"+label] = true
	return constructs.NewConstruct(m.Construct, jsii.String(kind+label))
}

// alarmSpec is one alarm. Every alarm here fires at or above its threshold and notifies the
// topic; the rest differs per alarm and is chosen where the alarm is defined.
type alarmSpec struct {
	id          string
	metric      awscloudwatch.IMetric
	threshold   float64
	periods     int // evaluation periods; all of them must breach (N of N)
	missingData awscloudwatch.TreatMissingData
	description string
}

func (m *pipelineMonitoring) alarm(scope constructs.Construct, a alarmSpec) awscloudwatch.Alarm {
	alarm := awscloudwatch.NewAlarm(scope, jsii.String(a.id), &awscloudwatch.AlarmProps{
		Metric:             a.metric,
		Threshold:          jsii.Number(a.threshold),
		EvaluationPeriods:  jsii.Number(a.periods),
		DatapointsToAlarm:  jsii.Number(a.periods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   a.missingData,
		AlarmDescription:   jsii.String(a.description),
	})
	alarm.AddAlarmAction(m.action)
	if m.s.notifyOnOK {
		alarm.AddOkAction(m.action)
	}
	m.alarms = append(m.alarms, alarm)
	return alarm
}

// metricOpts is the one place periods and statistics become jsii values. label is for
// dashboards only: an alarm's metric has none, so CloudFormation gets the plain
// MetricName/Namespace/Statistic form instead of a Metrics array.
func metricOpts(period time.Duration, statistic, label string) *awscloudwatch.MetricOptions {
	o := &awscloudwatch.MetricOptions{
		Period:    cdkDuration(period),
		Statistic: jsii.String(statistic),
	}
	if label != "" {
		o.Label = jsii.String(label)
	}
	return o
}

// labelled is metric with a dashboard legend.
func labelled(metric awscloudwatch.Metric, label string) awscloudwatch.IMetric {
	return metric.With(&awscloudwatch.MetricOptions{Label: jsii.String(label)})
}

func cdkDuration(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

// span renders periods x period for a description ("15m", "1h").
func span(periods int, period time.Duration) string {
	return shortDuration(time.Duration(periods) * period)
}

func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Dashboard layout: rows are 24 units wide; a row wraps when its widgets are wider.
const (
	widgetWidth  = 6
	widgetHeight = 6
)

func header(markdown string) awscloudwatch.IWidget {
	return awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String(markdown),
		Width:    jsii.Number(24),
		Height:   jsii.Number(2),
	})
}

func graph(title string, left, right []awscloudwatch.IMetric) awscloudwatch.IWidget {
	props := &awscloudwatch.GraphWidgetProps{
		Title:  jsii.String(title),
		Width:  jsii.Number(widgetWidth),
		Height: jsii.Number(widgetHeight),
		Left:   &left,
	}
	if len(right) > 0 {
		props.Right = &right
	}
	return awscloudwatch.NewGraphWidget(props)
}

func alarmStatus(title string, alarms ...awscloudwatch.Alarm) awscloudwatch.IWidget {
	refs := make([]interfacesawscloudwatch.IAlarmRef, len(alarms))
	for i, a := range alarms {
		refs[i] = a
	}
	return awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title:  jsii.String(title),
		Alarms: &refs,
		Width:  jsii.Number(widgetWidth),
		Height: jsii.Number(widgetHeight),
	})
}
