// Package heartbeat provides Heartbeat: an EventBridge Scheduler schedule that sends a probe
// message to a processing queue every Every, so that a pipeline with no traffic still proves,
// every few minutes, that it works end to end. With monitoring.WatchHeartbeat beside it, a
// pipeline that silently broke (a lost KMS grant, a disabled event source mapping, a key
// policy or role edited by hand, a consumer that cannot reach its table) pages within a few
// periods, at 3 a.m. with zero traffic, not in the morning when the first batch fails.
//
//	hb := heartbeat.NewHeartbeat(stack, "Heartbeat", &heartbeat.HeartbeatProps{Queue: q})
//	mon.WatchHeartbeat("Orders", consumer.Function(), hb)
//
// The pipeline construct does both with PipelineProps.Heartbeat.
//
// # What a heartbeat is
//
// Scheduler calls SQS SendMessage itself (a universal target, arn:aws:scheduler:::aws-sdk:sqs:sendMessage)
// with the message attribute PipelineProbe = "heartbeat-<scheduled time>", the probe the
// consumer knows (functions/contract, AttrProbe): it acquires and completes the idempotency
// record "pipelinectl-probe-heartbeat-<scheduled time>" with a no-op instead of the business
// effect and counts ProbeCompleted. A retried send of the same occurrence is a duplicate
// there (and, on a FIFO queue, dropped by SQS deduplication within 5 minutes), so each
// occurrence completes once. The probe's record expires with the consumer's RecordTTL like
// any other.
//
// It proves: Scheduler's role can send to the queue and use its key, the event source mapping
// is enabled and the consumer can receive and decrypt, the function starts, and its role can
// write the table and use the table's key. It does not prove the dispatcher (its own alarms
// watch its schedule runs) or the business effect (a probe runs none).
//
// # Cost
//
// At the default 5 minutes, 8,760 heartbeats a month: as many Scheduler invocations (inside
// the 14 million a month free tier, else $0.01), about 26,000 SQS requests ($0.01), 8,760
// Lambda invocations of a few milliseconds (< $0.01), about 17,500 DynamoDB write request
// units ($0.01 on demand), the custom metric ProbeCompleted ($0.30) and its alarm ($0.10).
// On a pipeline with no other traffic, each probe's invocation also publishes the consumer's
// seven counters, as 0 ($2.10), which traffic publishes anyway. In all, at us-east-1 prices,
// about $2.55 a month a pipeline at 5 minutes on an otherwise idle pipeline, $0.45 on one
// with traffic (test/bench/cost holds the figures to its model). A longer Every lowers the
// small part; above an hour it lowers the metrics' part too, since CloudWatch bills a metric
// by the hours it is published in.
package heartbeat

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
	"github.com/idempotent-sqs/pipeline/constructs/internal/scheduling"
	"github.com/idempotent-sqs/pipeline/constructs/internal/sqsgrant"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// Defaults and limits of HeartbeatProps.
const (
	// DefaultEvery is how often a heartbeat is sent by default.
	DefaultEvery = 5 * time.Minute
	// MinEvery and MaxEvery bound Every: Scheduler's rate is in whole minutes, and the
	// alarm's two periods of Every must fit in CloudWatch's one day of evaluation.
	MinEvery = time.Minute
	MaxEvery = 12 * time.Hour
	// RetryAttempts is how often Scheduler retries a send SQS refused. A heartbeat that
	// still fails is not kept anywhere (it would be stale by the time anyone read it): its
	// missing completion is what the alarm reports.
	RetryAttempts = 2
)

// ProbePrefix starts the probe id of every heartbeat; the scheduled time follows it.
const ProbePrefix = "heartbeat-"

// FifoGroup is the message group of heartbeats on a FIFO queue: their own, so a heartbeat
// never waits behind, or holds up, a business group.
const FifoGroup = "pipelinectl-heartbeat"

// targetService and targetAction are the universal target's service and action (camelCase, as the
// Scheduler API names it).
const (
	targetService = "sqs"
	targetAction  = "sendMessage"
)

// HeartbeatProps configure a Heartbeat. Queue is required.
type HeartbeatProps struct {
	// Queue is the processing queue the heartbeat sends to: the queue the consumer reads.
	Queue queue.ProcessingQueue
	// Every is how often a heartbeat is sent, in whole minutes from 1m to 12h. The alarm
	// (monitoring.WatchHeartbeat) fires when no heartbeat completed in two periods of Every
	// in a row, so it pages within about three periods of the breakage. It cannot be a
	// token. Default DefaultEvery (5m).
	Every time.Duration
	// ScheduleGroup is the schedule group to create the schedule in. Default: a group of its
	// own, which keeps Scheduler's per-group metrics of the dispatcher's group free of
	// heartbeats.
	ScheduleGroup awsscheduler.IScheduleGroup
	// Disabled creates the schedule disabled (and the alarm then pages: use it only with
	// the alarm's actions off). Default false.
	Disabled bool
}

// Heartbeat is the schedule that sends a probe to a queue every Every, and its role.
type Heartbeat interface {
	constructs.IConstruct
	// Schedule is the EventBridge Scheduler schedule.
	Schedule() awsscheduler.Schedule
	// ScheduleGroup is the schedule's group: its own, or the one given.
	ScheduleGroup() awsscheduler.IScheduleGroup
	// Role is the role Scheduler assumes to send to the queue.
	Role() awsiam.Role
	// Every is how often a heartbeat is sent.
	Every() time.Duration
	// Queue is the queue the heartbeat sends to.
	Queue() queue.ProcessingQueue
}

type heartbeat struct {
	constructs.Construct
	schedule awsscheduler.Schedule
	group    awsscheduler.IScheduleGroup
	role     awsiam.Role
	every    time.Duration
	queue    queue.ProcessingQueue
}

func (h *heartbeat) Schedule() awsscheduler.Schedule            { return h.schedule }
func (h *heartbeat) ScheduleGroup() awsscheduler.IScheduleGroup { return h.group }
func (h *heartbeat) Role() awsiam.Role                          { return h.role }
func (h *heartbeat) Every() time.Duration                       { return h.every }
func (h *heartbeat) Queue() queue.ProcessingQueue               { return h.queue }

func check(p *validate.Problems, props *HeartbeatProps) {
	if props.Queue == nil {
		p.Add("Queue", "nil", "pass the processing queue the consumer reads (e.g. a queue.ProcessingQueue)")
	}
	every := Every(props.Every)
	switch {
	case every < MinEvery || every > MaxEvery:
		p.Add("Every", every, fmt.Sprintf("use whole minutes from %v to %v (0 for the default %v)", MinEvery, MaxEvery, DefaultEvery))
	case every%time.Minute != 0:
		p.Add("Every", every, "use whole minutes: Scheduler's rate expression counts minutes (e.g. 5m)")
	}
}

// Every is the interval props.Every gives: DefaultEvery for 0.
func Every(every time.Duration) time.Duration {
	if every == 0 {
		return DefaultEvery
	}
	return every
}

// NewHeartbeat builds the heartbeat's schedule group (unless one is given), role and schedule.
// It panics with a *validate.Error listing every problem with props (cdk synth reports it),
// before creating anything.
func NewHeartbeat(scope constructs.Construct, id string, props *HeartbeatProps) Heartbeat {
	if props == nil {
		props = &HeartbeatProps{}
	}
	p := validate.NewIn("Heartbeat", scope, id)
	check(p, props)
	p.Check()

	h := &heartbeat{every: Every(props.Every), queue: props.Queue}
	constructs.NewConstruct_Override(h, scope, jsii.String(id))
	var ownGroup awsscheduler.ScheduleGroup
	h.group, ownGroup = scheduling.Group(h, props.ScheduleGroup)
	h.role = scheduling.Role(h, "Role", "EventBridge Scheduler role of the heartbeat "+*h.Node().Path(), h.group)
	q := props.Queue.Queue()
	// SendMessage on this queue, and the key use SQS needs to encrypt what it sends.
	sqsgrant.Send(q, q.EncryptionMasterKey(), h.role)

	minutes := int(h.every / time.Minute)
	unit := "minutes"
	if minutes == 1 {
		unit = "minute"
	}
	h.schedule = awsscheduler.NewSchedule(h, jsii.String("Schedule"), &awsscheduler.ScheduleProps{
		Schedule: awsscheduler.ScheduleExpression_Expression(jsii.String(fmt.Sprintf("rate(%d %s)", minutes, unit)), nil),
		Target: awsschedulertargets.NewUniversal(&awsschedulertargets.UniversalTargetProps{
			Service: jsii.String(targetService),
			Action:  jsii.String(targetAction),
			Input:   awsscheduler.ScheduleTargetInput_FromObject(sendMessageInput(*q.QueueUrl(), props.Queue.Fifo())),
			PolicyStatements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings("sqs:SendMessage"),
				Resources: jsii.Strings(*q.QueueArn()),
			})},
			RetryAttempts: jsii.Number(RetryAttempts),
			// A heartbeat later than its period is worth nothing: the next one is due.
			MaxEventAge: awscdk.Duration_Seconds(jsii.Number(max(60, h.every.Seconds()))),
			Role:        h.role,
		}),
		ScheduleGroup: h.group,
		TimeWindow:    awsscheduler.TimeWindow_Off(),
		Enabled:       jsii.Bool(!props.Disabled),
		Description:   jsii.String(fmt.Sprintf("Sends a heartbeat probe every %d %s to the queue the consumer reads (%s)", minutes, unit, *h.Node().Path())),
	})
	if ownGroup != nil {
		// The schedule names its group by a literal name, which implies no order.
		h.schedule.Node().AddDependency(ownGroup)
	}
	nag.SuppressRolePolicy(h.role, "the heartbeat role's policy is generated from the grants above (sqs:SendMessage on the one queue, "+
		"and kms:GenerateDataKey/kms:Decrypt on its key through SQS only) and belongs to this role alone",
		nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	return h
}

// sendMessageInput is the SendMessage request Scheduler makes, in the API's own field names,
// with the scheduled time filled in by Scheduler. Each occurrence's body and probe id are the
// same on every retry, so a retried send is a duplicate for the consumer (and, on FIFO, for
// SQS deduplication).
func sendMessageInput(queueURL string, fifo bool) map[string]any {
	at := *awsscheduler.ContextAttribute_ScheduledTime()
	id := ProbePrefix + at
	// Written out, not marshalled: json.Marshal would escape the placeholder's < and >,
	// and Scheduler would no longer see it.
	in := map[string]any{
		"QueueUrl":    queueURL,
		"MessageBody": contract.ProbeBody(id, "heartbeat"),
		"MessageAttributes": map[string]any{
			contract.AttrProbe: map[string]any{"DataType": "String", "StringValue": id},
		},
	}
	if fifo {
		in["MessageGroupId"] = FifoGroup
		in["MessageDeduplicationId"] = id
	}
	return in
}
