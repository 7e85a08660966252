package monitoring

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awschatbot"
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

// PipelineMonitoring is the pipeline's alarm topics, dashboard and alarms. Each Watch method
// adds the alarms for one part of the pipeline and one dashboard row, and returns the alarms
// it created (for composite alarms or extra actions). Labels name the dashboard row and the
// alarms' construct ids: letters, digits, "-" and "_", up to 64, unique per Watch method.
// A Watch method panics with a *validate.Error on a bad label or a nil resource, as the
// constructor does on bad props.
//
// Watching is idempotent per app: a Watch call for the same resources as an earlier call of
// the same method, on this construct or on another PipelineMonitoring of the same app, adds
// no alarms and no dashboard row and returns the earlier call's alarms (which notify the
// topics of the construct that made them). Resources imported by ARN are the same resource
// when their ARNs are equal; others when they are the same construct. So pipelines that
// share a table can each watch it, and it is watched once.
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
	// MetricsNamespace, with Service = the function's name) and, when fn is a function of
	// this app whose event source mapping from source publishes its metrics (MetricsConfig
	// EventCount, the consumer construct's default; add the source before watching), what
	// the mapping polled, invoked, failed to invoke, deleted and filtered out.
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

	// WatchHeartbeat alarms when the consumer fn completed no heartbeat probe (ProbeCompleted
	// from MetricsNamespace, with Service = the function's name) in two periods of every in a
	// row; missing data is breaching, so a pipeline that stopped working pages with zero
	// traffic. schedule is the heartbeat's schedule (constructs/heartbeat), which sends a
	// probe to fn's queue every every (whole minutes, 1m to 12h). The alarm pages.
	//
	// A new alarm has no data until the first heartbeat completes, up to every after the
	// deploy, and may go to ALARM (and page once) meanwhile: `pipelinectl verify` right
	// after the deploy completes a probe at once.
	WatchHeartbeat(label string, fn awslambda.IFunction, schedule awsscheduler.ISchedule, every time.Duration) HeartbeatAlarms

	// Topic is the paging topic: the alarms that mean lost or stuck work notify it.
	Topic() awssns.ITopic
	// TicketTopic is the ticketing topic: the alarms that mean degraded but self-healing
	// work notify it. It is Topic() when props.Topic was given without props.TicketTopic.
	TicketTopic() awssns.ITopic
	// Unhealthy is the composite "pipeline unhealthy" alarm: in ALARM while any paging alarm
	// of this construct is. It has no actions of its own (each paging alarm already pages):
	// use it as the pipeline's one health signal, e.g. for a deployment's rollback alarms,
	// or add an action to it and page from it instead.
	Unhealthy() awscloudwatch.CompositeAlarm
	// SlackChannel is the AWS Chatbot Slack channel configuration subscribed to both topics,
	// or nil without SlackWorkspaceId and SlackChannelId.
	SlackChannel() awschatbot.SlackChannelConfiguration
	// Dashboard is the CloudWatch dashboard, one row per Watch call.
	Dashboard() awscloudwatch.Dashboard
	// Alarms are every alarm this construct created so far, in creation order (the
	// composite Unhealthy excluded). A Watch call that returned another call's alarms added
	// none.
	Alarms() []awscloudwatch.IAlarm
	// PagingAlarms and TicketAlarms are Alarms split by severity.
	PagingAlarms() []awscloudwatch.IAlarm
	TicketAlarms() []awscloudwatch.IAlarm
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

// HeartbeatAlarms are the alarms WatchHeartbeat creates.
type HeartbeatAlarms struct {
	Missing awscloudwatch.Alarm // ProbeCompleted < 1 (or missing) in 2 of 2 periods of the heartbeat's interval
}

// TableAlarms are the alarms WatchTable creates.
type TableAlarms struct {
	ReadThrottles  awscloudwatch.Alarm // ReadThrottleEvents >= 1
	WriteThrottles awscloudwatch.Alarm // WriteThrottleEvents >= 1
	SystemErrors   awscloudwatch.Alarm // SystemErrors (GetItem+PutItem+UpdateItem+DeleteItem) >= 1
}

type pipelineMonitoring struct {
	constructs.Construct
	s                settings
	topic, ticket    awssns.ITopic
	page, ticketing  awscloudwatch.IAlarmAction
	dashboard        awscloudwatch.Dashboard
	unhealthy        awscloudwatch.CompositeAlarm
	slack            awschatbot.SlackChannelConfiguration
	undelivered      awssqs.IQueue
	alarms           []awscloudwatch.IAlarm
	paging, ticketed []awscloudwatch.IAlarm
	labels           map[string]bool // kind + "/" + label
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
	m.topic, m.ticket = s.topic, s.ticketTopic
	var key awskms.IKey
	if m.topic == nil || (m.ticket == nil && s.topic == nil) {
		key = s.key
		if key == nil {
			key = newTopicKey(this)
		} else {
			allowCloudWatch(this, key)
		}
	}
	if m.topic == nil {
		m.topic = newAlarmTopic(this, "Topic", key)
	}
	if m.ticket == nil {
		if s.topic != nil {
			m.ticket = s.topic
		} else {
			m.ticket = newAlarmTopic(this, "TicketTopic", key)
		}
	}
	m.subscribe()
	m.page = awscloudwatchactions.NewSnsAction(m.topic)
	m.ticketing = awscloudwatchactions.NewSnsAction(m.ticket)

	var name *string
	if s.dashboardName != "" {
		name = jsii.String(s.dashboardName)
	}
	m.dashboard = awscloudwatch.NewDashboard(this, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   name,
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	m.unhealthy = m.newUnhealthy()
	if s.slackWorkspace != "" && s.slackChannel != "" {
		m.slack = m.newSlackChannel()
	}
	m.notificationRow()
	return m
}

// subscribe adds the email subscriptions: AlarmEmails to both topics, TicketEmails to the
// ticketing one, all with one dead-letter queue for what SNS could not deliver.
func (m *pipelineMonitoring) subscribe() {
	type sub struct {
		topic awssns.ITopic
		email string
	}
	var subs []sub
	for _, e := range m.s.emails {
		subs = append(subs, sub{m.topic, e})
		if m.ticket != m.topic {
			subs = append(subs, sub{m.ticket, e})
		}
	}
	for _, e := range m.s.ticketEmails {
		subs = append(subs, sub{m.ticket, e})
	}
	if len(subs) == 0 {
		return
	}
	m.undelivered = newUndeliveredQueue(m.Construct, m.s.key)
	for _, x := range subs {
		x.topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(x.email), &awssnssubscriptions.EmailSubscriptionProps{
			DeadLetterQueue: m.undelivered,
		}))
	}
}

// newUnhealthy is the composite alarm over every paging alarm. Its rule is rendered at
// synthesis, so it covers the paging alarms of Watch calls made after the constructor;
// with none it is FALSE (always OK). It has no actions: each paging alarm pages already.
func (m *pipelineMonitoring) newUnhealthy() awscloudwatch.CompositeAlarm {
	rule := awscdk.Lazy_String(&unhealthyRule{m}, nil)
	desc := fmt.Sprintf("[%s] At least one paging alarm of this pipeline monitoring is in ALARM: work is lost or stuck. "+
		"The alarms in ALARM are listed in this alarm's history and on the dashboard; open the runbook section of each.", *m.Node().Id())
	alarm := awscloudwatch.NewCompositeAlarm(m.Construct, jsii.String("Unhealthy"), &awscloudwatch.CompositeAlarmProps{
		AlarmRule:        awscloudwatch.AlarmRule_FromString(rule),
		AlarmDescription: jsii.String(m.describe(desc, sevPage, anchorUnhealthy)),
	})
	m.Node().AddValidation(&unhealthyRule{m})
	return alarm
}

// maxUnhealthyAlarms bounds the paging alarms one composite rule covers. CloudWatch caps a
// rule at 10240 characters, and each alarm takes ALARM("<alarm ARN>") OR : about 60
// characters and the alarm's name, which CloudFormation generates from the stack name and
// the construct path (up to 255 characters). 40 leaves room for names of up to 190.
const maxUnhealthyAlarms = 40

// unhealthyRule renders the composite rule when the template is synthesized, and refuses
// to synthesize a rule CloudWatch could reject.
type unhealthyRule struct{ m *pipelineMonitoring }

func (r *unhealthyRule) Validate() *[]*string {
	if n := len(r.m.paging); n > maxUnhealthyAlarms {
		return &[]*string{jsii.String(fmt.Sprintf("%s %q: its composite alarm Unhealthy would cover %d paging alarms, over the %d whose rule surely fits CloudWatch's 10240 characters; split the pipelines over several PipelineMonitoring constructs (about 6 paging alarms per pipeline with a dispatcher, 7 with a heartbeat)",
			constructKind, *r.m.Node().Path(), n, maxUnhealthyAlarms))}
	}
	return &[]*string{}
}

func (r *unhealthyRule) Produce() *string {
	if len(r.m.paging) == 0 {
		return awscloudwatch.AlarmRule_FromBoolean(jsii.Bool(false)).RenderAlarmRule()
	}
	rules := make([]awscloudwatch.IAlarmRule, len(r.m.paging))
	for i, a := range r.m.paging {
		rules[i] = a
	}
	return awscloudwatch.AlarmRule_AnyOf(rules...).RenderAlarmRule()
}

// newSlackChannel subscribes a Slack channel to both topics through AWS Chatbot. The role
// gets no permissions and the guardrail is read-only: notifications, no changes from chat.
func (m *pipelineMonitoring) newSlackChannel() awschatbot.SlackChannelConfiguration {
	name := jsii.String(m.s.slackName)
	if m.s.slackName == "" {
		// Chatbot configurations are global to the account: the Region keeps one stack
		// deployed to two Regions from claiming one name (15 characters hold any Region).
		unique := awscdk.Names_UniqueResourceName(m.Construct, &awscdk.UniqueResourceNameOptions{
			MaxLength: jsii.Number(128 - 16), Separator: jsii.String("-"),
		})
		name = awscdk.Fn_Join(jsii.String("-"), &[]*string{unique, awscdk.Stack_Of(m.Construct).Region()})
	}
	topics := []awssns.ITopic{m.topic}
	if m.ticket != m.topic {
		topics = append(topics, m.ticket)
	}
	return awschatbot.NewSlackChannelConfiguration(m.Construct, jsii.String("Slack"), &awschatbot.SlackChannelConfigurationProps{
		SlackChannelConfigurationName: name,
		SlackWorkspaceId:              jsii.String(m.s.slackWorkspace),
		SlackChannelId:                jsii.String(m.s.slackChannel),
		NotificationTopics:            &topics,
		GuardrailPolicies: &[]awsiam.IManagedPolicy{
			awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String("CloudWatchReadOnlyAccess")),
		},
	})
}

// newUndeliveredQueue keeps alarm notifications SNS could not deliver to a subscription (the
// subscription's redrive policy), for 14 days: the record of which alerts nobody received.
// It is charted, not alarmed: an alarm about the alarm topic would notify that same topic.
// Without a key it uses SSE-SQS, which SNS can write to with the queue policy CDK adds alone;
// with one, the key policy must let SNS use the key (granted here when CDK can).
func newUndeliveredQueue(scope constructs.Construct, key awskms.IKey) awssqs.IQueue {
	props := &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	}
	if key != nil {
		props.Encryption = awssqs.QueueEncryption_KMS
		props.EncryptionMasterKey = key
		allowService(scope, key, "AllowSNSToUseTheKey", "sns.amazonaws.com",
			"SNS writes the notifications email subscriptions could not deliver to the encrypted undelivered-notifications queue, or they are lost")
	}
	q := awssqs.NewQueue(scope, jsii.String("UndeliveredNotifications"), props)
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
	if key == nil {
		checkov.Add(q, checkov.QueueSQSManagedEncryption)
	}
	return q
}

// notificationRow is the dashboard's first row: the pipeline's health and whether the alarm
// topics deliver.
func (m *pipelineMonitoring) notificationRow() {
	p := m.s.period
	topics := fmt.Sprintf("Paging topic `%s`", *m.topic.TopicName())
	if m.ticket != m.topic {
		topics += fmt.Sprintf(", ticketing topic `%s`", *m.ticket.TopicName())
	}
	widgets := []awscloudwatch.IWidget{
		header("### Alarm notifications\n" + topics),
		awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title:  jsii.String("Pipeline unhealthy (any paging alarm)"),
			Alarms: &[]interfacesawscloudwatch.IAlarmRef{m.unhealthy},
			Width:  jsii.Number(widgetWidth),
			Height: jsii.Number(widgetHeight),
		}),
	}
	for _, t := range []struct {
		name  string
		topic awssns.ITopic
	}{{"Paging notifications", m.topic}, {"Ticketing notifications", m.ticket}} {
		if t.name != "Paging notifications" && m.ticket == m.topic {
			break
		}
		widgets = append(widgets, graph(t.name, []awscloudwatch.IMetric{
			t.topic.MetricNumberOfMessagesPublished(metricOpts(p, "Sum", "published")),
			t.topic.MetricNumberOfNotificationsDelivered(metricOpts(p, "Sum", "delivered")),
			t.topic.MetricNumberOfNotificationsFailed(metricOpts(p, "Sum", "failed")),
		}, nil))
	}
	if m.undelivered != nil {
		widgets = append(widgets, graph("Undelivered notifications", []awscloudwatch.IMetric{
			m.undelivered.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "in the subscriptions' DLQ")),
		}, nil))
	}
	m.dashboard.AddWidgets(widgets...)
}

// newTopicKey is the default topics' key: rotating, and usable by CloudWatch alarms.
func newTopicKey(scope constructs.Construct) awskms.IKey {
	key := awskms.NewKey(scope, jsii.String("TopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Encrypts the pipeline alarm topics; CloudWatch alarms use it to publish."),
		EnableKeyRotation: jsii.Bool(true),
	})
	allowCloudWatch(scope, key)
	return key
}

// allowCloudWatch lets CloudWatch alarms publish to topics encrypted with key. The AWS
// managed key alias/aws/sns has no such grant and cannot be given one.
func allowCloudWatch(scope constructs.IConstruct, key awskms.IKey) {
	allowService(scope, key, "AllowCloudWatchAlarmsToUseTheKey", "cloudwatch.amazonaws.com",
		"CloudWatch alarms publish to the encrypted alarm topics, or no alarm notifies anyone")
}

// WarningImportedKey is the id of the synth warning for an imported EncryptionKey whose key
// policy CDK cannot extend: acknowledge it (awscdk.Annotations_Of(scope).AcknowledgeWarning)
// once the key policy grants what the warning names.
const WarningImportedKey = "@idempotent-sqs/pipeline:imported-key-policy"

// allowService grants a service principal the data key operations an encrypted topic or
// queue needs from it, without conditions, as the CloudWatch and SNS guides show them: who
// may publish to the topic or send to the queue is decided by their resource policies. On an
// imported key CDK cannot change the policy: a synth warning on scope (WarningImportedKey)
// says what the key policy must allow and why. A key shared by several constructs gets each
// statement once: a child construct named after the statement (which adds nothing to the
// template) marks it as made.
func allowService(scope constructs.IConstruct, key awskms.IKey, sid, service, why string) {
	if k, ok := key.(awskms.Key); ok {
		if k.Node().TryFindChild(jsii.String(sid)) != nil {
			return
		}
		constructs.NewConstruct(k, jsii.String(sid))
	}
	added := key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(sid),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(service), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
	}), nil)
	if !*added.StatementAdded {
		awscdk.Annotations_Of(scope).AddWarningV2(jsii.String(WarningImportedKey), jsii.String(fmt.Sprintf(
			"EncryptionKey %s is an imported key, whose key policy CDK cannot change: it must allow %s kms:Decrypt and kms:GenerateDataKey*, because %s. "+
				"Add that statement to the key policy, then acknowledge this warning (Annotations_Of(scope).AcknowledgeWarning(%q, reason))",
			*key.KeyArn(), service, why, WarningImportedKey)))
	}
}

// newAlarmTopic is a secure default topic. CloudWatch alarms publish as the service principal
// cloudwatch.amazonaws.com, so the topic policy names it (the key policy does, through
// allowCloudWatch).
func newAlarmTopic(scope constructs.Construct, id string, key awskms.IKey) awssns.ITopic {
	stack := awscdk.Stack_Of(scope)
	topic := awssns.NewTopic(scope, jsii.String(id), &awssns.TopicProps{
		MasterKey:  key,
		EnforceSSL: jsii.Bool(true),
	})
	// EnforceSSL gives the topic an explicit policy, which replaces SNS's default owner-only
	// policy: CloudWatch needs its own grant, limited to this account's alarms in this Region
	// (the confused-deputy guard CloudWatch documents for alarm topics).
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowCloudWatchAlarmsToPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
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

func (m *pipelineMonitoring) Topic() awssns.ITopic                    { return m.topic }
func (m *pipelineMonitoring) TicketTopic() awssns.ITopic              { return m.ticket }
func (m *pipelineMonitoring) Dashboard() awscloudwatch.Dashboard      { return m.dashboard }
func (m *pipelineMonitoring) Unhealthy() awscloudwatch.CompositeAlarm { return m.unhealthy }
func (m *pipelineMonitoring) SlackChannel() awschatbot.SlackChannelConfiguration {
	return m.slack
}
func (m *pipelineMonitoring) Alarms() []awscloudwatch.IAlarm { return slices.Clone(m.alarms) }
func (m *pipelineMonitoring) PagingAlarms() []awscloudwatch.IAlarm {
	return slices.Clone(m.paging)
}
func (m *pipelineMonitoring) TicketAlarms() []awscloudwatch.IAlarm {
	return slices.Clone(m.ticketed)
}

// required names a Watch argument that must not be nil.
type required struct {
	name  string
	isNil bool
}

// check validates a Watch call's label and required arguments (all problems at once).
func (m *pipelineMonitoring) check(kind, label string, args ...required) {
	method := "Watch" + kind
	p := validate.New(constructKind, *m.Node().Path())
	if !labelRe.MatchString(label) {
		p.Add(method+" label", fmt.Sprintf("%q", label), `use 1-64 characters from A-Z, a-z, 0-9, "-" and "_"`)
	}
	for _, a := range args {
		if a.isNil {
			p.Add(method+" "+a.name, "nil", "pass the resource to watch (an imported one works: FromXxxArn)")
		}
	}
	p.Check()
}

// begin claims label for a Watch call of kind whose resources are not watched yet, and
// returns the scope its alarms live in. The scope id is kind + label, so equal labels of
// different kinds ("Orders" queue and "Orders" consumer) never collide, and no label can
// collide with the construct's own children (Topic, TopicKey, Dashboard).
func (m *pipelineMonitoring) begin(kind, label string) constructs.Construct {
	method := "Watch" + kind
	if m.labels[kind+"/"+label] {
		p := validate.New(constructKind, *m.Node().Path())
		p.Add(method+" label", fmt.Sprintf("%q", label), "use a label not yet given to "+method+" on this construct: it names the dashboard row and the alarms")
		p.Check()
	}
	m.labels[kind+"/"+label] = true
	return constructs.NewConstruct(m.Construct, jsii.String(kind+label))
}

// alarmSpec is one alarm. Every alarm here but the heartbeat's fires at or above its threshold and notifies the
// topic of its severity; the rest differs per alarm and is chosen where the alarm is defined.
type alarmSpec struct {
	id          string
	metric      awscloudwatch.IMetric
	threshold   float64
	below       bool // fires below the threshold instead of at or above it
	periods     int  // evaluation periods; all of them must breach (N of N)
	missingData awscloudwatch.TreatMissingData
	description string
	severity    severity
	runbook     string // the anchor of the alarm's section in the runbooks
}

func (m *pipelineMonitoring) alarm(scope constructs.Construct, a alarmSpec) awscloudwatch.Alarm {
	alarm := awscloudwatch.NewAlarm(scope, jsii.String(a.id), &awscloudwatch.AlarmProps{
		Metric:             a.metric,
		Threshold:          jsii.Number(a.threshold),
		EvaluationPeriods:  jsii.Number(a.periods),
		DatapointsToAlarm:  jsii.Number(a.periods),
		ComparisonOperator: comparison(a.below),
		TreatMissingData:   a.missingData,
		AlarmDescription:   jsii.String(m.describe(a.description, a.severity, a.runbook)),
	})
	m.notify(alarm, a.severity)
	return alarm
}

func comparison(below bool) awscloudwatch.ComparisonOperator {
	if below {
		return awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD
	}
	return awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
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
