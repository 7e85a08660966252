// Package consumer provides IdempotentConsumer: a consumer Lambda function wired to an SQS
// queue through an event source mapping with ReportBatchItemFailures, and to a DynamoDB
// idempotency table through the one item action the idempotency store uses (UpdateItem).
// The function is functions/consumer (the default effect, one log line per message), bundled
// from Go source at synth, or your own main package built on functions/consume.
//
// The queue and the table come from other constructs (constructs/queue, constructs/table, or
// their helpers for existing resources) or from your own code: anything with the methods of
// Source and Store will do. Props are checked against each other and against the queue at
// synth, and every problem is reported at once (a *validate.Error naming the construct path,
// prop, value and fix), for example a function Timeout the queue's visibility timeout cannot
// cover.
//
//	c := consumer.NewIdempotentConsumer(stack, "Orders", &consumer.IdempotentConsumerProps{
//		Queue: ordersQueue,      // e.g. a queue.ProcessingQueue
//		Table: idempotencyTable, // e.g. a table.IdempotencyTable
//	})
//	c.Function() // alarm on its errors and throttles
//
// # Your own function
//
// Your business logic is an Effect (package functions/consume) in a main package of your own:
//
//	func main() { consume.Start(ship) }
//
//	func ship(ctx context.Context, msg consume.Message) ([]byte, error) { ... }
//
// Set Function.Entry to that package's directory (and Function.ModuleDir to its go.mod's
// directory when the search upwards from Entry would find another one). The construct stays
// correct for it: the same environment contract (IDEMPOTENCY_*, DEAD_LETTER_QUEUE_URL,
// BATCH_*, the tunables), which functions/consume reads, and the same grants on the queue,
// the table and the dead-letter queue. What your effect needs beyond that, you add:
// variables in Function.Environment, permissions on the function itself, which is the
// concrete awslambda.Function:
//
//	orders.GrantWriteData(c.Function())
//
// Architecture, Vpc (with VpcSubnets and SecurityGroups), Layers,
// ReservedConcurrentExecutions and MemorySize are fields of Function (function.Options);
// every resource the construct creates is reachable as its concrete L2 type (Function, Role,
// LogGroup, EventSource) for the rest.
//
// # Your own resources
//
// An existing queue and its dead-letter queue come from queue.ImportProcessingQueue, an
// existing table from table.ImportIdempotencyTable: a table made by Powertools for AWS
// Lambda (partition key "id", time to live on "expiration") works as is, and a table keyed
// on another attribute names it (Store.PartitionKeyName, which reaches the function as
// IDEMPOTENCY_PARTITION_KEY). Their customer managed keys, imported too, are granted
// through the queue's and the table's own grants. See the examples.
package consumer

import (
	"cmp"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/internal/gofn"
	"github.com/idempotent-sqs/pipeline/constructs/internal/sqsgrant"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency/layout"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// Source is the queue the consumer reads. constructs/queue's ProcessingQueue satisfies it.
type Source interface {
	Queue() awssqs.IQueue
	Fifo() bool
	VisibilityTimeout() time.Duration
	RetentionPeriod() time.Duration
}

// DeadLetterSource is a Source with a dead-letter queue (constructs/queue's ProcessingQueue
// is one). The consumer then moves records that can never succeed (bad input, a key reused
// for other content) to that queue at once (DEAD_LETTER_QUEUE_URL, sqs:SendMessage on it)
// instead of failing them until the redrive policy does: on a FIFO queue, redrive would also
// dead-letter the good messages received behind a bad one in its group, whose receive counts
// rise with it. IdempotentConsumerProps.DisableDeadLettering turns this off.
type DeadLetterSource interface {
	Source
	DeadLetterQueue() awssqs.IQueue
}

// Store is the idempotency table. constructs/table's IdempotencyTable satisfies it, and so
// does its helper for an existing table (an awsdynamodb.ITable imported by name or ARN).
type Store interface {
	Table() awsdynamodb.ITable
	// PartitionKeyName is the table's partition key attribute (a string key), given to the
	// function as IDEMPOTENCY_PARTITION_KEY: "id" for tables of constructs/table and of
	// Powertools for AWS Lambda. "" means "id". It may not be an attribute the idempotency
	// record writes (layout.ReservedAttrs).
	PartitionKeyName() string
	// SortKeyName is the table's sort key attribute, "" without one. It may be neither the
	// partition key nor an attribute the idempotency record writes.
	SortKeyName() string
	// GrantIdempotency grants exactly the item actions the idempotency store uses, and the
	// key actions they need when the table has a customer managed key (also an imported one).
	GrantIdempotency(grantee awsiam.IGrantable) awsiam.Grant
}

// Defaults, in one place.
const (
	DefaultTimeout          = contract.DefaultConsumerTimeout
	DefaultMemorySize       = 256
	DefaultBatchSize        = 10
	DefaultMaxConcurrency   = 10
	DefaultKeySource        = "body:idempotencyKey"
	DefaultBatchConcurrency = 10
	// VisibilityFactor is how many function timeouts the queue's visibility timeout must
	// cover: AWS's guidance for SQS event sources, so a batch retried after throttling
	// or a slow poll is not redelivered while an attempt may still run (the queue's own
	// check uses the same one).
	VisibilityFactor = contract.VisibilityFactor
	// DefaultRedriveWindow is what the default RecordTTL keeps beyond a message's life in
	// the queue and its DLQ: time for a message redriven on the DLQ's last day to be
	// consumed, or to fail and be redriven again, while its record still answers.
	DefaultRedriveWindow = 7 * 24 * time.Hour
	// sqsDefaultRetention and sqsDefaultVisibility stand in when a Source reports 0 (not set).
	sqsDefaultRetention  = 4 * 24 * time.Hour
	sqsDefaultVisibility = 30 * time.Second
	// sqsMaxRetention stands in for a DLQ whose retention the Source does not report: the
	// longest any DLQ can keep a message.
	sqsMaxRetention = 14 * 24 * time.Hour
)

// DeadLetterRetentionSource is a Source that reports its DLQ's retention period
// (constructs/queue's ProcessingQueue does). The default RecordTTL covers it.
type DeadLetterRetentionSource interface {
	Source
	DeadLetterRetentionPeriod() time.Duration
}

// MessageSizeSource is a Source that reports the largest message its queue accepts, in
// bytes (constructs/queue's ProcessingQueue does): the consumer's MAX_BODY_BYTES, so no
// message the queue takes is dead-lettered as oversize. Without it, 262,144.
type MessageSizeSource interface {
	Source
	MaxMessageSize() int
}

// deadLetterRetention is how long q's DLQ can keep a message: its own report, SQS's maximum
// when it has a DLQ but does not say (or says 0), and 0 without a DLQ.
func deadLetterRetention(q Source) time.Duration {
	if r, ok := q.(DeadLetterRetentionSource); ok && r.DeadLetterRetentionPeriod() > 0 {
		return r.DeadLetterRetentionPeriod()
	}
	if dl, ok := q.(DeadLetterSource); ok && dl.DeadLetterQueue() != nil {
		return sqsMaxRetention
	}
	return 0
}

// Tunables the construct sets explicitly (the runtime's defaults) and Environment may override.
var tunableDefaults = map[string]string{
	contract.EnvDeadlineMargin:   "2s",
	contract.EnvMaxBodyBytes:     "262144",
	contract.EnvMetricsNamespace: "IdempotentSQS",
	contract.EnvLogLevel:         "INFO",
}

// IdempotentConsumerProps configure an IdempotentConsumer. Queue and Table are required;
// every other zero value takes the default in its comment.
type IdempotentConsumerProps struct {
	// Queue the function consumes. Required.
	Queue Source
	// Table holding the idempotency records. Required.
	Table Store

	// Function is the Lambda function's settings (package function), validated at synth with
	// the consumer's own rules on top:
	//   - Entry: your own main package built on functions/consume (consume.Start with your
	//     Effect), which reads the environment this construct sets; see the package
	//     documentation. Checked at synth: a directory without Go files, a package that is
	//     not main, or a dispatcher main is an error naming the directory and the fix.
	//     Default: functions/consumer of this module, the default effect that only logs.
	//   - Timeout is also the idempotency lock's cap (IDEMPOTENCY_LOCK_CAP): a record stays
	//     locked no longer than an attempt can run. Default 30s. The queue's visibility
	//     timeout (6x) and RecordTTL are checked against it.
	//   - Vpc: its subnets must reach SQS, DynamoDB and CloudWatch (and X-Ray unless
	//     DisableTracing) through a NAT gateway or VPC endpoints, or every batch fails.
	//   - ReservedConcurrentExecutions: at least MaxConcurrency; below it the event source
	//     would be throttled, and a throttled batch returns to the queue with its receive
	//     count raised, towards the dead-letter queue. Default 0 (MaxConcurrency caps the
	//     function without that risk).
	//   - Environment overrides the tunables LOG_LEVEL, METRICS_NAMESPACE, MAX_BODY_BYTES
	//     (default: the queue's MaxMessageSize, see MessageSizeSource) and
	//     BATCH_DEADLINE_MARGIN. Setting a variable the props own (IDEMPOTENCY_*, including
	//     IDEMPOTENCY_PARTITION_KEY, which comes from Table; DEAD_LETTER_QUEUE_URL;
	//     BATCH_CONCURRENCY) is a validation error.
	Function function.Options

	// DisableDeadLettering leaves records that can never succeed to the queue's redrive
	// policy (reported as failed until maxReceiveCount receives) even when Queue has a
	// dead-letter queue. Default false: they are moved to it at once; see DeadLetterSource.
	DisableDeadLettering bool

	// BatchSize is the most records per invocation. Standard queues 1 to 10000 (above 10
	// needs MaxBatchingWindow of at least 1s), FIFO queues 1 to 10. Default 10. Cannot be a
	// token.
	BatchSize int
	// MaxBatchingWindow is how long Lambda gathers records before invoking, up to 5m.
	// Standard queues only. Default 0 (invoke as soon as records arrive). Cannot be a token.
	MaxBatchingWindow time.Duration
	// MaxConcurrency caps the concurrent invocations the event source starts, 2 to 1000.
	// Not with ProvisionedPollers, which bound the concurrency instead. Default 10 (0 in
	// provisioned mode). Cannot be a token.
	MaxConcurrency int
	// ProvisionedPollers puts the event source mapping in provisioned mode: a minimum of
	// event pollers kept ready and a maximum it scales to, each driving up to 10 concurrent
	// invocations (or 1 MB/s, or 10 receives a second). It scales about three times faster
	// than the default mode (up to 1,000 more concurrent invocations a minute rather than
	// 300), for queues whose load arrives in spikes, and every provisioned poller is billed
	// (Lambda's event poller units) whether it works or not: docs/capacity.md says when it
	// pays. Lambda takes provisioned mode or MaxConcurrency, not both: the pollers' Maximum x
	// 10 bounds the concurrency. Cannot be a token. Default: nil (the default mode, capped by
	// MaxConcurrency).
	ProvisionedPollers *ProvisionedPollers
	// DisableMappingMetrics turns off the event source mapping's own metrics (MetricsConfig
	// EventCount, the only kind Lambda has for SQS): in AWS/Lambda, by EventSourceMappingUUID,
	// how many messages it polled, invoked the function with, failed to invoke, deleted and
	// filtered out. They show the mapping itself, which the function's and the queue's
	// metrics only suggest: a mapping that polls nothing while the queue fills, or deletes
	// fewer than it invokes. The monitoring construct charts them in the consumer's row.
	// Lambda bills them as CloudWatch metrics (docs/capacity.md: at most $1.80 a month a
	// mapping in us-east-1). Default false: on.
	DisableMappingMetrics bool

	// KeyPrefix namespaces this consumer's records when consumers share a table
	// (id = KeyPrefix#key): 1 to 1024 bytes of UTF-8 without '#', by the function's own
	// rule (package contract). May be a token (then the function checks it when it starts).
	// Default: the construct id.
	KeyPrefix string
	// KeySource is where the idempotency key is: "body:<json field>" or
	// "attribute:<message attribute>", checked at synth by the parser the function reads
	// IDEMPOTENCY_KEY_SOURCE with (contract.ParseSource: a body field is any 1 to 256 bytes
	// of UTF-8, spaces included; an attribute name follows SQS's rules). Cannot be a token,
	// nor can TenantSource. Default "body:idempotencyKey".
	KeySource string
	// TenantSource, with a table that has a sort key, makes the tenant the partition
	// (composite key): "body:<field>", "attribute:<name>" or "group" (the MessageGroupId:
	// a FIFO queue's message group, or on a standard queue the fair-queue tenant, which
	// every producer must then set: a message without one is bad input, dead-lettered with
	// its reason). Default: none.
	TenantSource string
	// RecordTTL is how long a completed record is kept, so a duplicate within it is
	// recognised: a copy of a message that comes back after its record expired runs the
	// effect again. A copy can come back for as long as the message lives: in the queue
	// (its retention period), then in the dead-letter queue (whose retention restarts for a
	// FIFO queue), and after a redrive. Default: the queue's retention + the DLQ's retention
	// (14 days, SQS's maximum, when the Source does not say) + DefaultRedriveWindow; 25 days
	// (600h) for constructs/queue's defaults. It must be at least the queue's and the DLQ's
	// retention together unless AllowShortRecordTTL is set, and at least Timeout. The cost
	// of a longer TTL is storage only: about $0.07 a month per million records kept (a
	// record is about 200 bytes, and DynamoDB adds 100 bytes of overhead an item; standard
	// storage $0.25 per GB-month, us-east-1).
	RecordTTL time.Duration
	// AllowShortRecordTTL accepts a RecordTTL shorter than a message can live in the queue
	// and its DLQ. A message redriven after its record expired then runs its effect again:
	// redrive only with pipelinectl, which refuses messages older than the record TTL
	// (its <pipeline>RecordTTL output, or --record-ttl). Default false.
	AllowShortRecordTTL bool
	// DisablePayloadValidation stops comparing the payload hash of a repeated key, so a
	// key reused for different content is treated as a duplicate instead of an error.
	// Default false (validation on).
	DisablePayloadValidation bool
	// CacheSize > 0 keeps that many completed records in memory per execution environment
	// to answer duplicates without DynamoDB. Default 0 (off).
	CacheSize int
	// BatchConcurrency bounds how many records of a batch run at once: on a standard queue
	// records, on a FIFO queue message groups (the records of one group always run one
	// after another, in order). Default 10.
	BatchConcurrency int

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

// IdempotentConsumer is the consumer function with its queue and table wiring.
type IdempotentConsumer interface {
	constructs.IConstruct
	// Function is the consumer Lambda function: grant it what your effect needs.
	Function() awslambda.Function
	// Role is the function's execution role.
	Role() awsiam.Role
	// LogGroup is the function's log group.
	LogGroup() awslogs.LogGroup
	// EventSource is the function's SQS event source.
	EventSource() awslambdaeventsources.SqsEventSource
	// Queue is the queue the function consumes (for alarms on its depth and deletes).
	Queue() awssqs.IQueue
	// Timeout is the function timeout, also the idempotency lock's cap.
	Timeout() time.Duration
	// RecordTTL is how long completed records are kept.
	RecordTTL() time.Duration
	// BatchSize and MaxConcurrency are the event source mapping's settings (MaxConcurrency is 0
	// in provisioned mode, ProvisionedPollers).
	BatchSize() int
	MaxConcurrency() int
	// KeyPrefix is this consumer's namespace in the table.
	KeyPrefix() string
	// EventSourceMappingArn is the ARN of the SQS event source mapping.
	EventSourceMappingArn() *string
}

type idempotentConsumer struct {
	constructs.Construct
	fn        *gofn.Function
	queue     awssqs.IQueue
	source    awslambdaeventsources.SqsEventSource
	settings  settings
	keyPrefix string
}

func (c *idempotentConsumer) Function() awslambda.Function { return c.fn.Function }
func (c *idempotentConsumer) Role() awsiam.Role            { return c.fn.Role }
func (c *idempotentConsumer) LogGroup() awslogs.LogGroup   { return c.fn.LogGroup }
func (c *idempotentConsumer) EventSource() awslambdaeventsources.SqsEventSource {
	return c.source
}
func (c *idempotentConsumer) Queue() awssqs.IQueue           { return c.queue }
func (c *idempotentConsumer) Timeout() time.Duration         { return c.settings.fn.Timeout }
func (c *idempotentConsumer) RecordTTL() time.Duration       { return c.settings.recordTTL }
func (c *idempotentConsumer) BatchSize() int                 { return c.settings.batchSize }
func (c *idempotentConsumer) MaxConcurrency() int            { return c.settings.maxConcurrency }
func (c *idempotentConsumer) KeyPrefix() string              { return c.keyPrefix }
func (c *idempotentConsumer) EventSourceMappingArn() *string { return c.source.EventSourceMappingArn() }

// ProvisionedPollers are an SQS event source mapping's provisioned mode bounds.
type ProvisionedPollers struct {
	// Minimum is how many pollers stay ready, and billed, with no load: 2 to 200 (Lambda's
	// range for SQS). Default 2.
	Minimum int
	// Maximum is how many pollers the mapping scales to: Minimum to 2,000 (what the pinned
	// CDK's SqsEventSource accepts; the Lambda API takes up to 10,000 for SQS). Required:
	// Maximum x 10 is the consumer's concurrency bound, as MaxConcurrency is in the default
	// mode (whose default is 10), and Lambda's own default (200 pollers, 2,000 invocations)
	// is above most accounts' concurrency.
	Maximum int
}

// Provisioned mode's defaults and ranges for SQS.
const (
	DefaultMinimumPollers = 2
	minPollers            = 2
	maxMinimumPollers     = 200
	maxMaximumPollers     = 2000
	// InvocationsPerPoller is how many concurrent invocations one provisioned poller drives.
	InvocationsPerPoller = 10
)

// settings are the props with defaults applied and validated.
type settings struct {
	fn                gofn.Props
	fifo              bool
	batchSize         int
	maxBatchingWindow time.Duration
	maxConcurrency    int                 // 0 in provisioned mode
	pollers           *ProvisionedPollers // nil: the default mode
	recordTTL         time.Duration
	env               map[string]string
	deadLetter        awssqs.IQueue // nil: no dead-lettering by the function
}

// NewIdempotentConsumer builds the consumer. It panics with a *validate.Error listing every
// problem with props (cdk synth reports it), before creating anything.
func NewIdempotentConsumer(scope constructs.Construct, id string, props *IdempotentConsumerProps) IdempotentConsumer {
	if props == nil {
		props = &IdempotentConsumerProps{}
	}
	s := resolve(scope, id, props)

	// Override registers c itself as the jsii construct, so c can be passed anywhere a
	// construct is expected (Stack.Of, NagSuppressions, as a scope).
	c := &idempotentConsumer{settings: s}
	constructs.NewConstruct_Override(c, scope, jsii.String(id))
	c.keyPrefix = s.env[contract.EnvKeyPrefix]
	c.queue = props.Queue.Queue()
	c.fn = gofn.New(c, s.fn)
	props.Table.GrantIdempotency(c.fn.Function)
	if s.deadLetter != nil {
		sqsgrant.Send(s.deadLetter, s.deadLetter.EncryptionMasterKey(), c.fn.Function, sqsgrant.SendActions...)
	}

	esProps := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(float64(s.batchSize)),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	if p := s.pollers; p != nil {
		esProps.ProvisionedPollerConfig = &awslambda.ProvisionedPollerConfig{
			MinimumPollers: jsii.Number(float64(p.Minimum)), MaximumPollers: jsii.Number(float64(p.Maximum)),
		}
	} else {
		esProps.MaxConcurrency = jsii.Number(float64(s.maxConcurrency))
	}
	if !props.DisableMappingMetrics {
		esProps.MetricsConfig = &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}}
	}
	if s.maxBatchingWindow > 0 {
		esProps.MaxBatchingWindow = awscdk.Duration_Seconds(jsii.Number(s.maxBatchingWindow.Seconds()))
	}
	// The event source also grants the function the consume actions on the queue (and
	// kms:Decrypt when the queue has a customer managed key).
	c.source = awslambdaeventsources.NewSqsEventSource(c.queue, esProps)
	c.fn.Function.AddEventSource(c.source)

	for _, child := range *c.fn.Function.Node().Children() {
		if res, ok := child.Node().DefaultChild().(awscdk.CfnResource); ok && *res.CfnResourceType() == "AWS::Lambda::EventSourceMapping" {
			cdknag.NagSuppressions_AddResourceSuppressions(child, &[]*cdknag.NagPackSuppression{{
				Id: jsii.String("Serverless-LambdaEventSourceMappingDestination"),
				Reason: jsii.String("SQS event sources cannot have an on-failure destination (Lambda supports one for stream and Kafka sources only); " +
					"the queue's redrive policy to its dead-letter queue is the failure path for records that keep failing"),
			}}, jsii.Bool(true))
			if c.queue.Node().DefaultChild() == nil { // an imported queue: no AWS::SQS::Queue in the template
				addExistingQueue(res, props.Queue)
			}
		}
	}
	return c
}

// addExistingQueue records, on the event source mapping of a queue the stack imports, what
// the template cannot say of it (its DLQ, type, visibility timeout, retention, redrive
// count), as cloud assembly metadata in the manifest: package local stands in for the
// queue from it.
func addExistingQueue(mapping awscdk.CfnResource, q Source) {
	data := map[string]any{
		"queueArn":          q.Queue().QueueArn(),
		"fifo":              q.Fifo(),
		"visibilityTimeout": int(q.VisibilityTimeout().Seconds()),
		"retentionPeriod":   int(q.RetentionPeriod().Seconds()),
	}
	if d, ok := q.(DeadLetterSource); ok && d.DeadLetterQueue() != nil {
		data["deadLetterQueueArn"] = d.DeadLetterQueue().QueueArn()
	}
	if r, ok := q.(interface{ MaxReceiveCount() int }); ok && r.MaxReceiveCount() > 0 {
		data["maxReceiveCount"] = r.MaxReceiveCount()
	}
	mapping.Node().AddMetadata(jsii.String(cfn.ExistingQueueMetadata), data, nil)
}

// resolve applies the defaults, runs every validation rule and panics once if any failed:
// one checker per concern, each adding its problems, so that all are reported at once.
func resolve(scope constructs.Construct, id string, props *IdempotentConsumerProps) settings {
	p := validate.NewIn("IdempotentConsumer", scope, id)
	if props.Queue == nil {
		p.Add("Queue", "nil", "pass the queue to consume (e.g. a queue.ProcessingQueue)")
	}
	if props.Table == nil {
		p.Add("Table", "nil", "pass the idempotency table (e.g. a table.IdempotencyTable)")
	}
	if props.Queue == nil || props.Table == nil {
		p.Check()
	}
	s := defaults(id, props)
	s.fn.Validate(p)
	s.checkTimeout(p, props)
	s.checkBatching(p)
	s.checkConcurrency(p, props)
	k := checkKeys(p, id, props)
	s.checkRecordTTL(p, props)
	batchConcurrency := checkRuntimeLimits(p, props)
	s.env = gofn.Environment(p, s.fn.Prop("Environment"), s.owned(props, k, batchConcurrency), s.tunables(props), s.fn.Environment)
	s.fn.Environment = s.env
	p.Check()
	return s
}

// defaults is the settings props give, each zero value replaced by its default.
func defaults(id string, props *IdempotentConsumerProps) settings {
	opts, given := gofn.FromProps(props)
	opts.Timeout = cmp.Or(opts.Timeout, DefaultTimeout)
	opts.MemorySize = cmp.Or(opts.MemorySize, DefaultMemorySize)
	s := settings{
		fn: gofn.Props{
			Kind:        "IdempotentConsumer",
			Main:        "consumer",
			Description: "Idempotent SQS consumer " + id,
			Options:     opts,
			Given:       given,
			NoDLQReason: "a function dead-letter queue only receives failed asynchronous invocations; this function is only invoked " +
				"synchronously by its SQS event source mapping, so failed records return to the queue and move to the queue's redrive DLQ",
		},
		fifo:              props.Queue.Fifo(),
		batchSize:         cmp.Or(props.BatchSize, DefaultBatchSize),
		maxBatchingWindow: props.MaxBatchingWindow,
		maxConcurrency:    cmp.Or(props.MaxConcurrency, DefaultMaxConcurrency),
	}
	if pp := props.ProvisionedPollers; pp != nil {
		s.pollers = &ProvisionedPollers{Minimum: cmp.Or(pp.Minimum, DefaultMinimumPollers), Maximum: pp.Maximum}
		s.maxConcurrency = 0
	}
	return s
}

// checkTimeout holds the function's timeout to the queue's visibility timeout.
func (s *settings) checkTimeout(p *validate.Problems, props *IdempotentConsumerProps) {
	timeout := s.fn.Timeout
	visibility := cmp.Or(props.Queue.VisibilityTimeout(), sqsDefaultVisibility)
	// An invalid Timeout is reported above; measured against the queue it would only add noise.
	if need := VisibilityFactor * timeout; gofn.ValidTimeout(timeout) && visibility < need {
		p.Addf(s.fn.Prop("Timeout"), "%v needs a queue visibility timeout of at least %v (%dx, AWS's rule for SQS event sources), the queue has %v; "+
			"lower it or raise the queue's VisibilityTimeout/ConsumerTimeout", timeout, need, VisibilityFactor, visibility)
	}
}

// checkBatching holds the batch size and window to Lambda's rules for the queue's type.
func (s *settings) checkBatching(p *validate.Problems) {
	if s.fifo {
		if s.batchSize < 1 || s.batchSize > 10 {
			p.Add("BatchSize", s.batchSize, "use 1 to 10 for a FIFO queue (AWS's limit)")
		}
		if s.maxBatchingWindow != 0 {
			p.Add("MaxBatchingWindow", s.maxBatchingWindow, "remove it: FIFO queues do not support a batching window")
		}
	} else {
		if s.batchSize < 1 || s.batchSize > 10000 {
			p.Add("BatchSize", s.batchSize, "use 1 to 10000 for a standard queue (AWS's limit)")
		} else if s.batchSize > 10 && s.maxBatchingWindow < time.Second {
			p.Addf("BatchSize", "%d needs MaxBatchingWindow of at least 1s (AWS's rule for batches above 10), got %v; set MaxBatchingWindow or use BatchSize 10 or less",
				s.batchSize, s.maxBatchingWindow)
		}
		if s.maxBatchingWindow < 0 || s.maxBatchingWindow > 5*time.Minute || s.maxBatchingWindow%time.Second != 0 {
			p.Add("MaxBatchingWindow", s.maxBatchingWindow, "use whole seconds from 0s to 5m0s")
		}
	}
}

// checkConcurrency holds the maximum concurrency or the provisioned pollers to Lambda's
// ranges, and the reserved concurrency to what they drive.
func (s *settings) checkConcurrency(p *validate.Problems, props *IdempotentConsumerProps) {
	if pp := s.pollers; pp != nil {
		if props.MaxConcurrency != 0 {
			p.Add("MaxConcurrency", props.MaxConcurrency, "Lambda takes provisioned mode or a maximum concurrency for an SQS event source, not both: "+
				"drop MaxConcurrency (ProvisionedPollers.Maximum x 10 bounds the concurrency), or drop ProvisionedPollers")
		}
		if pp.Minimum < minPollers || pp.Minimum > maxMinimumPollers {
			p.Add("ProvisionedPollers.Minimum", pp.Minimum, fmt.Sprintf("use %d to %d (Lambda's range for SQS; each is billed all the time), or 0 for the default %d",
				minPollers, maxMinimumPollers, DefaultMinimumPollers))
		}
		switch {
		case pp.Maximum < minPollers || pp.Maximum > maxMaximumPollers:
			p.Add("ProvisionedPollers.Maximum", pp.Maximum, fmt.Sprintf("set %d to %d (what CDK's SqsEventSource accepts): x %d is the consumer's concurrency bound, "+
				"so size it as MaxConcurrency / %d (docs/capacity.md)", minPollers, maxMaximumPollers, InvocationsPerPoller, InvocationsPerPoller))
		case pp.Maximum < pp.Minimum:
			p.Addf("ProvisionedPollers.Maximum", "%d is below ProvisionedPollers.Minimum %d; the mapping scales between the two", pp.Maximum, pp.Minimum)
		}
		if r := s.fn.ReservedConcurrentExecutions; r > 0 && pp.Maximum >= minPollers && r < pp.Maximum*InvocationsPerPoller {
			fix := fmt.Sprintf("reserve at least %d", pp.Maximum*InvocationsPerPoller)
			if lower := r / InvocationsPerPoller; lower >= max(pp.Minimum, minPollers) {
				fix += fmt.Sprintf(" or lower ProvisionedPollers.Maximum to %d", lower)
			}
			p.Addf(s.fn.Prop("ReservedConcurrentExecutions"), "%d is below what ProvisionedPollers.Maximum %d drives (%d concurrent invocations): the event source "+
				"would be throttled, and throttled batches return to the queue with raised receive counts, towards the dead-letter queue; %s",
				r, pp.Maximum, pp.Maximum*InvocationsPerPoller, fix)
		}
	} else if s.maxConcurrency < 2 || s.maxConcurrency > 1000 {
		p.Add("MaxConcurrency", s.maxConcurrency, "use 2 to 1000 (AWS's limits for SQS event sources)")
	}
	if r := s.fn.ReservedConcurrentExecutions; s.pollers == nil && r > 0 && r < s.maxConcurrency {
		p.Addf(s.fn.Prop("ReservedConcurrentExecutions"), "%d is below MaxConcurrency %d: the event source would be throttled, and throttled batches "+
			"return to the queue with raised receive counts, towards the dead-letter queue; reserve at least %d or lower MaxConcurrency",
			r, s.maxConcurrency, s.maxConcurrency)
	}
}

// keys are the record keys' settings the environment carries.
type keys struct{ prefix, source, partitionKey, sortKey string }

// checkKeys resolves the key prefix, the key and tenant sources and the table's key names,
// and checks each by the function's own rules.
func checkKeys(p *validate.Problems, id string, props *IdempotentConsumerProps) keys {
	// Every value the function parses at cold start is checked here by the function's own
	// rules (package contract), so that a stack which synthesizes also starts.
	keyPrefix := cmp.Or(props.KeyPrefix, id)
	if err := contract.CheckKeyPrefix(keyPrefix); !validate.Unresolved(keyPrefix) && err != nil {
		p.Add("KeyPrefix", strconv.Quote(keyPrefix), fmt.Sprintf(`use 1 to %d bytes of UTF-8 without "#" (it is the namespace before '#' in each record id): %v`,
			contract.MaxKeyPrefixBytes, err))
	}
	keySource := cmp.Or(props.KeySource, contract.DefaultKeySource)
	if err := checkSource(keySource, false); err != "" {
		p.Add("KeySource", strconv.Quote(keySource), err)
	}
	// constructs/table never reports these names, another Store might.
	partitionKey := cmp.Or(props.Table.PartitionKeyName(), layout.DefaultPartitionKeyAttr)
	if err := contract.CheckPartitionKey(partitionKey); err != nil {
		p.Add("Table", fmt.Sprintf("a table with partition key %q", partitionKey), fmt.Sprintf("the consumer refuses it as %s (%v), so every invocation would fail; "+
			`use a table whose partition key has another name, e.g. "id"`, contract.EnvPartitionKey, err))
	}
	sortKey := props.Table.SortKeyName()
	if err := contract.CheckSortKey(sortKey, partitionKey); sortKey != "" && err != nil {
		p.Add("Table", fmt.Sprintf("a table with sort key %q", sortKey), fmt.Sprintf("the consumer refuses it as %s (%v), so every invocation would fail; "+
			`use a table whose sort key has another name, e.g. "sk"`, contract.EnvSortKey, err))
	}
	if props.TenantSource != "" {
		if sortKey == "" {
			p.Add("TenantSource", strconv.Quote(props.TenantSource), "it needs a table with a sort key (composite key); use such a table or remove TenantSource")
		}
		if err := checkSource(props.TenantSource, true); err != "" {
			p.Add("TenantSource", strconv.Quote(props.TenantSource), err)
		}
	}
	return keys{prefix: keyPrefix, source: keySource, partitionKey: partitionKey, sortKey: sortKey}
}

// checkRecordTTL resolves the record TTL and holds it above the lock and, unless allowed
// shorter, above how long a message can live.
func (s *settings) checkRecordTTL(p *validate.Problems, props *IdempotentConsumerProps) {
	timeout := s.fn.Timeout
	retention := cmp.Or(props.Queue.RetentionPeriod(), sqsDefaultRetention)
	life := retention + deadLetterRetention(props.Queue)
	s.recordTTL = cmp.Or(props.RecordTTL, life+DefaultRedriveWindow)
	switch {
	case s.recordTTL < timeout:
		p.Addf("RecordTTL", "%v is shorter than the lock it must outlive (%s %v); use at least %v, or leave it 0 for the default %v",
			s.recordTTL, s.fn.Prop("Timeout"), timeout, max(timeout, life), life+DefaultRedriveWindow)
	case s.recordTTL < life && !props.AllowShortRecordTTL:
		p.Addf("RecordTTL", "%v is shorter than a message can live (the queue's retention %v + its DLQ's %v = %v): a message redriven from the DLQ "+
			"after its record expired would run its effect again; use at least %v (0 gives the default %v, with %v to redrive), "+
			"or set AllowShortRecordTTL and redrive only with pipelinectl, which refuses messages older than the record TTL",
			s.recordTTL, retention, life-retention, life, life, life+DefaultRedriveWindow, DefaultRedriveWindow)
	}
}

// checkRuntimeLimits holds the cache size and the batch concurrency to the function's bounds,
// and returns the batch concurrency.
func checkRuntimeLimits(p *validate.Problems, props *IdempotentConsumerProps) int {
	if props.CacheSize < 0 || props.CacheSize > contract.MaxCacheSize {
		p.Add("CacheSize", props.CacheSize, fmt.Sprintf("use 0 (off) up to %d records (the consumer refuses more)", contract.MaxCacheSize))
	}
	batchConcurrency := cmp.Or(props.BatchConcurrency, DefaultBatchConcurrency)
	if batchConcurrency < 1 || batchConcurrency > contract.MaxBatchConcurrency {
		p.Add("BatchConcurrency", batchConcurrency, fmt.Sprintf("use 1 to %d (the largest SQS batch; the consumer refuses more)", contract.MaxBatchConcurrency))
	}
	return batchConcurrency
}

// owned are the variables the construct sets from its props (the environment contract), the
// dead-letter queue's URL among them when the function dead-letters.
func (s *settings) owned(props *IdempotentConsumerProps, k keys, batchConcurrency int) map[string]string {
	timeout := s.fn.Timeout
	owned := map[string]string{
		contract.EnvTableName:        *props.Table.Table().TableName(),
		contract.EnvPartitionKey:     k.partitionKey,
		contract.EnvKeyPrefix:        k.prefix,
		contract.EnvKeySource:        k.source,
		contract.EnvSortKey:          k.sortKey,
		contract.EnvTenantSource:     props.TenantSource,
		contract.EnvRecordTTL:        s.recordTTL.String(),
		contract.EnvLockCap:          timeout.String(),
		contract.EnvValidatePayload:  strconv.FormatBool(!props.DisablePayloadValidation),
		contract.EnvCacheSize:        strconv.Itoa(props.CacheSize),
		contract.EnvDisabled:         "false", // a deployed consumer always runs with idempotency
		contract.EnvBatchConcurrency: strconv.Itoa(batchConcurrency),
	}
	if dl, ok := props.Queue.(DeadLetterSource); ok && !props.DisableDeadLettering && dl.DeadLetterQueue() != nil {
		s.deadLetter = dl.DeadLetterQueue()
		owned[contract.EnvDeadLetterQueue] = *s.deadLetter.QueueUrl()
	}
	return owned
}

// tunables are the variables a user's Environment may override, with their defaults.
func (*settings) tunables(props *IdempotentConsumerProps) map[string]string {
	tunables := maps.Clone(tunableDefaults)
	if q, ok := props.Queue.(MessageSizeSource); ok && q.MaxMessageSize() > 0 {
		tunables[contract.EnvMaxBodyBytes] = strconv.Itoa(q.MaxMessageSize())
	}
	return tunables
}

// checkSource returns why s is not a valid key source (or, allowGroup, tenant source), or "":
// the function's own parser (package contract) decides, so a source that synthesizes is one
// the function accepts at cold start.
func checkSource(s string, allowGroup bool) string {
	if validate.Unresolved(s) {
		return "give the literal source: it cannot be a token, because the consumer's other props are checked against it at synth"
	}
	forms := `use "body:<json field>" or "attribute:<message attribute name>"`
	parse := contract.ParseSource
	if allowGroup {
		forms = `use "body:<json field>", "attribute:<message attribute name>" or "group"`
		parse = contract.ParseTenantSource
	}
	if _, _, err := parse(s); err != nil {
		return fmt.Sprintf("the consumer refuses it (%v); %s", err, forms)
	}
	return ""
}
