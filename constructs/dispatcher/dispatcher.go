// Package dispatcher provides ScheduledDispatcher: an EventBridge Scheduler schedule (cron,
// time zone, no flexible window, retry policy, dead-letter queue) in a schedule group of its
// own, that invokes a dispatcher Lambda function with a fixed list of work items. The
// function is functions/dispatcher (which sends the listed items), bundled from Go source at
// synth, or your own main package built on functions/dispatch. It fans the items out to an
// SQS queue with deterministic idempotency keys derived from the job, the scheduled
// occurrence (the schedule's own scheduled time, in UTC to the minute) and the item id, so a
// repeated or retried invocation sends the same keys and the consumer absorbs the repeats,
// while two occurrences never share a key, also across daylight-saving changes.
//
// Scheduler invokes Lambda asynchronously: its retry policy and DLQ cover only handing the
// event to Lambda. Failures of the function itself, after Lambda's asynchronous retries, go
// to FailureQueue (an on-failure destination). Alarm on both queues (constructs/monitoring
// does). Scheduler publishes its own failure metrics (TargetErrorCount,
// InvocationDroppedCount, ...) per schedule group only, which is why each dispatcher has a
// group of its own: its alarms then fire for its own schedule, never for another's.
//
//	d := dispatcher.NewScheduledDispatcher(stack, "Nightly", &dispatcher.ScheduledDispatcherProps{
//		Queue:    ordersQueue, // e.g. a queue.ProcessingQueue
//		Cron:     "0 2 * * ? *",
//		TimeZone: "Europe/Berlin",
//		Items:    []dispatcher.WorkItem{{ID: "report", Payload: map[string]any{"kind": "daily"}}},
//	})
//
// # Your own function
//
// Where the work items come from is an ItemSource (package functions/dispatch) in a main
// package of your own:
//
//	func main() { dispatch.Start(shards{}) }
//
// Set Function.Entry to that package's directory. The construct stays correct for it: the same
// environment contract (QUEUE_URL, JOB_NAME, DEFAULT_MESSAGE_GROUP_ID, SEND_MAX_ATTEMPTS and
// the tunables), which functions/dispatch reads, the same schedule input and the same grants
// on the queue and the failure queue. Items may then be empty. What your source needs beyond
// that, you add: variables in Function.Environment, permissions on the function itself,
// which is the concrete awslambda.Function:
//
//	shardsTable.GrantReadData(d.Function())
//
// Architecture, Vpc (with VpcSubnets and SecurityGroups), Layers,
// ReservedConcurrentExecutions and MemorySize are fields of Function (function.Options);
// every resource the construct creates is reachable as its concrete L2 type for the rest.
//
// # Your own resources
//
// The queue may be an existing one (queue.ImportProcessingQueue, or any Target), the schedule
// group too (ScheduleGroup, e.g. awsscheduler.ScheduleGroup_FromScheduleGroupName, at the
// price of alarms shared with the group's other schedules), and EncryptionKey an imported
// key.
//
// # Deploy-time values
//
// Cron, TimeZone, JobName and DefaultGroup may be tokens (a CfnParameter's ValueAsString,
// an SSM parameter): validation skips the checks it cannot make, and CloudFormation or
// Scheduler reject a bad value at deploy. Items, Function.Entry and Function.ModuleDir cannot
// be tokens: they are checked and built at synth.
package dispatcher

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/constructs/internal/gofn"
	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
	"github.com/idempotent-sqs/pipeline/constructs/internal/scheduling"
	"github.com/idempotent-sqs/pipeline/constructs/internal/sqsgrant"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/internal/awscron"
)

// Target is the queue the dispatcher sends to. constructs/queue's ProcessingQueue
// satisfies it.
type Target interface {
	Queue() awssqs.IQueue
	Fifo() bool
}

// WorkItem is one unit of work the dispatcher sends on every run of the schedule.
type WorkItem struct {
	// ID identifies the item within the job; the idempotency key derives from job,
	// scheduled occurrence and ID. Required, unique; 1 to 128 letters, digits or . _ - : @ /.
	// Cannot be a token (uniqueness is checked at synth).
	ID string
	// Group is the item's MessageGroupId: on a FIFO queue its message group (the ordering
	// unit, e.g. a tenant), on a standard queue its fair-queue tenant (SQS fair queues: no
	// order, a quiet tenant's messages are not kept waiting behind a noisy one's). Cannot be
	// a token. Default: DefaultGroup on FIFO, none on standard.
	Group string
	// Payload is sent as the message's payload; it must encode as JSON. Default none.
	Payload map[string]any
}

// Defaults and limits, in one place.
const (
	DefaultCron                  = "0 * * * ? *" // hourly, on the hour
	DefaultTimeZone              = "UTC"
	DefaultTimeout               = 60 * time.Second
	DefaultMemorySize            = 256
	DefaultScheduleRetryAttempts = 3
	DefaultScheduleMaxEventAge   = time.Hour
	DefaultAsyncRetryAttempts    = 2
	DefaultAsyncMaxEventAge      = 6 * time.Hour
	DefaultSendMaxAttempts       = contract.DefaultSendMaxAttempts
	// DeadLetterRetention of the schedule DLQ and the failure queue: SQS's maximum, the
	// most time to notice the alarm and redrive.
	DeadLetterRetention = 14 * 24 * time.Hour

	// DefaultPeriod was the default of ScheduledDispatcherProps.Period.
	//
	// Deprecated: Period no longer does anything; see ScheduledDispatcherProps.Period. It
	// will be removed in the next release.
	DefaultPeriod = time.Minute

	// MaxInputBytes caps the rendered schedule input. Neither Scheduler's API model
	// (botocore scheduler 2021-06-30 TargetInput: min 1, no max) nor the CloudFormation
	// schema of AWS::Scheduler::Schedule (Target.Input: minLength 1) states a maximum, and
	// Lambda now accepts 1 MB asynchronous payloads (Invoke API reference). 256 KiB is the
	// conservative bound: the long-standing EventBridge/Lambda asynchronous event size, so
	// the input also fits the on-failure destination record and an SQS message. Larger item
	// lists belong in a store the function reads, not in the schedule.
	MaxInputBytes = 256 * 1024
)

// removedPeriodVar is the dispatcher's former PERIOD variable (see ScheduledDispatcherProps.Period).
const removedPeriodVar = "PERIOD"

// Tunables the construct sets explicitly and Environment may override.
var tunableDefaults = map[string]string{
	contract.EnvMetricsNamespace: "IdempotentSQS",
	contract.EnvLogLevel:         "INFO",
}

// ScheduledDispatcherProps configure a ScheduledDispatcher. Queue and Items are required;
// every other zero value takes the default in its comment.
type ScheduledDispatcherProps struct {
	// Queue the dispatcher sends to. Required.
	Queue Target
	// Items are the work items of every run, in the schedule's input. At least one with the
	// default function, which sends exactly these; optional with your own Function.Entry, whose
	// ItemSource decides (it sees them in dispatch.Run). Cannot hold tokens in ID or Group.
	Items []WorkItem

	// JobName names the job in keys, logs and metrics: 1 to 64 letters, digits, '.', '_'
	// or '-'. May be a token (then unchecked). Default: the construct id.
	JobName string
	// Cron is the schedule in AWS's 6-field form (minutes hours day-of-month month
	// day-of-week year), exactly one of day-of-month and day-of-week "?", without the
	// "cron(...)" wrapper. Checked at synth as Scheduler documents the syntax: each field's
	// range, the ?/L/W/# rules, and at least one date to run on from today. May be a token
	// (then unchecked: the escape hatch for a form the check does not know).
	// Default "0 * * * ? *" (hourly).
	Cron string
	// TimeZone is the IANA time zone the cron is evaluated in. May be a token (then
	// unchecked). Default "UTC".
	TimeZone string
	// Period was the unit the scheduled time was truncated to for the idempotency key.
	//
	// Deprecated: the key is now derived from each scheduled occurrence (the scheduled time
	// in UTC to the minute), which is what the default 1m did. A longer period gave distinct
	// runs one key, and the consumer dropped all but the first as duplicates: with a daily
	// cron and 24h, the two runs around a spring-forward change fall on one UTC day. Remove
	// the field: 0 and 1m are accepted and change nothing, any other value fails
	// validation. It will be removed in the next release.
	Period time.Duration
	// DefaultGroup is the FIFO message group of items without one. FIFO queues only (a
	// standard queue's items carry their tenant each, in Group). May
	// be a token (then unchecked). Default: JobName.
	DefaultGroup string
	// SendMaxAttempts is how often the function tries each entry of SendMessageBatch before
	// failing the invocation. 1 to 10, the function's limit (contract.MaxSendMaxAttempts).
	// Default 5. Cannot be a token.
	SendMaxAttempts int

	// Function is the Lambda function's settings (package function), validated at synth with
	// the dispatcher's own rules on top:
	//   - Entry: your own main package built on functions/dispatch (dispatch.Start with your
	//     ItemSource), which reads the environment and the schedule input this construct
	//     sets; see the package documentation. Checked at synth: a directory without Go
	//     files, a package that is not main, or a consumer main is an error naming the
	//     directory and the fix. Default: functions/dispatcher of this module, which sends
	//     Items.
	//   - Timeout: default 60s.
	//   - Vpc, for an ItemSource that reads private resources: its subnets must still reach
	//     SQS and CloudWatch (NAT gateway or VPC endpoints).
	//   - ReservedConcurrentExecutions: a run is one invocation, more only while Lambda
	//     retries, so 1 or 2 suffice. Default 0 (none reserved).
	//   - Environment overrides the tunables LOG_LEVEL and METRICS_NAMESPACE. Setting a
	//     variable the props own (QUEUE_URL, JOB_NAME, DEFAULT_MESSAGE_GROUP_ID,
	//     SEND_MAX_ATTEMPTS), or PERIOD (no longer supported), is a validation error.
	Function function.Options

	// ScheduleGroup is the EventBridge Scheduler schedule group the schedule is created in.
	// Scheduler's metrics are per group, so alarms on a group shared with other schedules
	// fire for their failures too. It must be in the stack's account and region. Default: a
	// group of the dispatcher's own (removed with it).
	ScheduleGroup awsscheduler.IScheduleGroup
	// EncryptionKey is a customer managed KMS key for the queues the construct creates (the
	// schedule's dead-letter queue and the function's failure queue). The construct grants
	// Scheduler's role and the function's role kms:GenerateDataKey and kms:Decrypt on it,
	// through SQS only. It must be in the stack's region, and an imported key's policy must
	// let IAM policies of this account grant its use (the default key policy does).
	// Default: SQS-managed encryption (SSE-SQS).
	EncryptionKey awskms.IKey

	// ScheduleRetryAttempts is how often Scheduler retries handing the event to Lambda,
	// 0 to 185. nil: default 3 (new(0) turns retries off). Cannot be a token, nor can the
	// three below.
	ScheduleRetryAttempts *int
	// ScheduleMaxEventAge is how long Scheduler keeps retrying, 1m to 24h. Default 1h.
	ScheduleMaxEventAge time.Duration
	// AsyncRetryAttempts is how often Lambda retries a failed invocation, 0 to 2.
	// nil: default 2.
	AsyncRetryAttempts *int
	// AsyncMaxEventAge is how long Lambda keeps an event for retries, 1m to 6h. Default 6h.
	AsyncMaxEventAge time.Duration
	// Disabled creates the schedule in the DISABLED state. Default false (enabled).
	Disabled bool

	// The function options from before Function, each with its meaning and validation there.
	// Each still works; setting one and its Function field to different values is an error.

	// Deprecated: set Function.Entry.
	Entry string
	// Deprecated: set Function.ModuleDir.
	ModuleDir string
	// Deprecated: set Function.Timeout.
	Timeout time.Duration
	// Deprecated: set Function.MemorySize.
	MemorySize int
	// Deprecated: set Function.Architecture.
	Architecture awslambda.Architecture
	// Deprecated: set Function.Environment.
	Environment map[string]string
	// Deprecated: set Function.Layers.
	Layers []awslambda.ILayerVersion
	// Deprecated: set Function.Vpc.
	Vpc awsec2.IVpc
	// Deprecated: set Function.VpcSubnets.
	VpcSubnets *awsec2.SubnetSelection
	// Deprecated: set Function.SecurityGroups.
	SecurityGroups []awsec2.ISecurityGroup
	// Deprecated: set Function.ReservedConcurrentExecutions.
	ReservedConcurrentExecutions int
	// Deprecated: set Function.LogRetention.
	LogRetention awslogs.RetentionDays
	// Deprecated: set Function.LogRemovalPolicy.
	LogRemovalPolicy awscdk.RemovalPolicy
	// Deprecated: set Function.LogGroupEncryptionKey.
	LogGroupEncryptionKey awskms.IKey
	// Deprecated: set Function.DisableTracing.
	DisableTracing bool
}

// ScheduledDispatcher is the schedule, the dispatcher function and their failure queues.
type ScheduledDispatcher interface {
	constructs.IConstruct
	// Function is the dispatcher Lambda function: grant it what your ItemSource needs.
	Function() awslambda.Function
	// Role is the function's execution role.
	Role() awsiam.Role
	// LogGroup is the function's log group.
	LogGroup() awslogs.LogGroup
	// Schedule is the EventBridge Scheduler schedule.
	Schedule() awsscheduler.Schedule
	// ScheduleGroup is the schedule's group: the dispatcher's own, or the one given.
	ScheduleGroup() awsscheduler.IScheduleGroup
	// ScheduleRole is the role Scheduler assumes to invoke the function.
	ScheduleRole() awsiam.Role
	// ScheduleDeadLetterQueue receives events Scheduler could not hand to Lambda.
	ScheduleDeadLetterQueue() awssqs.Queue
	// FailureQueue is the function's on-failure destination: invocations that still failed
	// after Lambda's asynchronous retries. Alarm on it.
	FailureQueue() awssqs.Queue
	// JobName is the job's name in keys, logs and metrics.
	JobName() string
	// Timeout is the function timeout.
	Timeout() time.Duration
}

type scheduledDispatcher struct {
	constructs.Construct
	fn           *gofn.Function
	schedule     awsscheduler.Schedule
	group        awsscheduler.IScheduleGroup
	scheduleRole awsiam.Role
	scheduleDLQ  awssqs.Queue
	failureQueue awssqs.Queue
	s            settings
}

func (d *scheduledDispatcher) Function() awslambda.Function               { return d.fn.Function }
func (d *scheduledDispatcher) Role() awsiam.Role                          { return d.fn.Role }
func (d *scheduledDispatcher) LogGroup() awslogs.LogGroup                 { return d.fn.LogGroup }
func (d *scheduledDispatcher) Schedule() awsscheduler.Schedule            { return d.schedule }
func (d *scheduledDispatcher) ScheduleGroup() awsscheduler.IScheduleGroup { return d.group }
func (d *scheduledDispatcher) ScheduleRole() awsiam.Role                  { return d.scheduleRole }
func (d *scheduledDispatcher) ScheduleDeadLetterQueue() awssqs.Queue      { return d.scheduleDLQ }
func (d *scheduledDispatcher) FailureQueue() awssqs.Queue                 { return d.failureQueue }
func (d *scheduledDispatcher) JobName() string                            { return d.s.jobName }
func (d *scheduledDispatcher) Timeout() time.Duration                     { return d.s.fn.Timeout }

// settings are the props with defaults applied and validated.
type settings struct {
	fn                    gofn.Props
	jobName               string
	cron                  string
	timeZone              string
	input                 map[string]any
	scheduleRetryAttempts int
	scheduleMaxEventAge   time.Duration
}

// NewScheduledDispatcher builds the dispatcher. It panics with a *validate.Error listing
// every problem with props (cdk synth reports it), before creating anything.
func NewScheduledDispatcher(scope constructs.Construct, id string, props *ScheduledDispatcherProps) ScheduledDispatcher {
	if props == nil {
		props = &ScheduledDispatcherProps{}
	}
	s := resolve(scope, id, props)

	// Override registers d itself as the jsii construct, so d can be passed anywhere a
	// construct is expected (Stack.Of, NagSuppressions, as a scope).
	d := &scheduledDispatcher{s: s}
	constructs.NewConstruct_Override(d, scope, jsii.String(id))
	d.scheduleDLQ = deadLetterQueue(d, "ScheduleDeadLetterQueue", props.EncryptionKey,
		"it is the dead-letter queue of the EventBridge Scheduler schedule (Target.DeadLetterConfig); cdk-nag only recognises DLQs named in another queue's redrive policy or a function's DeadLetterConfig")
	d.failureQueue = deadLetterQueue(d, "FailureQueue", props.EncryptionKey,
		"it is the dispatcher function's on-failure destination (EventInvokeConfig), i.e. its dead-letter queue; cdk-nag only recognises DLQs named in another queue's redrive policy or a function's DeadLetterConfig")

	s.fn.OnFailure = &queueDestination{d.failureQueue}
	d.fn = gofn.New(d, s.fn)
	sqsgrant.Send(d.failureQueue, props.EncryptionKey, d.fn.Function, sqsgrant.SendActions...)
	sqsgrant.Send(props.Queue.Queue(), props.Queue.Queue().EncryptionMasterKey(), d.fn.Function, sqsgrant.SendActions...)

	var ownGroup awsscheduler.ScheduleGroup
	d.group, ownGroup = scheduling.Group(d, props.ScheduleGroup)
	targetProps, role := d.targetProps(s)
	d.scheduleRole = role
	d.schedule = awsscheduler.NewSchedule(d, jsii.String("Schedule"), &awsscheduler.ScheduleProps{
		Schedule:      awsscheduler.ScheduleExpression_Expression(jsii.String("cron("+s.cron+")"), awscdk.TimeZone_Of(jsii.String(s.timeZone))),
		Target:        awsschedulertargets.NewLambdaInvoke(d.fn.Function, targetProps),
		ScheduleGroup: d.group,
		TimeWindow:    awsscheduler.TimeWindow_Off(),
		Enabled:       jsii.Bool(!props.Disabled),
		Description:   jsii.String(fmt.Sprintf("Dispatches the %d work items of job %s", len(props.Items), s.jobName)),
	})
	if ownGroup != nil {
		// The schedule names its group by a literal name, which implies no order.
		d.schedule.Node().AddDependency(ownGroup)
	}
	if props.EncryptionKey != nil {
		// The target grants sqs:SendMessage on its DLQ, not the key use an encrypted queue
		// needs.
		sqsgrant.Send(d.scheduleDLQ, props.EncryptionKey, role)
	}
	// After NewSchedule: the target binds (and creates the role's policy) in it, and
	// applyToChildren only reaches children that exist.
	fnID := *awscdk.Stack_Of(d).GetLogicalId(d.fn.Function.Node().DefaultChild().(awscdk.CfnElement))
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("LambdaInvoke grants lambda:InvokeFunction on the dispatcher function and its qualified ARNs (<arn>:*, versions " +
			"and aliases); the wildcard covers qualifiers of this one function only"),
		AppliesTo: &[]any{"Resource::<" + fnID + ".Arn>:*"},
	}}, jsii.Bool(true))
	nag.SuppressRolePolicy(role, gofn.WhyRolePolicy, nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	return d
}

// targetProps builds the schedule target: the input, the retry policy, the DLQ and a role of
// this construct's own (the target's default role is created at stack level, outside the
// construct, where this construct cannot document its one wildcard).
func (d *scheduledDispatcher) targetProps(s settings) (*awsschedulertargets.ScheduleTargetBaseProps, awsiam.Role) {
	role := scheduling.Role(d, "ScheduleRole", "EventBridge Scheduler role of "+*d.Node().Path(), d.group)
	input := make(map[string]any, len(s.input)+2)
	for k, v := range s.input {
		input[k] = v
	}
	input["scheduledTime"] = *awsscheduler.ContextAttribute_ScheduledTime()
	input["executionId"] = *awsscheduler.ContextAttribute_ExecutionId()
	return &awsschedulertargets.ScheduleTargetBaseProps{
		Input:           awsscheduler.ScheduleTargetInput_FromObject(input),
		RetryAttempts:   jsii.Number(float64(s.scheduleRetryAttempts)),
		MaxEventAge:     awscdk.Duration_Seconds(jsii.Number(s.scheduleMaxEventAge.Seconds())),
		DeadLetterQueue: d.scheduleDLQ,
		Role:            role,
	}, role
}

// deadLetterQueue is an encrypted, SSL-only queue that keeps messages for 14 days: with key
// when one is given, else SSE-SQS.
func deadLetterQueue(scope constructs.Construct, id string, key awskms.IKey, whyNoDLQ string) awssqs.Queue {
	props := &awssqs.QueueProps{
		// SQS-managed SSE: Scheduler and Lambda can send without kms permissions.
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Seconds(jsii.Number(DeadLetterRetention.Seconds())),
	}
	if key != nil {
		props.Encryption, props.EncryptionMasterKey = awssqs.QueueEncryption_KMS, key
	}
	q := awssqs.NewQueue(scope, jsii.String(id), props)
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("AwsSolutions-SQS3"), Reason: jsii.String("no DLQ for a DLQ: " + whyNoDLQ)},
		{Id: jsii.String("Serverless-SQSRedrivePolicy"), Reason: jsii.String("no redrive policy on a DLQ: " + whyNoDLQ)},
	}, jsii.Bool(false))
	if key == nil {
		checkov.Add(q, checkov.QueueSQSManagedEncryption)
	}
	return q
}

// queueDestination is the function's on-failure destination. Unlike CDK's SqsDestination it
// grants nothing itself: the construct grants exactly what sending to the queue needs
// (sqsgrant.Send), without the wildcard key actions of CDK's queue grants.
type queueDestination struct{ queue awssqs.IQueue }

func (d *queueDestination) Bind(constructs.Construct, awslambda.IFunction, *awslambda.DestinationOptions) *awslambda.DestinationConfig {
	return &awslambda.DestinationConfig{Destination: d.queue.QueueArn()}
}

var (
	jobNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	itemIDPattern  = regexp.MustCompile(`^[A-Za-z0-9._:@/-]{1,128}$`)
)

// resolve applies the defaults, runs every validation rule and panics once if any failed.
func resolve(scope constructs.Construct, id string, props *ScheduledDispatcherProps) settings {
	p := validate.NewIn("ScheduledDispatcher", scope, id)
	if props.Queue == nil {
		p.Add("Queue", "nil", "pass the queue to send to (e.g. a queue.ProcessingQueue)")
	}
	s := defaults(id, props)
	if len(props.Items) == 0 && s.fn.Entry == "" {
		p.Add("Items", "none", "give at least one WorkItem: the default function sends exactly these (with your own ItemSource in Function.Entry, Items may be empty)")
	}
	if props.Queue == nil {
		p.Check()
	}
	fifo := props.Queue.Fifo()
	s.fn.Description = "Scheduled dispatcher of job " + s.jobName
	s.fn.Validate(p)
	s.checkSchedule(p, props)
	sendMaxAttempts := checkSendMaxAttempts(p, props)
	defaultGroup := s.checkDefaultGroup(p, props, fifo)
	items := checkItems(p, props.Items, fifo)
	stack := awscdk.Stack_Of(scope)
	if props.ScheduleGroup != nil {
		checkEnv(p, "ScheduleGroup", deref(props.ScheduleGroup.ScheduleGroupArn()), stack, true, "a schedule can only be created in a group of its own account and region; use a group there, or leave ScheduleGroup nil")
	}
	if props.EncryptionKey != nil {
		checkEnv(p, "EncryptionKey", deref(props.EncryptionKey.KeyArn()), stack, false, "SQS encrypts a queue only with a key in the queue's region; use a key there, or leave EncryptionKey nil for SSE-SQS")
	}
	s.checkInput(p, items)
	s.fn.Environment = s.environment(p, props, defaultGroup, sendMaxAttempts)
	p.Check()
	return s
}

// defaults is the settings props give, each zero value replaced by its default.
func defaults(id string, props *ScheduledDispatcherProps) settings {
	opts, given := gofn.FromProps(props)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MemorySize = cmp.Or(opts.MemorySize, DefaultMemorySize)
	s := settings{
		fn: gofn.Props{
			Kind:          "ScheduledDispatcher",
			Main:          "dispatcher",
			RetryAttempts: orPtr(props.AsyncRetryAttempts, DefaultAsyncRetryAttempts),
			MaxEventAge:   cmp.Or(props.AsyncMaxEventAge, DefaultAsyncMaxEventAge),
			Options:       opts,
			Given:         given,
			NoDLQReason: "failed asynchronous invocations go to an on-failure destination (EventInvokeConfig -> FailureQueue, alarmed), " +
				"which also records the error; a DeadLetterConfig as well would deliver each failure twice",
		},
		jobName:               cmp.Or(props.JobName, id),
		cron:                  cmp.Or(props.Cron, DefaultCron),
		timeZone:              cmp.Or(props.TimeZone, DefaultTimeZone),
		scheduleRetryAttempts: *orPtr(props.ScheduleRetryAttempts, DefaultScheduleRetryAttempts),
		scheduleMaxEventAge:   cmp.Or(props.ScheduleMaxEventAge, DefaultScheduleMaxEventAge),
	}
	return s
}

// checkSchedule holds the job name, the cron, the time zone and the schedule's retries to
// Scheduler's rules.
func (s *settings) checkSchedule(p *validate.Problems, props *ScheduledDispatcherProps) {
	// A token (a deploy-time value) cannot be checked here; CloudFormation or Scheduler
	// check it at deploy.
	if !validate.Unresolved(s.jobName) && !jobNamePattern.MatchString(s.jobName) {
		p.Add("JobName", strconv.Quote(s.jobName), "use 1 to 64 letters, digits, '.', '_' or '-' (the default is the construct id)")
	}
	if problem := checkCron(s.cron, time.Now()); !validate.Unresolved(s.cron) && problem != "" {
		p.Add("Cron", strconv.Quote(s.cron), problem)
	}
	if _, err := time.LoadLocation(s.timeZone); !validate.Unresolved(s.timeZone) && (err != nil || s.timeZone == "Local") {
		p.Add("TimeZone", strconv.Quote(s.timeZone), `use an IANA time zone name such as "UTC" or "Europe/Berlin"`)
	}
	// 1m is what every key is now (one per occurrence), so it may stay until the field goes.
	if props.Period != 0 && props.Period != time.Minute {
		p.Add("Period", props.Period, "remove it: Period is deprecated and no longer supported. The idempotency key is now derived "+
			"from each scheduled occurrence (the scheduled time to the minute); a longer period gave distinct runs one key "+
			"(around daylight-saving changes even the runs of a daily cron) and the consumer dropped all but the first as duplicates")
	}
	if s.scheduleRetryAttempts < 0 || s.scheduleRetryAttempts > 185 {
		p.Add("ScheduleRetryAttempts", s.scheduleRetryAttempts, "use 0 to 185 (Scheduler's limits)")
	}
	if a := s.scheduleMaxEventAge; a < time.Minute || a > 24*time.Hour || a%time.Second != 0 {
		p.Add("ScheduleMaxEventAge", a, "use whole seconds from 1m0s to 24h0m0s (Scheduler's limits)")
	}
}

// checkSendMaxAttempts holds SendMaxAttempts to the function's bound and returns it.
func checkSendMaxAttempts(p *validate.Problems, props *ScheduledDispatcherProps) int {
	sendMaxAttempts := cmp.Or(props.SendMaxAttempts, DefaultSendMaxAttempts)
	if sendMaxAttempts < 1 || sendMaxAttempts > contract.MaxSendMaxAttempts {
		p.Add("SendMaxAttempts", sendMaxAttempts, fmt.Sprintf("use 1 to %d: the dispatcher function refuses %s above %d, so every run would fail",
			contract.MaxSendMaxAttempts, contract.EnvSendMaxAttempts, contract.MaxSendMaxAttempts))
	}
	return sendMaxAttempts
}

// checkDefaultGroup returns the FIFO queue's default message group (the job name unless
// given), checked by the function's own rule; a standard queue takes none.
func (s *settings) checkDefaultGroup(p *validate.Problems, props *ScheduledDispatcherProps, fifo bool) string {
	defaultGroup := props.DefaultGroup
	switch {
	case !fifo && defaultGroup != "":
		p.Add("DefaultGroup", strconv.Quote(defaultGroup), "remove it: a default group applies to FIFO queues only; on a standard queue give each item its fair-queue tenant in Group")
	case fifo && defaultGroup == "":
		defaultGroup = s.jobName
	case fifo && !validate.Unresolved(defaultGroup) && msgkey.ValidateGroupID(defaultGroup) != nil: // the function's own rule
		p.Add("DefaultGroup", strconv.Quote(defaultGroup), "use 1 to 128 letters, digits or punctuation (SQS MessageGroupId rules)")
	}
	return defaultGroup
}

// checkInput sets the schedule's input and holds it, as Scheduler renders it, to its limit.
func (s *settings) checkInput(p *validate.Problems, items []any) {
	s.input = map[string]any{"job": s.jobName, "items": items}
	rendered, err := json.Marshal(map[string]any{
		"scheduledTime": *awsscheduler.ContextAttribute_ScheduledTime(),
		"executionId":   *awsscheduler.ContextAttribute_ExecutionId(),
		"job":           s.jobName, "items": items,
	})
	if err == nil && len(rendered) > MaxInputBytes {
		p.Addf("Items", "the schedule input would be %d bytes, over the %d-byte limit; send fewer or smaller items "+
			"(keep large payloads in a store the function reads)", len(rendered), MaxInputBytes)
	}
}

// environment is the function's environment: the variables the construct owns, the
// tunables' defaults, the user's Environment (without the removed PERIOD).
func (s *settings) environment(p *validate.Problems, props *ScheduledDispatcherProps, defaultGroup string, sendMaxAttempts int) map[string]string {
	owned := map[string]string{
		contract.EnvQueueURL:        "", // set below, once the queue is known to be valid
		contract.EnvJobName:         s.jobName,
		contract.EnvDefaultGroupID:  defaultGroup,
		contract.EnvSendMaxAttempts: strconv.Itoa(sendMaxAttempts),
	}
	if q := props.Queue.Queue(); q != nil {
		owned[contract.EnvQueueURL] = *q.QueueUrl()
	}
	extra := s.fn.Environment
	if _, ok := extra[removedPeriodVar]; ok {
		// The function refuses any PERIOD but 1m; say so at synth rather than at the first run.
		p.Addf(s.fn.Prop("Environment"), "%s is no longer supported: the dispatcher derives every key from the scheduled occurrence; remove the variable",
			removedPeriodVar)
		extra = maps.Clone(extra)
		delete(extra, removedPeriodVar)
	}
	return gofn.Environment(p, s.fn.Prop("Environment"), owned, tunableDefaults, extra)
}

// checkEnv reports the resource with arn as prop when its ARN is known (not a token) and
// names another region than stack, or with account set, another account. An imported
// resource's Env is the stack's whatever its ARN says, so the ARN is what tells.
func checkEnv(p *validate.Problems, prop, arn string, stack awscdk.Stack, account bool, fix string) {
	if arn == "" || validate.Unresolved(arn) {
		return
	}
	parts := awscdk.Arn_Split(jsii.String(arn), awscdk.ArnFormat_SLASH_RESOURCE_NAME)
	type side struct{ what, theirs, ours string }
	sides := []side{{"region", deref(parts.Region), deref(stack.Region())}}
	if account {
		sides = append(sides, side{"account", deref(parts.Account), deref(stack.Account())})
	}
	for _, s := range sides {
		if s.theirs != "" && s.ours != "" && !validate.Unresolved(s.theirs) && !validate.Unresolved(s.ours) && s.theirs != s.ours {
			p.Addf(prop, "is in %s %s, the stack in %s; %s", s.what, s.theirs, s.ours, fix)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkItems validates the items and returns them in the input's JSON shape.
func checkItems(p *validate.Problems, items []WorkItem, fifo bool) []any {
	seen := make(map[string]bool, len(items))
	out := make([]any, 0, len(items))
	for i, it := range items {
		prop := fmt.Sprintf("Items[%d]", i)
		switch {
		case validate.Unresolved(it.ID):
			p.Add(prop+".ID", strconv.Quote(it.ID), "give a literal id: item ids cannot be tokens (their uniqueness, which keeps their keys apart, is checked at synth)")
		case !itemIDPattern.MatchString(it.ID):
			p.Add(prop+".ID", strconv.Quote(it.ID), "use 1 to 128 letters, digits or . _ - : @ /")
		case seen[it.ID]:
			p.Add(prop+".ID", strconv.Quote(it.ID), "make it unique: two items with one id would derive the same idempotency key and one would be dropped as a duplicate")
		}
		seen[it.ID] = true
		if it.Group != "" {
			if validate.Unresolved(it.Group) {
				p.Add(prop+".Group", strconv.Quote(it.Group), "give a literal group: item groups cannot be tokens (use DefaultGroup for a deploy-time group)")
			} else if msgkey.ValidateGroupID(it.Group) != nil {
				p.Add(prop+".Group", strconv.Quote(it.Group), "use 1 to 128 letters, digits or punctuation (SQS MessageGroupId rules)")
			}
		}
		item := map[string]any{"id": it.ID}
		if it.Group != "" {
			item["group"] = it.Group
		}
		if it.Payload != nil {
			if _, err := json.Marshal(it.Payload); err != nil {
				p.Addf(prop+".Payload", "does not encode as JSON (%v); use strings, numbers, booleans, nil, slices and maps", err)
			} else {
				item["payload"] = it.Payload
			}
		}
		out = append(out, item)
	}
	return out
}

// checkCron returns why Scheduler would refuse cron, or why it would never run after now, or
// "". It evaluates the cron as Scheduler documents it (internal/awscron, the evaluator the
// dispatcher's key tests generate occurrences with), so a cron that fails here would fail the
// deploy as a stack rollback.
func checkCron(cron string, now time.Time) string {
	if strings.HasPrefix(cron, "cron(") {
		return `give the six fields without the "cron(...)" wrapper, e.g. "0 * * * ? *"`
	}
	c, err := awscron.Parse(cron)
	var e *awscron.Error
	switch {
	case errors.As(err, &e) && e.Field == "fields":
		return fmt.Sprintf("has %d fields; use six: minutes hours day-of-month month day-of-week year, e.g. \"0 * * * ? *\"", len(strings.Fields(cron)))
	case errors.As(err, &e) && e.Field == "day fields":
		return `set exactly one of day-of-month (3rd field) and day-of-week (5th field) to "?"`
	case errors.As(err, &e):
		return fmt.Sprintf("%s field: %v; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, "+
			"day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-%d), e.g. \"0 2 ? * MON-FRI *\"; "+
			"a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it",
			e.Field, e.Err, awscron.MaxYear)
	case err != nil:
		return err.Error()
	case !c.RunsOnOrAfter(now):
		return fmt.Sprintf("never runs: no date from %s to the end of %d matches it (a day a month does not have, or past years); fix the day, month or year field",
			now.UTC().Format(time.DateOnly), awscron.MaxYear)
	}
	return ""
}

func orPtr(v *int, def int) *int {
	if v == nil {
		return &def
	}
	return v
}
