package monitoring

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Consumer and dispatcher counters, taken from functions/telemetry so the dashboard charts
// exactly the names the functions register. The functions publish them with one dimension,
// telemetry.DimensionService, set to their Lambda function name (AWS_LAMBDA_FUNCTION_NAME,
// telemetry.ServiceFromEnv): the name fn.FunctionName() resolves to, so each watched
// function gets its own series.
var (
	consumerMetrics   = telemetry.ConsumerMetrics()
	dispatcherMetrics = telemetry.DispatcherMetrics()
)

// schedulerNamespace and its metric names (EventBridge Scheduler user guide, "Monitoring with
// CloudWatch"; the names awsscheduler.ScheduleGroup's Metric* methods use).
const (
	schedulerNamespace        = "AWS/Scheduler"
	schedulerGroupDimension   = "ScheduleGroup"
	defaultScheduleGroup      = "default"
	metricSchedulerAttempts   = "InvocationAttemptCount"
	metricSchedulerTargetErrs = "TargetErrorCount"
	metricSchedulerThrottled  = "TargetErrorThrottledCount"
	metricSchedulerDropped    = "InvocationDroppedCount"
	metricSchedulerSentToDLQ  = "InvocationsSentToDeadLetterCount"
	metricSchedulerDLQFailed  = "InvocationsFailedToBeSentToDeadLetterCount"
)

func (m *pipelineMonitoring) WatchQueue(label string, source, deadLetter awssqs.IQueue) QueueAlarms {
	m.check("Queue", label, required{"source", source == nil}, required{"deadLetter", deadLetter == nil})
	key := watchKey("Queue", watchedResource{source, source.QueueArn()}, watchedResource{deadLetter, deadLetter.QueueArn()})
	if prior, ok := watchesOf(m).queues[key]; ok {
		return prior
	}
	scope := m.begin("Queue", label)
	p := m.s.period
	w := &queueWatch{label: label, src: *source.QueueName(), dlq: *deadLetter.QueueName(), srcArn: *source.QueueArn(),
		stackName: *awscdk.Aws_STACK_NAME(), consumer: consumerOf(m, source).in(m), s: &m.s,
		dlqVisible: deadLetter.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", "")),
		oldest:     source.MetricApproximateAgeOfOldestMessage(metricOpts(p, "Maximum", "")),
		backlog:    source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Minimum", "")),
	}
	a, made := makeAlarms[QueueAlarms](m, scope, w, queueAlarms)
	src, dlq := w.src, w.dlq

	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Queue %s\nSource queue `%s`, dead-letter queue `%s`", label, src, dlq)),
		graph("Messages on the source queue", []awscloudwatch.IMetric{
			source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "visible")),
			source.MetricApproximateNumberOfMessagesNotVisible(metricOpts(p, "Maximum", "in flight")),
		}, []awscloudwatch.IMetric{labelled(w.oldest, "oldest message age (s)")}),
		graph("Source throughput", []awscloudwatch.IMetric{
			source.MetricNumberOfMessagesSent(metricOpts(p, "Sum", "sent")),
			source.MetricNumberOfMessagesReceived(metricOpts(p, "Sum", "received")),
			source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "deleted")),
		}, nil),
		graph("Dead-letter queue", []awscloudwatch.IMetric{labelled(w.dlqVisible, "visible")}, nil),
		alarmStatus("Alarms: queue "+label, made...),
	)
	// The DLQ alarm (the list's first) names the consumer once WatchConsumer is called on
	// source.
	watchesOf(m).redescribe[queueKey(source)] = func(c consumerName) {
		if w.consumer = c.in(m); w.consumer != "" {
			d := queueAlarms[0]
			made[0].Node().DefaultChild().(awscloudwatch.CfnAlarm).SetAlarmDescription(
				jsii.String(m.describe(d.describe(w), d.severity, d.runbook)))
		}
	}
	watchesOf(m).queues[key] = a
	return a
}

// consumerName is the consumer function WatchConsumer was called with for a source queue.
type consumerName struct {
	name string
	fn   awslambda.IFunction
}

// in is the name to write into an alarm of m: the function's name when it is a literal or
// the function is in m's stack, else "" (a reference to another stack's function would make
// m's stack depend on it, and that stack may depend on m's already: a cycle).
func (c consumerName) in(m *pipelineMonitoring) string {
	if c.fn == nil || (validate.Unresolved(c.name) && *awscdk.Stack_Of(c.fn).Node().Path() != *awscdk.Stack_Of(m.Construct).Node().Path()) {
		return ""
	}
	return c.name
}

// consumerOf is the consumer function WatchConsumer was called with for source (in any
// monitoring of the app), or none before that.
func consumerOf(m *pipelineMonitoring, source awssqs.IQueue) consumerName {
	return watchesOf(m).consumerOf[queueKey(source)]
}

// queueKey is source's key in the record of the consumers watched and of the DLQ alarms to
// describe again.
func queueKey(source awssqs.IQueue) string {
	return watchKey("Queue", watchedResource{source, source.QueueArn()})
}

func (m *pipelineMonitoring) WatchConsumer(label string, fn awslambda.IFunction, source awssqs.IQueue) ConsumerAlarms {
	m.check("Consumer", label, required{"fn", fn == nil}, required{"source", source == nil})
	key := watchKey("Consumer", watchedResource{fn, fn.FunctionArn()}, watchedResource{source, source.QueueArn()})
	if prior, ok := watchesOf(m).consumers[key]; ok {
		return prior
	}
	scope := m.begin("Consumer", label)
	name, src := *fn.FunctionName(), *source.QueueName()
	watchesOf(m).consumerOf[queueKey(source)] = consumerName{name, fn}
	if redescribe, ok := watchesOf(m).redescribe[queueKey(source)]; ok {
		redescribe(consumerName{name, fn})
	}
	w := &consumerWatch{label: label, name: name, src: src, fn: fn, s: &m.s, stalled: stalledMetric(source, m.s.period)}
	a, made := makeAlarms[ConsumerAlarms](m, scope, w, consumerAlarms)
	m.consumerRow(w, source, made)
	watchesOf(m).consumers[key] = a
	return a
}

// stalledMetric is 1 in a period when messages wait on source and none are deleted, else 0.
// Messages "wait" when any are on the queue, visible or in flight: a consumer that receives
// and fails every record keeps them in flight, one that stopped receiving leaves them
// visible, and either way nothing is deleted. FILL keeps a missing data point (idle queue)
// from hiding the other series.
func stalledMetric(source awssqs.IQueue, p time.Duration) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF((FILL(visible, 0) + FILL(inflight, 0)) > 0 AND FILL(deleted, 0) == 0, 1, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"visible":  source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "")),
			"inflight": source.MetricApproximateNumberOfMessagesNotVisible(metricOpts(p, "Maximum", "")),
			"deleted":  source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "")),
		},
		Label:  jsii.String("stalled (1 = messages waiting, none deleted)"),
		Period: cdkDuration(p),
	})
}

// consumerRow adds the consumer's row to the dashboard: its invocations, its records by
// outcome, what it acknowledges, its alarms and, when the mapping publishes them, the event
// source mapping's own counts.
func (m *pipelineMonitoring) consumerRow(w *consumerWatch, source awssqs.IQueue, alarms []awscloudwatch.Alarm) {
	fn, p := w.fn, w.s.period
	records := make([]awscloudwatch.IMetric, len(consumerMetrics))
	for i, n := range consumerMetrics {
		records[i] = m.emfMetric(n, w.name, p)
	}
	widgets := []awscloudwatch.IWidget{
		header(fmt.Sprintf("### Consumer %s\nFunction `%s` reading queue `%s`", w.label, w.name, w.src)),
		graph("Invocations", []awscloudwatch.IMetric{
			fn.MetricInvocations(metricOpts(p, "Sum", "invocations")),
			fn.MetricErrors(metricOpts(p, "Sum", "errors")),
			fn.MetricThrottles(metricOpts(p, "Sum", "throttles")),
		}, []awscloudwatch.IMetric{fn.MetricDuration(metricOpts(p, "p99", "duration p99 (ms)"))}),
		graph("Records", records, nil),
		graph("Acknowledgement", []awscloudwatch.IMetric{
			source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "deleted")),
			source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "visible")),
		}, []awscloudwatch.IMetric{w.stalled}),
		alarmStatus("Alarms: consumer "+w.label, alarms...),
	}
	if id := mappingWithMetrics(fn, source); id != nil {
		mapping := func(metric, label string) awscloudwatch.IMetric {
			return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("AWS/Lambda"), MetricName: jsii.String(metric),
				DimensionsMap: &map[string]*string{"EventSourceMappingUUID": id},
				Statistic:     jsii.String("Sum"), Period: cdkDuration(p), Label: jsii.String(label),
			})
		}
		widgets = append(widgets, graph("Event source mapping", []awscloudwatch.IMetric{
			mapping("PolledEventCount", "polled"), mapping("InvokedEventCount", "invoked"),
			mapping("FailedInvokeEventCount", "failed to invoke"), mapping("DeletedEventCount", "deleted"),
			mapping("FilteredOutEventCount", "filtered out"),
		}, nil))
	}
	m.dashboard.AddWidgets(widgets...)
}

// mappingWithMetrics is the id (UUID) of fn's event source mapping from source when fn is a
// function of this app and the mapping publishes its EventCount metrics (MetricsConfig,
// the consumer construct's default), else nil. No alarm watches these: for an SQS source a
// failed invocation is already the Errors alarm, records that keep failing end in the DLQ
// (its alarm), and a mapping that stops is the Stalled alarm; the chart shows which.
func mappingWithMetrics(fn awslambda.IFunction, source awssqs.IQueue) *string {
	stack := awscdk.Stack_Of(fn)
	want := fmt.Sprint(stack.Resolve(source.QueueArn()))
	for _, child := range *fn.Node().Children() {
		cfn, ok := child.Node().DefaultChild().(awslambda.CfnEventSourceMapping)
		if !ok || fmt.Sprint(stack.Resolve(cfn.EventSourceArn())) != want || cfn.MetricsConfig() == nil {
			continue
		}
		if strings.Contains(fmt.Sprint(stack.Resolve(cfn.MetricsConfig())), "EventCount") {
			return cfn.Ref()
		}
	}
	return nil
}

func (m *pipelineMonitoring) WatchDispatcher(label string, fn awslambda.IFunction, schedule awsscheduler.ISchedule, scheduleDeadLetter, failureQueue awssqs.IQueue) DispatcherAlarms {
	m.check("Dispatcher", label, required{"fn", fn == nil}, required{"schedule", schedule == nil},
		required{"scheduleDeadLetter", scheduleDeadLetter == nil}, required{"failureQueue", failureQueue == nil})
	key := watchKey("Dispatcher", watchedResource{fn, fn.FunctionArn()}, watchedResource{schedule, schedule.ScheduleArn()},
		watchedResource{scheduleDeadLetter, scheduleDeadLetter.QueueArn()}, watchedResource{failureQueue, failureQueue.QueueArn()})
	if prior, ok := watchesOf(m).dispatchers[key]; ok {
		return prior
	}
	scope := m.begin("Dispatcher", label)
	name, sched := *fn.FunctionName(), *schedule.ScheduleName()
	sdlq, fq := *scheduleDeadLetter.QueueName(), *failureQueue.QueueName()
	group := defaultScheduleGroup
	if g := schedule.ScheduleGroup(); g != nil {
		group = *g.ScheduleGroupName()
	}
	p := m.s.period
	scheduler := func(metricName string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String(schedulerNamespace),
			MetricName:    jsii.String(metricName),
			DimensionsMap: &map[string]*string{schedulerGroupDimension: jsii.String(group)},
			Period:        cdkDuration(p),
			Statistic:     jsii.String("Sum"),
		})
	}
	w := &dispatcherWatch{label: label, name: name, sched: sched, group: group, sdlq: sdlq, fq: fq, fn: fn, s: &m.s, scheduler: scheduler,
		sdlqVisible:  scheduleDeadLetter.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", "")),
		fqVisible:    failureQueue.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", "")),
		targetErrors: scheduler(metricSchedulerTargetErrs),
		dropped:      scheduler(metricSchedulerDropped),
		dlqFailed:    scheduler(metricSchedulerDLQFailed),
	}
	a, made := makeAlarms[DispatcherAlarms](m, scope, w, dispatcherAlarms)
	m.dispatcherRow(w, made)
	watchesOf(m).dispatchers[key] = a
	return a
}

// dispatcherRow adds the dispatcher's row to the dashboard.
func (m *pipelineMonitoring) dispatcherRow(w *dispatcherWatch, alarms []awscloudwatch.Alarm) {
	label, name, group, fn, p, scheduler := w.label, w.name, w.group, w.fn, w.s.period, w.scheduler
	items := make([]awscloudwatch.IMetric, len(dispatcherMetrics))
	for i, n := range dispatcherMetrics {
		items[i] = m.emfMetric(n, name, p)
	}
	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Dispatcher %s\nFunction `%s`, schedule `%s` (group `%s`), schedule DLQ `%s`, on-failure queue `%s`", label, name, w.sched, group, w.sdlq, w.fq)),
		graph("Invocations", []awscloudwatch.IMetric{
			fn.MetricInvocations(metricOpts(p, "Sum", "invocations")),
			fn.MetricErrors(metricOpts(p, "Sum", "errors")),
			fn.MetricThrottles(metricOpts(p, "Sum", "throttles")),
		}, []awscloudwatch.IMetric{fn.MetricDuration(metricOpts(p, "Maximum", "duration max (ms)"))}),
		graph("Schedule group "+group, []awscloudwatch.IMetric{
			labelled(scheduler(metricSchedulerAttempts), "attempts"),
			labelled(w.targetErrors, "target errors"),
			labelled(scheduler(metricSchedulerThrottled), "target throttled"),
			labelled(w.dropped, "dropped"),
			labelled(scheduler(metricSchedulerSentToDLQ), "sent to DLQ"),
			labelled(w.dlqFailed, "failed to reach DLQ"),
		}, nil),
		graph("Items", items, nil),
		graph("Failed runs", []awscloudwatch.IMetric{labelled(w.sdlqVisible, "schedule DLQ"), labelled(w.fqVisible, "on-failure queue")}, nil),
		alarmStatus("Alarms: dispatcher "+label, alarms...),
	)
}

// heartbeatPeriods is how many periods of the heartbeat's interval in a row must see no
// completed heartbeat before the alarm fires: Scheduler fires a rate schedule at a fixed
// offset, so each period holds one heartbeat, but a completion near a period's edge can
// slip into the next one; two empty periods in a row cannot happen that way.
const heartbeatPeriods = 2

func (m *pipelineMonitoring) WatchHeartbeat(label string, fn awslambda.IFunction, schedule awsscheduler.ISchedule, every time.Duration) HeartbeatAlarms {
	m.check("Heartbeat", label, required{"fn", fn == nil}, required{"schedule", schedule == nil})
	if every < time.Minute || every > 12*time.Hour || every%time.Minute != 0 {
		p := validate.New(constructKind, *m.Node().Path())
		p.Add("WatchHeartbeat every", every, "use the heartbeat's interval: whole minutes from 1m to 12h (heartbeat.Heartbeat's Every())")
		p.Check()
	}
	key := watchKey("Heartbeat", watchedResource{fn, fn.FunctionArn()}, watchedResource{schedule, schedule.ScheduleArn()})
	if prior, ok := watchesOf(m).heartbeats[key]; ok {
		return prior
	}
	scope := m.begin("Heartbeat", label)
	name := *fn.FunctionName()
	completed := m.emfMetric(telemetry.MetricProbeCompleted, name, every)
	// Without the chart's label, which would make CloudFormation's alarm a one-metric math
	// alarm (a Metrics array) instead of a plain metric alarm.
	unlabelled := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(m.s.namespace),
		MetricName:    jsii.String(telemetry.MetricProbeCompleted),
		DimensionsMap: &map[string]*string{telemetry.DimensionService: jsii.String(name)},
		Period:        cdkDuration(every),
		Statistic:     jsii.String("Sum"),
	})

	w := &heartbeatWatch{label: label, name: name, every: every, completed: unlabelled}
	a, made := makeAlarms[HeartbeatAlarms](m, scope, w, heartbeatAlarms)
	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Heartbeat %s\nA probe every %s through consumer `%s`", label, shortDuration(every), name)),
		graph("Heartbeats completed", []awscloudwatch.IMetric{completed}, nil),
		alarmStatus("Alarms: heartbeat "+label, made...),
	)
	watchesOf(m).heartbeats[key] = a
	return a
}

// tableOperations are the item operations whose SystemErrors (published per operation) the
// alarm sums. This repository's idempotency store makes only UpdateItem, the one action its
// grant allows; the other three are what Powertools for AWS Lambda's idempotency stores in
// other languages call on a table that shares the layout (constructs/table keeps it for them).
var tableOperations = []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem"}

func (m *pipelineMonitoring) WatchTable(label string, table awsdynamodb.ITable) TableAlarms {
	m.check("Table", label, required{"table", table == nil})
	key := watchKey("Table", watchedResource{table, table.TableArn()})
	if prior, ok := watchesOf(m).tables[key]; ok {
		return prior
	}
	scope := m.begin("Table", label)
	name := *table.TableName()
	p := m.s.period

	// ReadThrottleEvents / WriteThrottleEvents carry only the TableName dimension and are
	// published for on-demand tables as well as provisioned ones (on-demand throttles on hot
	// partitions, on traffic above twice the previous peak, or at a configured maximum
	// throughput), so one metric per direction covers every operation. ThrottledRequests
	// would need one metric per operation.
	readThrottles := table.Metric(jsii.String("ReadThrottleEvents"), metricOpts(p, "Sum", ""))
	writeThrottles := table.Metric(jsii.String("WriteThrottleEvents"), metricOpts(p, "Sum", ""))
	systemErrors := systemErrorsMetric(table, p)

	w := &tableWatch{label: label, name: name, readThrottles: readThrottles, writeThrottles: writeThrottles, systemErrors: systemErrors}
	a, made := makeAlarms[TableAlarms](m, scope, w, tableAlarms)

	// UserErrors and ConditionalCheckFailedRequests are charted only: every duplicate message
	// and every lock held by another worker is a conditional check failure by design (the
	// acquire is one conditional write), so their rate follows the duplicate rate, not health.
	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Table %s\nDynamoDB table `%s`", label, name)),
		graph("Consumed capacity", []awscloudwatch.IMetric{
			table.MetricConsumedReadCapacityUnits(metricOpts(p, "Sum", "read units")),
			table.MetricConsumedWriteCapacityUnits(metricOpts(p, "Sum", "write units")),
		}, nil),
		graph("Throttles and system errors", []awscloudwatch.IMetric{
			labelled(readThrottles, "read throttle events"), labelled(writeThrottles, "write throttle events"), systemErrors,
		}, nil),
		graph("Conditional check failures (duplicates, busy locks)", []awscloudwatch.IMetric{
			table.MetricConditionalCheckFailedRequests(metricOpts(p, "Sum", "conditional check failed")),
			table.MetricUserErrors(metricOpts(p, "Sum", "user errors (account-wide)")),
		}, nil),
		alarmStatus("Alarms: table "+label, made...),
	)
	watchesOf(m).tables[key] = a
	return a
}

// systemErrorsMetric sums table's SystemErrors over tableOperations (DynamoDB publishes them
// per operation).
func systemErrorsMetric(table awsdynamodb.ITable, p time.Duration) awscloudwatch.IMetric {
	ops := map[string]awscloudwatch.IMetric{}
	expr := ""
	for _, op := range tableOperations {
		id := "e_" + op
		ops[id] = table.Metric(jsii.String("SystemErrors"), &awscloudwatch.MetricOptions{
			DimensionsMap: &map[string]*string{"TableName": table.TableName(), "Operation": jsii.String(op)},
			Period:        cdkDuration(p),
			Statistic:     jsii.String("Sum"),
		})
		if expr != "" {
			expr += " + "
		}
		expr += "FILL(" + id + ", 0)"
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(expr),
		UsingMetrics: &ops,
		Label:        jsii.String("system errors"),
		Period:       cdkDuration(p),
	})
}

// emfMetric is a counter the functions publish with Embedded Metric Format; service is the
// publishing function's name.
func (m *pipelineMonitoring) emfMetric(metricName, service string, period time.Duration) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace:     jsii.String(m.s.namespace),
		MetricName:    jsii.String(metricName),
		DimensionsMap: &map[string]*string{telemetry.DimensionService: jsii.String(service)},
		Period:        cdkDuration(period),
		Statistic:     jsii.String("Sum"),
		Label:         jsii.String(metricName),
	})
}
