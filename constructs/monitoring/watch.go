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
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Missing data is NOT_BREACHING for every alarm below, each for its own reason (stated per
// alarm). None of these metrics is a heartbeat: SQS stops publishing for a queue that has been
// empty and idle for 6 hours, and Lambda, Scheduler and DynamoDB publish error and throttle
// counts only when there is something to count. BREACHING would page on every quiet night.

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
	src, dlq := *source.QueueName(), *deadLetter.QueueName()
	p := m.s.period

	// The commands name the deployed stack (AWS::StackName), so an operator paged at night
	// copies them as they are; the consumer, once watched (WatchConsumer on source), is named
	// for its log.
	dlqDescription := func(consumer string) string {
		who := "the consumer"
		if consumer != "" {
			who += " " + consumer
		}
		return fmt.Sprintf("[%s] Messages in the dead-letter queue %s: bad input %s moved there at its first receive, or messages that failed on %s maxReceiveCount times (its log says why). "+
			"First: pipelinectl dlq inspect --stack %s --pipeline %s (by DeadLetterReason); once fixed, dlq redrive with the same flags and --yes.",
			label, dlq, who, src, *awscdk.Aws_STACK_NAME(), label)
	}
	dlqVisible := deadLetter.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", ""))
	oldest := source.MetricApproximateAgeOfOldestMessage(metricOpts(p, "Maximum", ""))
	backlog := source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Minimum", ""))

	a := QueueAlarms{
		// One message is enough and one minute is the finest SQS resolution: a DLQ message is
		// work the pipeline gave up on. Depth, not NumberOfMessagesSent: SQS does not count
		// messages moved by a redrive policy as sent. Missing data: an empty DLQ goes idle
		// and SQS stops publishing, so silence means empty.
		DeadLetterMessages: m.alarm(scope, alarmSpec{
			id: "DeadLetterMessages", metric: dlqVisible, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorDLQ,
			description: dlqDescription(consumerOf(m, source).in(m)),
		}),
		// Compared once per period: the age threshold is already the time the problem has
		// lasted. Missing data: an idle, empty queue publishes nothing.
		OldestMessage: m.alarm(scope, alarmSpec{
			id: "OldestMessage", metric: oldest, threshold: m.s.oldestMessageAge.Seconds(), periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorOldestMessage,
			description: fmt.Sprintf("[%s] The oldest message on %s has waited %s or more: messages are not processed in time. "+
				"Check first the consumer's Errors and Throttles alarms, then the event source mapping (aws lambda list-event-source-mappings --event-source-arn %s: State, LastProcessingResult), "+
				"then the consumer logs for a message retried again and again (receive count). A stuck message reaches the DLQ after maxReceiveCount receives.",
				label, src, shortDuration(m.s.oldestMessageAge), *source.QueueArn()),
		}),
		// The minimum in each period must stay high for several periods: a burst the consumer
		// drains (a dispatcher fan-out) stays quiet. Missing data: idle, empty queue.
		Backlog: m.alarm(scope, alarmSpec{
			id: "Backlog", metric: backlog, threshold: float64(m.s.queueDepth), periods: m.s.backlogPeriods,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorBacklog,
			description: fmt.Sprintf("[%s] %s has held %d or more visible messages for %s: producers outpace the consumer. "+
				"Check first whether the consumer is failing (Errors, Throttles, DLQ alarms); if it is healthy, raise its maximum concurrency or batch size, "+
				"and check the idempotency table for throttles.", label, src, m.s.queueDepth, span(m.s.backlogPeriods, p)),
		}),
	}

	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Queue %s\nSource queue `%s`, dead-letter queue `%s`", label, src, dlq)),
		graph("Messages on the source queue", []awscloudwatch.IMetric{
			source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "visible")),
			source.MetricApproximateNumberOfMessagesNotVisible(metricOpts(p, "Maximum", "in flight")),
		}, []awscloudwatch.IMetric{labelled(oldest, "oldest message age (s)")}),
		graph("Source throughput", []awscloudwatch.IMetric{
			source.MetricNumberOfMessagesSent(metricOpts(p, "Sum", "sent")),
			source.MetricNumberOfMessagesReceived(metricOpts(p, "Sum", "received")),
			source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "deleted")),
		}, nil),
		graph("Dead-letter queue", []awscloudwatch.IMetric{labelled(dlqVisible, "visible")}, nil),
		alarmStatus("Alarms: queue "+label, a.DeadLetterMessages, a.OldestMessage, a.Backlog),
	)
	watchesOf(m).redescribe[queueKey(source)] = func(c consumerName) {
		if name := c.in(m); name != "" {
			a.DeadLetterMessages.Node().DefaultChild().(awscloudwatch.CfnAlarm).SetAlarmDescription(
				jsii.String(m.describe(dlqDescription(name), sevPage, anchorDLQ)))
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
	p := m.s.period

	// Messages "wait" when any are on the queue, visible or in flight: a consumer that
	// receives and fails every record keeps them in flight, one that stopped receiving
	// leaves them visible, and either way nothing is deleted. FILL keeps a missing data
	// point (idle queue) from hiding the other series.
	stalled := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String("IF((FILL(visible, 0) + FILL(inflight, 0)) > 0 AND FILL(deleted, 0) == 0, 1, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"visible":  source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "")),
			"inflight": source.MetricApproximateNumberOfMessagesNotVisible(metricOpts(p, "Maximum", "")),
			"deleted":  source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "")),
		},
		Label:  jsii.String("stalled (1 = messages waiting, none deleted)"),
		Period: cdkDuration(p),
	})

	a := ConsumerAlarms{
		// Errors are whole-invocation failures only (records fail as batchItemFailures), so
		// one is already a real problem. Missing data: Lambda publishes only when invoked.
		Errors: m.alarm(scope, alarmSpec{
			id: "Errors", metric: fn.MetricErrors(metricOpts(p, "Sum", "")), threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorConsumerErrors,
			description: fmt.Sprintf("[%s] The consumer function %s failed whole invocations (crash, timeout, bad configuration): every record of those batches returns to %s and is retried. "+
				"Failed single records do not count here (they are batch item failures). "+
				"Check first the function's logs for the error or \"Task timed out\", then the latest deployment and its environment variables.", label, name, src),
		}),
		// Any throttle delays messages and adds receives toward maxReceiveCount. Missing
		// data: Lambda publishes Throttles only when it throttles.
		Throttles: m.alarm(scope, alarmSpec{
			id: "Throttles", metric: fn.MetricThrottles(metricOpts(p, "Sum", "")), threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorThrottles,
			description: fmt.Sprintf("[%s] Lambda throttled the consumer function %s: messages on %s wait longer and their receive counts rise toward the DLQ. "+
				"Check first the function's reserved concurrency against the event source's maximum concurrency, then the account's concurrency (ConcurrentExecutions) and other functions using it.", label, name, src),
		}),
		// Several periods, longer than any Lambda timeout, so one slow batch does not count.
		// Missing data: the expression has no data only when the queue is idle and empty.
		Stalled: m.alarm(scope, alarmSpec{
			id: "Stalled", metric: stalled, threshold: 1, periods: m.s.stallPeriods,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorStalled,
			description: fmt.Sprintf("[%s] Messages have waited on %s for %s and the consumer %s deleted none: it stopped acknowledging. "+
				"Either it is not receiving: check the event source mapping (aws lambda list-event-source-mappings --function-name %s: State Enabled, LastProcessingResult) and the role's sqs:ReceiveMessage and kms:Decrypt; "+
				"or it reports every record as failed: check the Failed and InvalidInput metrics and the logs. Messages reach the DLQ after maxReceiveCount receives.",
				label, src, span(m.s.stallPeriods, p), name, name),
		}),
	}

	records := make([]awscloudwatch.IMetric, len(consumerMetrics))
	for i, n := range consumerMetrics {
		records[i] = m.emfMetric(n, name, p)
	}
	widgets := []awscloudwatch.IWidget{
		header(fmt.Sprintf("### Consumer %s\nFunction `%s` reading queue `%s`", label, name, src)),
		graph("Invocations", []awscloudwatch.IMetric{
			fn.MetricInvocations(metricOpts(p, "Sum", "invocations")),
			fn.MetricErrors(metricOpts(p, "Sum", "errors")),
			fn.MetricThrottles(metricOpts(p, "Sum", "throttles")),
		}, []awscloudwatch.IMetric{fn.MetricDuration(metricOpts(p, "p99", "duration p99 (ms)"))}),
		graph("Records", records, nil),
		graph("Acknowledgement", []awscloudwatch.IMetric{
			source.MetricNumberOfMessagesDeleted(metricOpts(p, "Sum", "deleted")),
			source.MetricApproximateNumberOfMessagesVisible(metricOpts(p, "Maximum", "visible")),
		}, []awscloudwatch.IMetric{stalled}),
		alarmStatus("Alarms: consumer "+label, a.Errors, a.Throttles, a.Stalled),
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
	watchesOf(m).consumers[key] = a
	return a
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
	sdlqVisible := scheduleDeadLetter.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", ""))
	fqVisible := failureQueue.MetricApproximateNumberOfMessagesVisible(metricOpts(deadLetterPeriod, "Maximum", ""))
	targetErrors := scheduler(metricSchedulerTargetErrs)
	dropped := scheduler(metricSchedulerDropped)
	dlqFailed := scheduler(metricSchedulerDLQFailed)

	w := dispatcherWatch{label: label, name: name, sched: sched, group: group, sdlq: sdlq, fq: fq, fn: fn, p: p, scheduler: scheduler,
		sdlqVisible: sdlqVisible, fqVisible: fqVisible, targetErrors: targetErrors, dropped: dropped, dlqFailed: dlqFailed}
	a := m.dispatcherAlarms(scope, w)
	m.dispatcherRow(w, a)
	watchesOf(m).dispatchers[key] = a
	return a
}

// dispatcherWatch is what a dispatcher's alarms and dashboard row read.
type dispatcherWatch struct {
	label, name, sched, group, sdlq, fq                      string
	fn                                                       awslambda.IFunction
	p                                                        time.Duration
	scheduler                                                func(metricName string) awscloudwatch.Metric
	sdlqVisible, fqVisible, targetErrors, dropped, dlqFailed awscloudwatch.Metric
}

// dispatcherAlarms makes the dispatcher's alarms: its function's errors and throttles, the
// schedule's target errors, drops and dead letters, and the failed runs' two queues.
func (m *pipelineMonitoring) dispatcherAlarms(scope constructs.Construct, w dispatcherWatch) DispatcherAlarms {
	label, name, sched, group, sdlq, fq, fn, p := w.label, w.name, w.sched, w.group, w.sdlq, w.fq, w.fn, w.p
	sdlqVisible, fqVisible, targetErrors, dropped, dlqFailed := w.sdlqVisible, w.fqVisible, w.targetErrors, w.dropped, w.dlqFailed
	// Every Scheduler and Lambda count below is published only when it is non-zero or the
	// function runs, and both queues go idle when empty: missing data is NOT_BREACHING.
	a := DispatcherAlarms{
		Errors: m.alarm(scope, alarmSpec{
			id: "Errors", metric: fn.MetricErrors(metricOpts(p, "Sum", "")), threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorDispatcherErrors,
			description: fmt.Sprintf("[%s] The dispatcher function %s failed an invocation: a scheduled fan-out may have left items unsent. "+
				"Lambda retries the asynchronous invocation; what still fails lands in %s (its own alarm). "+
				"Check first the logs for SendMessageBatch failures (SendFailed metric) and the function's sqs:SendMessage and kms permissions on the queue.", label, name, fq),
		}),
		Throttles: m.alarm(scope, alarmSpec{
			id: "Throttles", metric: fn.MetricThrottles(metricOpts(p, "Sum", "")), threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorThrottles,
			description: fmt.Sprintf("[%s] Lambda throttled the dispatcher function %s: scheduled runs are delayed (Lambda keeps retrying asynchronous events for up to its maximum event age, then sends them to %s). "+
				"Check first the function's reserved concurrency and the account's concurrency.", label, name, fq),
		}),
		ScheduleTargetErrors: m.alarm(scope, alarmSpec{
			id: "ScheduleTargetErrors", metric: targetErrors, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorScheduleTargetErrs,
			description: fmt.Sprintf("[%s] EventBridge Scheduler could not hand schedule %s (group %s) to %s: the Lambda Invoke call failed (TargetErrorCount). "+
				"Scheduler retries per the schedule's retry policy. Check first the scheduler role's lambda:InvokeFunction permission, then whether the function exists and is throttled (TargetErrorThrottledCount).", label, sched, group, name),
		}),
		ScheduleDropped: m.alarm(scope, alarmSpec{
			id: "ScheduleDropped", metric: dropped, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorScheduleDropped,
			description: fmt.Sprintf("[%s] EventBridge Scheduler dropped invocations in group %s after exhausting the retry policy (InvocationDroppedCount): those scheduled runs of %s did not happen. "+
				"Check first the target errors alarm for the cause, then the schedule DLQ %s. Re-run a missed period by invoking the dispatcher with its scheduledTime: keys are deterministic, so a re-run is safe.", label, group, name, sdlq),
		}),
		ScheduleDeadLetterFailed: m.alarm(scope, alarmSpec{
			id: "ScheduleDeadLetterFailed", metric: dlqFailed, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorScheduleDLQFailed,
			description: fmt.Sprintf("[%s] EventBridge Scheduler could not deliver failed invocations of group %s to the schedule DLQ %s (InvocationsFailedToBeSentToDeadLetterCount): those events are lost. "+
				"Check first the scheduler role's sqs:SendMessage on the DLQ and, if it is encrypted with a customer key, the key policy. Re-run the missed periods by hand.", label, group, sdlq),
		}),
		// Immediate, like every DLQ: a message here is a scheduled run that never reached the function.
		ScheduleDeadLetter: m.alarm(scope, alarmSpec{
			id: "ScheduleDeadLetterMessages", metric: sdlqVisible, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorScheduleDLQ,
			description: fmt.Sprintf("[%s] Scheduled invocations of %s are in the schedule DLQ %s: Scheduler gave up handing them to Lambda. "+
				"Each message body is the event the schedule sent; its attributes hold the error. Fix the cause (see the target errors alarm), "+
				"then replay each body with aws lambda invoke --function-name %s --invocation-type Event --payload fileb://body.json and delete the message. Replays are safe: keys are deterministic.", label, name, sdlq, name),
		}),
		// Immediate: a message here is a fan-out that failed after Lambda's own retries.
		FailureDestination: m.alarm(scope, alarmSpec{
			id: "FailureDestinationMessages", metric: fqVisible, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevPage, runbook: anchorFailureQueue,
			description: fmt.Sprintf("[%s] Dispatcher invocations of %s failed after Lambda's asynchronous retries and are in %s: those periods were not (fully) fanned out. "+
				"An on-failure destination record holds requestPayload (the scheduled event) and responsePayload (the error); a function DLQ message is the event itself. "+
				"Fix the cause, then re-invoke the dispatcher with that event and delete the message: items already sent are absorbed as duplicates by the consumer.", label, name, fq),
		}),
	}
	return a
}

// dispatcherRow adds the dispatcher's row to the dashboard.
func (m *pipelineMonitoring) dispatcherRow(w dispatcherWatch, a DispatcherAlarms) {
	label, name, sched, group, sdlq, fq, fn, p, scheduler := w.label, w.name, w.sched, w.group, w.sdlq, w.fq, w.fn, w.p, w.scheduler
	sdlqVisible, fqVisible, targetErrors, dropped, dlqFailed := w.sdlqVisible, w.fqVisible, w.targetErrors, w.dropped, w.dlqFailed
	items := make([]awscloudwatch.IMetric, len(dispatcherMetrics))
	for i, n := range dispatcherMetrics {
		items[i] = m.emfMetric(n, name, p)
	}
	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Dispatcher %s\nFunction `%s`, schedule `%s` (group `%s`), schedule DLQ `%s`, on-failure queue `%s`", label, name, sched, group, sdlq, fq)),
		graph("Invocations", []awscloudwatch.IMetric{
			fn.MetricInvocations(metricOpts(p, "Sum", "invocations")),
			fn.MetricErrors(metricOpts(p, "Sum", "errors")),
			fn.MetricThrottles(metricOpts(p, "Sum", "throttles")),
		}, []awscloudwatch.IMetric{fn.MetricDuration(metricOpts(p, "Maximum", "duration max (ms)"))}),
		graph("Schedule group "+group, []awscloudwatch.IMetric{
			labelled(scheduler(metricSchedulerAttempts), "attempts"),
			labelled(targetErrors, "target errors"),
			labelled(scheduler(metricSchedulerThrottled), "target throttled"),
			labelled(dropped, "dropped"),
			labelled(scheduler(metricSchedulerSentToDLQ), "sent to DLQ"),
			labelled(dlqFailed, "failed to reach DLQ"),
		}, nil),
		graph("Items", items, nil),
		graph("Failed runs", []awscloudwatch.IMetric{labelled(sdlqVisible, "schedule DLQ"), labelled(fqVisible, "on-failure queue")}, nil),
		alarmStatus("Alarms: dispatcher "+label, a.Errors, a.Throttles, a.ScheduleTargetErrors, a.ScheduleDropped,
			a.ScheduleDeadLetterFailed, a.ScheduleDeadLetter, a.FailureDestination),
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

	// Missing data is BREACHING here, the one alarm that is: the consumer publishes
	// ProbeCompleted only when it completed a probe, so no data is exactly "no heartbeat".
	a := HeartbeatAlarms{
		Missing: m.alarm(scope, alarmSpec{
			id: "Missing", metric: unlabelled, threshold: 1, below: true, periods: heartbeatPeriods,
			missingData: awscloudwatch.TreatMissingData_BREACHING,
			severity:    sevPage, runbook: anchorHeartbeat,
			description: fmt.Sprintf("[%s] No heartbeat completed in the consumer %s for %s (one is sent every %s): the pipeline is broken even if nothing waits yet. "+
				"Check first the consumer's Errors and its logs (kms:Decrypt or dynamodb:UpdateItem AccessDenied), then the event source mapping "+
				"(aws lambda list-event-source-mappings --function-name %s: State Enabled), then the heartbeat schedule's TargetErrorCount (its role, the queue's key policy). "+
				"pipelinectl verify names the broken part.",
				label, name, span(heartbeatPeriods, every), shortDuration(every), name),
		}),
	}
	m.dashboard.AddWidgets(
		header(fmt.Sprintf("### Heartbeat %s\nA probe every %s through consumer `%s`", label, shortDuration(every), name)),
		graph("Heartbeats completed", []awscloudwatch.IMetric{completed}, nil),
		alarmStatus("Alarms: heartbeat "+label, a.Missing),
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
	systemErrors := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(expr),
		UsingMetrics: &ops,
		Label:        jsii.String("system errors"),
		Period:       cdkDuration(p),
	})

	// DynamoDB publishes throttle and error counts only when they are non-zero: missing data
	// is NOT_BREACHING. One period: the store already retried before giving up on a record.
	a := TableAlarms{
		ReadThrottles: m.alarm(scope, alarmSpec{
			id: "ReadThrottles", metric: readThrottles, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorTableThrottles,
			description: fmt.Sprintf("[%s] DynamoDB throttled reads on %s. The idempotency store retries with backoff; records that still fail return to SQS and are retried. "+
				"On-demand tables throttle on a hot partition or above twice their previous peak; provisioned ones when a burst outruns auto scaling or hits its maximum. "+
				"Check first ThrottledRequests by operation and Contributor Insights for a hot key, then the table's maximum (throughput or auto scaling).", label, name),
		}),
		WriteThrottles: m.alarm(scope, alarmSpec{
			id: "WriteThrottles", metric: writeThrottles, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorTableThrottles,
			description: fmt.Sprintf("[%s] DynamoDB throttled writes on %s: acquiring or completing idempotency records is slowed (every new message writes twice). "+
				"The store retries with backoff; records that still fail return to SQS. "+
				"Check first a traffic spike (consumer concurrency, a large fan-out), then Contributor Insights for a hot key, then the table's maximum throughput setting "+
				"(provisioned: ConsumedWriteCapacityUnits against the auto scaling maximum).", label, name),
		}),
		SystemErrors: m.alarm(scope, alarmSpec{
			id: "SystemErrors", metric: systemErrors, threshold: 1, periods: 1,
			missingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
			severity:    sevTicket, runbook: anchorTableSystemErrors,
			description: fmt.Sprintf("[%s] DynamoDB returned internal server errors (SystemErrors) on %s for the idempotency store's item operations. "+
				"The store retries them; records that still fail return to SQS. Check first the AWS Health Dashboard for DynamoDB in this Region; "+
				"if it persists without an event there, open a support case with the request ids from the consumer logs.", label, name),
		}),
	}

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
		alarmStatus("Alarms: table "+label, a.ReadThrottles, a.WriteThrottles, a.SystemErrors),
	)
	watchesOf(m).tables[key] = a
	return a
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
