// Package pipeline composes the other constructs into one idempotent SQS pipeline:
//
//	schedule -> dispatcher -> processing queue (+ DLQ) -> idempotent consumer -> idempotency table
//
// with every part watched by a PipelineMonitoring. Another CDK app gets the whole thing in
// one call, and can still replace any part: pass an existing table or monitoring to share
// them between pipelines, or props for each part to tune it.
//
//	p := pipeline.NewPipeline(stack, "Orders", &pipeline.PipelineProps{
//		Dispatcher: &dispatcher.ScheduledDispatcherProps{Items: items},
//	})
//	p.Queue().Queue() // the queue other producers may send to
package pipeline

import (
	"cmp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/heartbeat"
	"github.com/idempotent-sqs/pipeline/constructs/internal/gofn"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// PipelineProps configures a Pipeline. Every field is optional.
type PipelineProps struct {
	// Fifo makes the processing queue (and its DLQ) FIFO. Default false (standard).
	Fifo bool
	// EncryptionKey is one customer managed KMS key for everything the pipeline creates that
	// holds data: the new table, the processing queue and its DLQ, the dispatcher's schedule
	// DLQ and failure queue, and the new monitoring's topics and undelivered-notifications
	// queue where it creates them (a given Topic is used as it is). It fills the
	// EncryptionKey of TableProps, Queue, Dispatcher and MonitoringProps where they leave it
	// nil; a part given another key is an error (give the parts their own keys and leave
	// this nil instead). An existing Table, ExistingQueue or Monitoring keeps its own
	// encryption. Default nil: each part's default (AWS managed keys, and a key of its own
	// for the monitoring's topics).
	EncryptionKey awskms.IKey
	// Table is an existing idempotency table to use, e.g. one shared by several pipelines
	// (each consumer keeps its own key prefix). Default: a new table from TableProps.
	// Give Table or TableProps, not both.
	Table table.IdempotencyTable
	// TableProps configure the new table when Table is nil. Default: the table defaults.
	TableProps *table.IdempotencyTableProps
	// Monitoring is an existing PipelineMonitoring to add this pipeline's alarms to (one
	// topic and dashboard for several pipelines). Default: a new one from MonitoringProps.
	// Give Monitoring or MonitoringProps, not both.
	Monitoring monitoring.PipelineMonitoring
	// MonitoringProps configure the new monitoring when Monitoring is nil.
	MonitoringProps *monitoring.PipelineMonitoringProps
	// Queue configures the processing queue. Leave Queue.Fifo and Queue.ConsumerTimeout
	// unset: the pipeline sets them from Fifo and the consumer's Timeout. (Queue.Fifo true
	// on a standard pipeline, or a ConsumerTimeout other than the consumer's, is an error.)
	Queue *queue.ProcessingQueueProps
	// ExistingQueue is a processing queue with its DLQ that exists already, e.g. from
	// queue.ImportProcessingQueue: the pipeline's consumer (and dispatcher) use it instead of
	// a new one, and the monitoring watches it. Its FIFO-ness decides; Fifo may be left
	// false (true on a standard queue is an error). Give ExistingQueue or Queue, not both.
	// Default nil: a new queue from Queue.
	ExistingQueue queue.ProcessingQueue
	// Consumer configures the consumer. Queue and Table are set by the pipeline; setting
	// them is an error. Default: the consumer defaults (30 s timeout), except KeyPrefix,
	// which defaults to the pipeline's id so pipelines can share a table.
	Consumer *consumer.IdempotentConsumerProps
	// Dispatcher configures the scheduled dispatcher. Queue is set by the pipeline.
	// Default nil: no dispatcher, for queues fed by other producers.
	Dispatcher *dispatcher.ScheduledDispatcherProps
	// Heartbeat sends a probe through the pipeline every Heartbeat.Every (a schedule sending
	// to the queue; the consumer completes it with a no-op) and alarms (paging) when none
	// completed in two intervals in a row, so silent breakage pages with zero traffic; see
	// package heartbeat for what it proves and what it costs (about $2.55 a month a pipeline
	// at 5 minutes on an otherwise idle pipeline, $0.45 on one with traffic). Queue is set by the pipeline; setting it is an error. Default nil: no
	// heartbeat.
	Heartbeat *heartbeat.HeartbeatProps
	// Hardening turns on the controls regulated reviews ask for that cost money or change
	// the network (functions in a VPC, log groups under a customer managed key, reserved
	// concurrency, the table in AWS Backup); see Hardening. A setting a part's own props
	// make wins. Default nil: off, each with its reason recorded for cdk-nag.
	Hardening *Hardening
}

// Pipeline is one dispatcher-queue-consumer chain with its table and alarms.
type Pipeline interface {
	constructs.IConstruct
	Queue() queue.ProcessingQueue
	Table() table.IdempotencyTable
	Consumer() consumer.IdempotentConsumer
	// Dispatcher is nil when the pipeline was built without one.
	Dispatcher() dispatcher.ScheduledDispatcher
	// Heartbeat is nil when the pipeline was built without one.
	Heartbeat() heartbeat.Heartbeat
	Monitoring() monitoring.PipelineMonitoring
}

type pipeline struct {
	constructs.Construct
	queue      queue.ProcessingQueue
	table      table.IdempotencyTable
	consumer   consumer.IdempotentConsumer
	dispatcher dispatcher.ScheduledDispatcher
	heartbeat  heartbeat.Heartbeat
	monitoring monitoring.PipelineMonitoring
}

func (p *pipeline) Queue() queue.ProcessingQueue               { return p.queue }
func (p *pipeline) Table() table.IdempotencyTable              { return p.table }
func (p *pipeline) Consumer() consumer.IdempotentConsumer      { return p.consumer }
func (p *pipeline) Dispatcher() dispatcher.ScheduledDispatcher { return p.dispatcher }
func (p *pipeline) Monitoring() monitoring.PipelineMonitoring  { return p.monitoring }
func (p *pipeline) Heartbeat() heartbeat.Heartbeat             { return p.heartbeat }

const constructKind = "Pipeline"

// NewPipeline builds the pipeline. Child construct ids ("Table", "Queue", "Consumer",
// "Dispatcher", "Heartbeat", "Monitoring") are part of the public contract: logical ids derive from them.
//
// id is a plain string, like every other constructor of this module.
func NewPipeline(scope constructs.Construct, id string, props *PipelineProps) Pipeline {
	if props == nil {
		props = &PipelineProps{}
	}
	qp, cp := props.queueProps(), props.consumerProps()
	check(scope, id, props, qp, cp)

	p := &pipeline{}
	constructs.NewConstruct_Override(p, scope, jsii.String(id))
	h := props.Hardening
	logKey, fnSG := p.hardened(h, props)
	p.buildStores(props, qp, cp)

	cp.Queue, cp.Table = p.queue, p.table
	if cp.KeyPrefix == "" {
		// The consumer's own default (its construct id, "Consumer") would be the same in
		// every pipeline; pipelines sharing a table need distinct namespaces.
		cp.KeyPrefix = id
	}
	if h != nil {
		hardenConsumer(h, &cp, fnSG, logKey)
		gofn.Sync(&cp, props.consumerGiven())
	}
	p.consumer = consumer.NewIdempotentConsumer(p, "Consumer", &cp)

	label := id
	p.monitoring.WatchQueue(label, p.queue.Queue(), p.queue.DeadLetterQueue())
	p.monitoring.WatchConsumer(label, p.consumer.Function(), p.queue.Queue())
	// Always: a table is watched once per app however many pipelines share it and whoever
	// created it (monitoring's Watch* return the first watch's alarms), and a table nobody
	// else watches, such as an imported one, is not left without alarms.
	p.monitoring.WatchTable(label, p.table.Table())
	p.buildDispatcher(label, props, fnSG, logKey)
	if props.Heartbeat != nil {
		hp := *props.Heartbeat
		hp.Queue = p.queue
		p.heartbeat = heartbeat.NewHeartbeat(p, "Heartbeat", &hp)
		p.monitoring.WatchHeartbeat(label, p.consumer.Function(), p.heartbeat.Schedule(), p.heartbeat.Every())
	}
	return p
}

// hardened returns, with Hardening, the log groups' key (Hardening.LogKey, the pipeline's
// key, or a new one) and the functions' security group in the hardened VPC, one for both,
// made when the first function that takes it is built; without, nil and an unused func.
func (p *pipeline) hardened(h *Hardening, props *PipelineProps) (awskms.IKey, func() []awsec2.ISecurityGroup) {
	var logKey awskms.IKey
	// fnSG is the functions' security group in the hardened VPC, one for both, made when
	// the first function that takes it is built.
	var sg awsec2.ISecurityGroup
	fnSG := func() []awsec2.ISecurityGroup {
		if sg == nil {
			sg = h.securityGroup(p)
		}
		return []awsec2.ISecurityGroup{sg}
	}
	if h != nil {
		logKey = keyFor(h.LogKey, props.EncryptionKey)
		if logKey == nil {
			logKey = awskms.NewKey(p, jsii.String("LogKey"), &awskms.KeyProps{
				EnableKeyRotation: jsii.Bool(true),
				Description:       jsii.String("Log groups of the functions of " + *p.Node().Path()),
			})
		}
	}
	return logKey, fnSG
}

// buildStores builds (or takes from props) the table, the monitoring and the queue.
func (p *pipeline) buildStores(props *PipelineProps, qp queue.ProcessingQueueProps, cp consumer.IdempotentConsumerProps) {
	h := props.Hardening
	p.table = props.Table
	if p.table == nil {
		tp := props.tableProps()
		tp.EncryptionKey = keyFor(tp.EncryptionKey, props.EncryptionKey)
		if h != nil && tp.BackupRetention == 0 {
			tp.BackupRetention = cmp.Or(h.BackupRetention, DefaultHardenedBackupRetention)
		}
		p.table = table.NewIdempotencyTable(p, "Table", &tp)
	}
	p.monitoring = props.Monitoring
	if p.monitoring == nil {
		mp := props.monitoringProps()
		// Only where the monitoring creates something to encrypt: topics of its own (no Topic
		// given), or the undelivered-notifications queue of email subscriptions.
		if mp.Topic == nil || len(mp.AlarmEmails)+len(mp.TicketEmails) > 0 {
			mp.EncryptionKey = keyFor(mp.EncryptionKey, props.EncryptionKey)
		}
		p.monitoring = monitoring.NewPipelineMonitoring(p, "Monitoring", &mp)
	}

	p.queue = props.ExistingQueue
	if p.queue == nil {
		// The queue's visibility timeout derives from the consumer's timeout (6x).
		qp.Fifo, qp.ConsumerTimeout = props.Fifo, cp.Function.Timeout
		if !gofn.ValidTimeout(cp.Function.Timeout) {
			// The consumer reports the timeout, by the prop the user set, with all its other
			// problems; the queue (built first) takes the default meanwhile instead of failing
			// on a ConsumerTimeout the user never set.
			qp.ConsumerTimeout = queue.DefaultConsumerTimeout
		}
		qp.EncryptionKey = keyFor(qp.EncryptionKey, props.EncryptionKey)
		p.queue = queue.NewProcessingQueue(p, "Queue", &qp)
	}
}

// hardenConsumer places the consumer in the hardened VPC, encrypts its logs with logKey and
// reserves the concurrency its event source drives, where its own props say nothing.
func hardenConsumer(h *Hardening, cp *consumer.IdempotentConsumerProps, fnSG func() []awsec2.ISecurityGroup, logKey awskms.IKey) {
	if cp.Function.Vpc == nil && len(cp.Function.SecurityGroups) == 0 {
		cp.Function.SecurityGroups = fnSG()
	}
	cp.Function.Vpc, cp.Function.VpcSubnets = h.placement(cp.Function.Vpc, cp.Function.VpcSubnets)
	cp.Function.LogGroupEncryptionKey = keyFor(cp.Function.LogGroupEncryptionKey, logKey)
	if cp.Function.ReservedConcurrentExecutions == 0 {
		cp.Function.ReservedConcurrentExecutions = cmp.Or(cp.MaxConcurrency, consumer.DefaultMaxConcurrency)
		if pp := cp.ProvisionedPollers; pp != nil { // what the pollers' maximum drives
			cp.Function.ReservedConcurrentExecutions = pp.Maximum * consumer.InvocationsPerPoller
		}
	}
}

// buildDispatcher builds the dispatcher props ask for, hardened as the consumer is, and
// watches it.
func (p *pipeline) buildDispatcher(label string, props *PipelineProps, fnSG func() []awsec2.ISecurityGroup, logKey awskms.IKey) {
	h := props.Hardening
	if props.Dispatcher != nil {
		dp := props.dispatcherProps()
		dp.Queue = p.queue
		dp.EncryptionKey = keyFor(dp.EncryptionKey, props.EncryptionKey)
		if h != nil {
			if dp.Function.Vpc == nil && len(dp.Function.SecurityGroups) == 0 {
				dp.Function.SecurityGroups = fnSG()
			}
			dp.Function.Vpc, dp.Function.VpcSubnets = h.placement(dp.Function.Vpc, dp.Function.VpcSubnets)
			dp.Function.LogGroupEncryptionKey = keyFor(dp.Function.LogGroupEncryptionKey, logKey)
			if dp.Function.ReservedConcurrentExecutions == 0 {
				dp.Function.ReservedConcurrentExecutions = DispatcherReservedConcurrency
			}
			_, given := gofn.FromProps(props.Dispatcher)
			gofn.Sync(&dp, given)
		}
		p.dispatcher = dispatcher.NewScheduledDispatcher(p, "Dispatcher", &dp)
		p.monitoring.WatchDispatcher(label, p.dispatcher.Function(), p.dispatcher.Schedule(),
			p.dispatcher.ScheduleDeadLetterQueue(), p.dispatcher.FailureQueue())
	}
}

// keyFor is the key a part is encrypted with: its own, else the pipeline's.
func keyFor(own, pipeline awskms.IKey) awskms.IKey {
	if own != nil {
		return own
	}
	return pipeline
}

// tableProps, monitoringProps, dispatcherProps and queueProps copy the parts' props (the zero
// value when nil), so the pipeline fills in its own settings without changing the caller's.
func (props *PipelineProps) tableProps() table.IdempotencyTableProps {
	if props.TableProps == nil {
		return table.IdempotencyTableProps{}
	}
	return *props.TableProps
}

func (props *PipelineProps) monitoringProps() monitoring.PipelineMonitoringProps {
	if props.MonitoringProps == nil {
		return monitoring.PipelineMonitoringProps{}
	}
	return *props.MonitoringProps
}

func (props *PipelineProps) dispatcherProps() dispatcher.ScheduledDispatcherProps {
	if props.Dispatcher == nil {
		return dispatcher.ScheduledDispatcherProps{}
	}
	dp := *props.Dispatcher
	dp.Function, _ = gofn.FromProps(&dp)
	return dp
}

func (props *PipelineProps) queueProps() queue.ProcessingQueueProps {
	var qp queue.ProcessingQueueProps
	if props.Queue != nil {
		qp = *props.Queue
	}
	return qp
}

func (props *PipelineProps) consumerProps() consumer.IdempotentConsumerProps {
	var cp consumer.IdempotentConsumerProps
	if props.Consumer != nil {
		cp = *props.Consumer
	}
	// Function as the consumer will read it, the deprecated fields included: the pipeline
	// sets what they leave unset.
	cp.Function, _ = gofn.FromProps(&cp)
	if cp.Function.Timeout == 0 {
		cp.Function.Timeout = queue.DefaultConsumerTimeout
	}
	return cp
}

// consumerGiven says which of the consumer's function options the user set through their
// deprecated fields.
func (props *PipelineProps) consumerGiven() gofn.Given {
	if props.Consumer == nil {
		return gofn.Given{}
	}
	_, given := gofn.FromProps(props.Consumer)
	return given
}

// check rejects combinations the pipeline cannot honour; the parts validate their own props.
func check(scope constructs.Construct, id string, props *PipelineProps, qp queue.ProcessingQueueProps, cp consumer.IdempotentConsumerProps) {
	v := validate.NewIn(constructKind, scope, id)
	if props.Hardening != nil {
		props.Hardening.check(v, props)
	}
	if props.Table != nil && props.TableProps != nil {
		v.Addf("Table", "both Table and TableProps are set; give an existing table or props for a new one, not both")
	}
	if q := props.ExistingQueue; q != nil {
		if props.Queue != nil {
			v.Addf("ExistingQueue", "both ExistingQueue and Queue are set; give an existing queue or props for a new one, not both")
		}
		if props.Fifo && !q.Fifo() {
			v.Add("Fifo", true, "ExistingQueue is a standard queue; leave Fifo false (the existing queue decides)")
		}
	}
	if props.Monitoring != nil && props.MonitoringProps != nil {
		v.Addf("Monitoring", "both Monitoring and MonitoringProps are set; give an existing monitoring or props for a new one, not both")
	}
	// A Go bool cannot say "unset": false is what an untouched Queue.Fifo holds, so only
	// true on a standard pipeline contradicts anything.
	if qp.Fifo && !props.Fifo {
		v.Add("Queue.Fifo", qp.Fifo, "leave it unset and set the pipeline's Fifo prop instead")
	}
	if qp.ConsumerTimeout != 0 && qp.ConsumerTimeout != cp.Function.Timeout {
		timeout := "Consumer." + props.consumerGiven().Prop("Timeout")
		v.Add("Queue.ConsumerTimeout", qp.ConsumerTimeout,
			"leave it unset: the pipeline derives it from "+timeout+" ("+cp.Function.Timeout.String()+")")
	}
	if props.Consumer != nil && (props.Consumer.Queue != nil || props.Consumer.Table != nil) {
		v.Addf("Consumer.Queue", "Consumer.Queue/Table are set; leave them nil, the pipeline wires its own queue and table")
	}
	if k := props.EncryptionKey; k != nil {
		for _, part := range []struct {
			prop string
			key  awskms.IKey
		}{
			{"TableProps.EncryptionKey", props.tableProps().EncryptionKey},
			{"Queue.EncryptionKey", qp.EncryptionKey},
			{"MonitoringProps.EncryptionKey", props.monitoringProps().EncryptionKey},
			{"Dispatcher.EncryptionKey", props.dispatcherProps().EncryptionKey},
		} {
			if part.key != nil && part.key != k {
				v.Addf(part.prop, "a different key than EncryptionKey; leave it nil to use EncryptionKey, or leave EncryptionKey nil and give every part its own key")
			}
		}
	}
	if props.Dispatcher != nil && props.Dispatcher.Queue != nil {
		v.Addf("Dispatcher.Queue", "Dispatcher.Queue is set; leave it nil, the pipeline wires its own queue")
	}
	if props.Heartbeat != nil && props.Heartbeat.Queue != nil {
		v.Addf("Heartbeat.Queue", "Heartbeat.Queue is set; leave it nil, the pipeline sends the heartbeat to its own queue")
	}
	v.Check()
}

// Outputs adds stack outputs a user needs after deploy (queue URL, DLQ URL, consumer
// function, record TTL, key prefix, idempotency table, composite alarm, and the
// dispatcher's and the heartbeat's) under the given prefix: every output pipelinectl reads
// for a pipeline (names in package contract), so a stack built from the constructs works
// with every pipelinectl command, as the reference stack does. Give each pipeline of a
// stack its own prefix; pipelinectl finds a pipeline by it (--pipeline).
func Outputs(stack awscdk.Stack, prefix string, p Pipeline) {
	out := func(name, desc string, value *string) {
		awscdk.NewCfnOutput(stack, jsii.String(prefix+name), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out(contract.OutQueueURL, "URL of the "+prefix+" processing queue (producers send here)", p.Queue().Queue().QueueUrl())
	out(contract.OutDLQURL, "URL of the "+prefix+" dead-letter queue (inspect and redrive from here)", p.Queue().DeadLetterQueue().QueueUrl())
	out(contract.OutConsumerFunction, "The "+prefix+" consumer Lambda function", p.Consumer().Function().FunctionName())
	out(contract.OutRecordTTL, "How long the "+prefix+" consumer keeps completed idempotency records (pipelinectl dlq redrive refuses messages older than this)",
		jsii.String(p.Consumer().RecordTTL().String()))
	out(contract.OutKeyPrefix, "The "+prefix+" consumer's key prefix: its records' ids are <prefix>#<key> (pipelinectl record and verify read it)",
		jsii.String(p.Consumer().KeyPrefix()))
	out(contract.OutTableName, "The DynamoDB idempotency table the "+prefix+" consumer writes", p.Table().Table().TableName())
	if m := p.Monitoring(); m != nil && m.Unhealthy() != nil {
		out(contract.OutUnhealthy, "Composite alarm in ALARM while any paging alarm of the "+prefix+" pipeline's monitoring is (pipelinectl status and verify read its children)",
			m.Unhealthy().AlarmName())
	}
	if d := p.Dispatcher(); d != nil {
		out(contract.OutDispatcherFunction, "The "+prefix+" dispatcher Lambda function (pipelinectl backfill invokes it)", d.Function().FunctionName())
		out(contract.OutSchedule, "The "+prefix+" dispatcher's schedule (pipelinectl backfill reads its cron, zone and input)", d.Schedule().ScheduleName())
		out(contract.OutScheduleGroup, "The group of the "+prefix+" dispatcher's schedule", d.ScheduleGroup().ScheduleGroupName())
	}
	if hb := p.Heartbeat(); hb != nil {
		out(contract.OutHeartbeatSchedule, "The "+prefix+" heartbeat's schedule (disable it, with its alarm's actions, for planned maintenance)", hb.Schedule().ScheduleName())
		out(contract.OutHeartbeatScheduleGroup, "The group of the "+prefix+" heartbeat's schedule", hb.ScheduleGroup().ScheduleGroupName())
	}
}
