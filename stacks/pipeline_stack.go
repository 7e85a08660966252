// Package stacks holds the reference stack composed from the constructs, and Build, which
// the CDK app (stacks/app) and the stack tests (test/stack) share so that what is tested is
// what is deployed, cdk-nag checks included.
package stacks

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/heartbeat"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/internal/nagpacks"
)

// PipelineStackProps configures the reference stack. Nil props take Config's defaults.
type PipelineStackProps struct {
	awscdk.StackProps
	// Config carries the app's settings (schedule, alarm e-mail, timeouts).
	Config Config
}

// PipelineStack is the reference deployment: one idempotency table and one alarm topic and
// dashboard shared by two pipelines, a standard one and a FIFO one, each fed by its own
// scheduled dispatcher.
type PipelineStack interface {
	awscdk.Stack
	Standard() pipeline.Pipeline
	Fifo() pipeline.Pipeline
	Table() table.IdempotencyTable
	Monitoring() monitoring.PipelineMonitoring
}

type pipelineStack struct {
	awscdk.Stack
	standard, fifo pipeline.Pipeline
	table          table.IdempotencyTable
	monitoring     monitoring.PipelineMonitoring
}

func (s *pipelineStack) Standard() pipeline.Pipeline               { return s.standard }
func (s *pipelineStack) Fifo() pipeline.Pipeline                   { return s.fifo }
func (s *pipelineStack) Table() table.IdempotencyTable             { return s.table }
func (s *pipelineStack) Monitoring() monitoring.PipelineMonitoring { return s.monitoring }

// NewPipelineStack builds the reference stack.
func NewPipelineStack(scope constructs.Construct, id string, props *PipelineStackProps) PipelineStack {
	if props == nil {
		props = &PipelineStackProps{}
	}
	cfg := props.Config.withDefaults()
	sp := props.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Idempotent SQS pipeline: scheduled dispatchers, standard and FIFO queues with DLQs, idempotent Go consumers, DynamoDB idempotency table, alarms")
	}
	// Override registers s itself as the jsii stack, so s can be passed to CDK (Tags_Of,
	// Template_FromStack) like any awscdk.Stack.
	s := &pipelineStack{}
	awscdk.NewStack_Override(s, scope, jsii.String(id), &sp)
	stack := awscdk.Stack(s)

	var sh shared
	sh.cfg = cfg
	if cfg.Hardened {
		sh.hardening, sh.dataKey = hardenedParts(stack)
	}
	s.table = table.NewIdempotencyTable(stack, "IdempotencyTable", cfg.tableProps(sh.dataKey))
	s.monitoring = monitoring.NewPipelineMonitoring(stack, "Monitoring", &monitoring.PipelineMonitoringProps{
		AlarmEmails:      cfg.AlarmEmails,
		TicketEmails:     cfg.TicketEmails,
		SlackWorkspaceId: cfg.SlackWorkspaceID,
		SlackChannelId:   cfg.SlackChannelID,
	})
	s.monitoring.WatchTable("IdempotencyTable", s.table.Table())
	sh.table, sh.monitoring = s.table, s.monitoring

	// Sample work items: replace them with your own (or your own ItemSource in the
	// dispatcher). On the FIFO pipeline the group is the ordering unit, here a tenant.
	s.standard = sh.pipeline(stack, "Standard", false, []dispatcher.WorkItem{
		{ID: "report-daily", Payload: map[string]any{"kind": "report"}},
		{ID: "cleanup-sessions", Payload: map[string]any{"kind": "cleanup"}},
	})
	s.fifo = sh.pipeline(stack, "Fifo", true, []dispatcher.WorkItem{
		{ID: "invoice-tenant-a", Group: "tenant-a", Payload: map[string]any{"kind": "invoice"}},
		{ID: "invoice-tenant-b", Group: "tenant-b", Payload: map[string]any{"kind": "invoice"}},
	})

	pipeline.Outputs(stack, "Standard", s.standard)
	pipeline.Outputs(stack, "Fifo", s.fifo)
	table.Outputs(stack, s.table)
	monitoring.Outputs(stack, s.monitoring)
	warnReservedConcurrency(stack)
	return s
}

// hardenedParts are the hardened profile's VPC and keys: one key for the log groups and the
// flow logs, one VPC for both pipelines, and one key for the data (the table and its
// backups, every queue). Two keys, so that who may read the logs and who may read the data
// are separate key policies.
func hardenedParts(stack awscdk.Stack) (*pipeline.Hardening, awskms.IKey) {
	logKey := awskms.NewKey(stack, jsii.String("LogKey"), &awskms.KeyProps{
		EnableKeyRotation: jsii.Bool(true),
		Description:       jsii.String("Log groups of the idempotent SQS pipelines (hardened)"),
	})
	dataKey := awskms.NewKey(stack, jsii.String("DataKey"), &awskms.KeyProps{
		EnableKeyRotation: jsii.Bool(true),
		Description:       jsii.String("Idempotency table, its backups and the queues of the idempotent SQS pipelines (hardened)"),
	})
	return &pipeline.Hardening{Vpc: pipeline.NewIsolatedVpc(stack, "Vpc", logKey), LogKey: logKey}, dataKey
}

// tableProps are the shared table's props: the hardened profile's backups under dataKey
// (nil when not hardened), and the capacity cfg asks for; nil for the defaults.
func (cfg Config) tableProps(dataKey awskms.IKey) *table.IdempotencyTableProps {
	var tp *table.IdempotencyTableProps
	if cfg.Hardened {
		tp = &table.IdempotencyTableProps{BackupRetention: pipeline.DefaultHardenedBackupRetention, EncryptionKey: dataKey}
	}
	if cfg.TableCapacity != nil || cfg.TableMaxWriteUnits != 0 {
		if tp == nil {
			tp = &table.IdempotencyTableProps{}
		}
		tp.ProvisionedCapacity = cfg.TableCapacity
		if cfg.TableMaxWriteUnits != 0 {
			tp.MaxOnDemandThroughput = &table.OnDemandThroughputCap{WriteUnits: cfg.TableMaxWriteUnits}
		}
	}
	return tp
}

// shared is what the stack's pipelines are built on: its settings, the one table and
// monitoring, and in the hardened profile its VPC and keys.
type shared struct {
	cfg        Config
	table      table.IdempotencyTable
	monitoring monitoring.PipelineMonitoring
	hardening  *pipeline.Hardening // nil: not hardened
	dataKey    awskms.IKey         // nil: each data store's default encryption
}

// pipeline builds one pipeline of the stack, name, sending items on cfg's schedule.
func (sh shared) pipeline(stack awscdk.Stack, name string, fifo bool, items []dispatcher.WorkItem) pipeline.Pipeline {
	cfg := sh.cfg
	consumerProps := &consumer.IdempotentConsumerProps{
		Function:           function.Options{Timeout: cfg.ConsumerTimeout, MemorySize: cfg.ConsumerMemoryMB},
		ProvisionedPollers: cfg.ConsumerPollers, MaxConcurrency: cfg.ConsumerMaxConcurrency,
	}
	if !fifo { // a FIFO mapping takes at most 10 records and no window
		consumerProps.BatchSize, consumerProps.MaxBatchingWindow = cfg.ConsumerBatchSize, cfg.ConsumerBatchWindow
	}
	var heartbeatProps *heartbeat.HeartbeatProps
	if cfg.Heartbeat != HeartbeatOff {
		heartbeatProps = &heartbeat.HeartbeatProps{Every: cfg.Heartbeat}
	}
	return pipeline.NewPipeline(stack, name, &pipeline.PipelineProps{
		Fifo:          fifo,
		EncryptionKey: sh.dataKey,
		Table:         sh.table,
		Monitoring:    sh.monitoring,
		Queue:         &queue.ProcessingQueueProps{Fifo: fifo, VisibilityTimeout: cfg.VisibilityTimeout, MaxMessageSize: cfg.MaxMessageSize},
		Consumer:      consumerProps,
		Hardening:     sh.hardening,
		Heartbeat:     heartbeatProps,
		Dispatcher: &dispatcher.ScheduledDispatcherProps{
			JobName:  name + "-job",
			Cron:     cfg.Schedule,
			TimeZone: cfg.TimeZone,
			Items:    items,
		},
	})
}

// WarningReservedConcurrency is the id of the synth warning for a stack whose functions
// reserve more concurrent executions than an account at Lambda's default quota accepts.
const WarningReservedConcurrency = "@idempotent-sqs/pipeline:reserved-concurrency"

// Lambda's default quota of concurrent executions per Region, and what it keeps unreserved:
// a reservation that leaves fewer unreserved is refused, so the deploy fails.
const (
	defaultAccountConcurrency = 1000
	keptUnreserved            = 100
)

// warnReservedConcurrency warns when the stack's functions reserve more in all than an
// account at the default quota accepts (the hardened profile reserves each consumer's
// MaxConcurrency, or in provisioned mode its pollers' Maximum x 10).
func warnReservedConcurrency(stack awscdk.Stack) {
	total, parts := 0, []string{}
	for _, c := range *stack.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		fn, ok := c.(awslambda.CfnFunction)
		if !ok || fn.ReservedConcurrentExecutions() == nil {
			continue
		}
		n := int(*fn.ReservedConcurrentExecutions())
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", *fn.Node().Scope().Node().Path(), n))
	}
	if limit := defaultAccountConcurrency - keptUnreserved; total > limit {
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String(WarningReservedConcurrency), jsii.String(fmt.Sprintf(
			"the stack's functions reserve %d concurrent executions (%s): an account at Lambda's default quota of %d concurrent executions a Region "+
				"accepts at most %d reserved, for every function in it (%d stay unreserved), so the deploy fails there; raise the account's quota first "+
				"(Service Quotas, \"Concurrent executions\"), or lower consumerPollers' maximum or consumerMaxConcurrency",
			total, strings.Join(parts, ", "), defaultAccountConcurrency, limit, keptUnreserved)))
	}
}

// Build adds the pipeline stack for cfg to app, with every cdk-nag pack attached
// (AddNagPacks: their reports land in cdk.out; an unsuppressed finding is an error
// annotation, which fails `cdk synth`).
func Build(app awscdk.App, cfg Config) PipelineStack {
	cfg = cfg.withDefaults()
	var env *awscdk.Environment
	if cfg.Account != "" || cfg.Region != "" {
		env = &awscdk.Environment{}
		if cfg.Account != "" {
			env.Account = jsii.String(cfg.Account)
		}
		if cfg.Region != "" {
			env.Region = jsii.String(cfg.Region)
		}
	}
	stack := NewPipelineStack(app, cfg.StackName(), &PipelineStackProps{
		StackProps: awscdk.StackProps{Env: env},
		Config:     cfg,
	})
	awscdk.Tags_Of(stack).Add(jsii.String("project"), jsii.String("idempotent-sqs-pipeline"), nil)
	awscdk.Tags_Of(stack).Add(jsii.String("stage"), jsii.String(cfg.Stage), nil)
	AddNagPacks(app, true)
	return stack
}

// AddNagPacks attaches every cdk-nag pack a reviewer of this stack runs: AwsSolutions,
// Serverless, NIST 800-53 R5, PCI DSS 3.2.1 and HIPAA Security. An unsuppressed finding is
// an error annotation, which fails `cdk synth`; reports writes each pack's CSV report into
// the cloud assembly. Call it on your own app to hold it to the same packs.
func AddNagPacks(app awscdk.App, reports bool) { nagpacks.Add(app, reports) }
