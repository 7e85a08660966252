package monitoring

import (
	"fmt"
	"reflect"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
)

// The alarms, as data: one list per resource kind. Each Watch method gathers what its
// definitions read (a queueWatch, consumerWatch, ... of names, metrics and settings), makes
// the list's alarms in order with makeAlarms, and charts them in its dashboard row. A new
// alarm is one entry in its kind's list and a section in docs/runbooks.md (the runbook tests
// read these lists); a field of its name in the kind's Alarms struct exposes it, and is
// optional.
//
// Missing data does not breach unless an entry says breaching. None of these metrics but the
// heartbeat's is a heartbeat: SQS stops publishing for a queue that has been empty and idle
// for 6 hours, and Lambda, Scheduler and DynamoDB publish error and throttle counts only when
// there is something to count. Breaching would page on every quiet night.

// alarmDef is one alarm of a watch whose facts are a W.
type alarmDef[W any] struct {
	id       string // the alarm's construct id, and the Alarms field that holds it (if any)
	field    string // the Alarms field when it is not id
	severity severity
	runbook  string // the anchor of the alarm's section in docs/runbooks.md
	// metric is what the alarm watches; threshold (default 1) and periods (default 1: all N
	// of N must breach) when it fires: at or above the threshold, or below it with below.
	metric    func(*W) awscloudwatch.IMetric
	threshold func(*W) float64
	periods   func(*W) int
	below     bool
	breaching bool // missing data breaches (the heartbeat's alone)
	// describe is the description's text; the severity and the runbook link are appended.
	describe func(*W) string
}

// spec is d's alarm for the facts w.
func (d alarmDef[W]) spec(w *W) alarmSpec {
	s := alarmSpec{id: d.id, metric: d.metric(w), threshold: 1, periods: 1, below: d.below,
		missingData: awscloudwatch.TreatMissingData_NOT_BREACHING, description: d.describe(w),
		severity: d.severity, runbook: d.runbook}
	if d.threshold != nil {
		s.threshold = d.threshold(w)
	}
	if d.periods != nil {
		s.periods = d.periods(w)
	}
	if d.breaching {
		s.missingData = awscloudwatch.TreatMissingData_BREACHING
	}
	return s
}

// makeAlarms makes the alarms of defs in scope, in order, and returns them: each also in the
// field of an A that is named for it.
func makeAlarms[A, W any](m *pipelineMonitoring, scope constructs.Construct, w *W, defs []alarmDef[W]) (A, []awscloudwatch.Alarm) {
	var a A
	fields := reflect.ValueOf(&a).Elem()
	made := make([]awscloudwatch.Alarm, len(defs))
	for i, d := range defs {
		made[i] = m.alarm(scope, d.spec(w))
		name := d.id
		if d.field != "" {
			name = d.field
		}
		if f := fields.FieldByName(name); f.IsValid() {
			f.Set(reflect.ValueOf(made[i]))
		}
	}
	return a, made
}

// queueWatch is what a queue's alarms read.
type queueWatch struct {
	label, src, dlq, srcArn, stackName string
	consumer                           string // the consumer's name once watched, else ""
	s                                  *settings
	dlqVisible, oldest, backlog        awscloudwatch.Metric
}

// The commands name the deployed stack (AWS::StackName), so an operator paged at night
// copies them as they are; the consumer, once watched (WatchConsumer on source), is named
// for its log.
func (w *queueWatch) deadLetterDescription() string {
	who := "the consumer"
	if w.consumer != "" {
		who += " " + w.consumer
	}
	return fmt.Sprintf("[%s] Messages in the dead-letter queue %s: bad input %s moved there at its first receive, or messages that failed on %s maxReceiveCount times (its log says why). "+
		"First: pipelinectl dlq inspect --stack %s --pipeline %s (by DeadLetterReason); once fixed, dlq redrive with the same flags and --yes.",
		w.label, w.dlq, who, w.src, w.stackName, w.label)
}

var queueAlarms = []alarmDef[queueWatch]{
	// One message is enough and one minute is the finest SQS resolution: a DLQ message is
	// work the pipeline gave up on. Depth, not NumberOfMessagesSent: SQS does not count
	// messages moved by a redrive policy as sent. Missing data: an empty DLQ goes idle and
	// SQS stops publishing, so silence means empty.
	{id: "DeadLetterMessages", severity: sevPage, runbook: "dlq-not-empty",
		metric:   func(w *queueWatch) awscloudwatch.IMetric { return w.dlqVisible },
		describe: (*queueWatch).deadLetterDescription},
	// Compared once per period: the age threshold is already the time the problem has
	// lasted. Missing data: an idle, empty queue publishes nothing.
	{id: "OldestMessage", severity: sevTicket, runbook: "oldest-message-too-old",
		metric:    func(w *queueWatch) awscloudwatch.IMetric { return w.oldest },
		threshold: func(w *queueWatch) float64 { return w.s.oldestMessageAge.Seconds() },
		describe: func(w *queueWatch) string {
			return fmt.Sprintf("[%s] The oldest message on %s has waited %s or more: messages are not processed in time. "+
				"Check first the consumer's Errors and Throttles alarms, then the event source mapping (aws lambda list-event-source-mappings --event-source-arn %s: State, LastProcessingResult), "+
				"then the consumer logs for a message retried again and again (receive count). A stuck message reaches the DLQ after maxReceiveCount receives.",
				w.label, w.src, shortDuration(w.s.oldestMessageAge), w.srcArn)
		}},
	// The minimum in each period must stay high for several periods: a burst the consumer
	// drains (a dispatcher fan-out) stays quiet. Missing data: idle, empty queue.
	{id: "Backlog", severity: sevTicket, runbook: "backlog",
		metric:    func(w *queueWatch) awscloudwatch.IMetric { return w.backlog },
		threshold: func(w *queueWatch) float64 { return float64(w.s.queueDepth) },
		periods:   func(w *queueWatch) int { return w.s.backlogPeriods },
		describe: func(w *queueWatch) string {
			return fmt.Sprintf("[%s] %s has held %d or more visible messages for %s: producers outpace the consumer. "+
				"Check first whether the consumer is failing (Errors, Throttles, DLQ alarms); if it is healthy, raise its maximum concurrency or batch size, "+
				"and check the idempotency table for throttles.", w.label, w.src, w.s.queueDepth, span(w.s.backlogPeriods, w.s.period))
		}},
}

// consumerWatch is what a consumer's alarms read.
type consumerWatch struct {
	label, name, src string
	fn               awslambda.IFunction
	s                *settings
	stalled          awscloudwatch.IMetric
}

var consumerAlarms = []alarmDef[consumerWatch]{
	// Errors are whole-invocation failures only (records fail as batchItemFailures), so
	// one is already a real problem. Missing data: Lambda publishes only when invoked.
	{id: "Errors", severity: sevTicket, runbook: "consumer-errors",
		metric: func(w *consumerWatch) awscloudwatch.IMetric {
			return w.fn.MetricErrors(metricOpts(w.s.period, "Sum", ""))
		},
		describe: func(w *consumerWatch) string {
			return fmt.Sprintf("[%s] The consumer function %s failed whole invocations (crash, timeout, bad configuration): every record of those batches returns to %s and is retried. "+
				"Failed single records do not count here (they are batch item failures). "+
				"Check first the function's logs for the error or \"Task timed out\", then the latest deployment and its environment variables.", w.label, w.name, w.src)
		}},
	// Any throttle delays messages and adds receives toward maxReceiveCount. Missing
	// data: Lambda publishes Throttles only when it throttles.
	{id: "Throttles", severity: sevTicket, runbook: "function-throttles",
		metric: func(w *consumerWatch) awscloudwatch.IMetric {
			return w.fn.MetricThrottles(metricOpts(w.s.period, "Sum", ""))
		},
		describe: func(w *consumerWatch) string {
			return fmt.Sprintf("[%s] Lambda throttled the consumer function %s: messages on %s wait longer and their receive counts rise toward the DLQ. "+
				"Check first the function's reserved concurrency against the event source's maximum concurrency, then the account's concurrency (ConcurrentExecutions) and other functions using it.", w.label, w.name, w.src)
		}},
	// Several periods, longer than any Lambda timeout, so one slow batch does not count.
	// Missing data: the expression has no data only when the queue is idle and empty.
	{id: "Stalled", severity: sevPage, runbook: "stalled-consumer",
		metric:  func(w *consumerWatch) awscloudwatch.IMetric { return w.stalled },
		periods: func(w *consumerWatch) int { return w.s.stallPeriods },
		describe: func(w *consumerWatch) string {
			return fmt.Sprintf("[%s] Messages have waited on %s for %s and the consumer %s deleted none: it stopped acknowledging. "+
				"Either it is not receiving: check the event source mapping (aws lambda list-event-source-mappings --function-name %s: State Enabled, LastProcessingResult) and the role's sqs:ReceiveMessage and kms:Decrypt; "+
				"or it reports every record as failed: check the Failed and InvalidInput metrics and the logs. Messages reach the DLQ after maxReceiveCount receives.",
				w.label, w.src, span(w.s.stallPeriods, w.s.period), w.name, w.name)
		}},
}

// dispatcherWatch is what a dispatcher's alarms and dashboard row read.
type dispatcherWatch struct {
	label, name, sched, group, sdlq, fq                      string
	fn                                                       awslambda.IFunction
	s                                                        *settings
	scheduler                                                func(metricName string) awscloudwatch.Metric
	sdlqVisible, fqVisible, targetErrors, dropped, dlqFailed awscloudwatch.Metric
}

// Every Scheduler and Lambda count below is published only when it is non-zero or the
// function runs, and both queues go idle when empty: missing data does not breach.
var dispatcherAlarms = []alarmDef[dispatcherWatch]{
	{id: "Errors", severity: sevTicket, runbook: "dispatcher-errors",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric {
			return w.fn.MetricErrors(metricOpts(w.s.period, "Sum", ""))
		},
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] The dispatcher function %s failed an invocation: a scheduled fan-out may have left items unsent. "+
				"Lambda retries the asynchronous invocation; what still fails lands in %s (its own alarm). "+
				"Check first the logs for SendMessageBatch failures (SendFailed metric) and the function's sqs:SendMessage and kms permissions on the queue.", w.label, w.name, w.fq)
		}},
	{id: "Throttles", severity: sevTicket, runbook: "function-throttles",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric {
			return w.fn.MetricThrottles(metricOpts(w.s.period, "Sum", ""))
		},
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] Lambda throttled the dispatcher function %s: scheduled runs are delayed (Lambda keeps retrying asynchronous events for up to its maximum event age, then sends them to %s). "+
				"Check first the function's reserved concurrency and the account's concurrency.", w.label, w.name, w.fq)
		}},
	{id: "ScheduleTargetErrors", severity: sevTicket, runbook: "schedule-target-errors",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric { return w.targetErrors },
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] EventBridge Scheduler could not hand schedule %s (group %s) to %s: the Lambda Invoke call failed (TargetErrorCount). "+
				"Scheduler retries per the schedule's retry policy. Check first the scheduler role's lambda:InvokeFunction permission, then whether the function exists and is throttled (TargetErrorThrottledCount).", w.label, w.sched, w.group, w.name)
		}},
	{id: "ScheduleDropped", severity: sevPage, runbook: "schedule-invocations-dropped",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric { return w.dropped },
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] EventBridge Scheduler dropped invocations in group %s after exhausting the retry policy (InvocationDroppedCount): those scheduled runs of %s did not happen. "+
				"Check first the target errors alarm for the cause, then the schedule DLQ %s. Re-run a missed period by invoking the dispatcher with its scheduledTime: keys are deterministic, so a re-run is safe.", w.label, w.group, w.name, w.sdlq)
		}},
	{id: "ScheduleDeadLetterFailed", severity: sevPage, runbook: "schedule-dlq-delivery-failed",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric { return w.dlqFailed },
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] EventBridge Scheduler could not deliver failed invocations of group %s to the schedule DLQ %s (InvocationsFailedToBeSentToDeadLetterCount): those events are lost. "+
				"Check first the scheduler role's sqs:SendMessage on the DLQ and, if it is encrypted with a customer key, the key policy. Re-run the missed periods by hand.", w.label, w.group, w.sdlq)
		}},
	// Immediate, like every DLQ: a message here is a scheduled run that never reached the function.
	{id: "ScheduleDeadLetterMessages", field: "ScheduleDeadLetter", severity: sevPage, runbook: "schedule-dlq-not-empty",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric { return w.sdlqVisible },
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] Scheduled invocations of %s are in the schedule DLQ %s: Scheduler gave up handing them to Lambda. "+
				"Each message body is the event the schedule sent; its attributes hold the error. Fix the cause (see the target errors alarm), "+
				"then replay each body with aws lambda invoke --function-name %s --invocation-type Event --payload fileb://body.json and delete the message. Replays are safe: keys are deterministic.", w.label, w.name, w.sdlq, w.name)
		}},
	// Immediate: a message here is a fan-out that failed after Lambda's own retries.
	{id: "FailureDestinationMessages", field: "FailureDestination", severity: sevPage, runbook: "dispatcher-failure-queue-not-empty",
		metric: func(w *dispatcherWatch) awscloudwatch.IMetric { return w.fqVisible },
		describe: func(w *dispatcherWatch) string {
			return fmt.Sprintf("[%s] Dispatcher invocations of %s failed after Lambda's asynchronous retries and are in %s: those periods were not (fully) fanned out. "+
				"An on-failure destination record holds requestPayload (the scheduled event) and responsePayload (the error); a function DLQ message is the event itself. "+
				"Fix the cause, then re-invoke the dispatcher with that event and delete the message: items already sent are absorbed as duplicates by the consumer.", w.label, w.name, w.fq)
		}},
}

// heartbeatWatch is what a heartbeat's alarm reads.
type heartbeatWatch struct {
	label, name string
	every       time.Duration
	completed   awscloudwatch.IMetric // unlabelled: a plain metric alarm, not a math one
}

var heartbeatAlarms = []alarmDef[heartbeatWatch]{
	// Missing data breaches here, the one alarm where it does: the consumer publishes
	// ProbeCompleted only when it completed a probe, so no data is exactly "no heartbeat".
	{id: "Missing", severity: sevPage, runbook: "heartbeat-missing", below: true, breaching: true,
		metric:  func(w *heartbeatWatch) awscloudwatch.IMetric { return w.completed },
		periods: func(*heartbeatWatch) int { return heartbeatPeriods },
		describe: func(w *heartbeatWatch) string {
			return fmt.Sprintf("[%s] No heartbeat completed in the consumer %s for %s (one is sent every %s): the pipeline is broken even if nothing waits yet. "+
				"Check first the consumer's Errors and its logs (kms:Decrypt or dynamodb:UpdateItem AccessDenied), then the event source mapping "+
				"(aws lambda list-event-source-mappings --function-name %s: State Enabled), then the heartbeat schedule's TargetErrorCount (its role, the queue's key policy). "+
				"pipelinectl verify names the broken part.",
				w.label, w.name, span(heartbeatPeriods, w.every), shortDuration(w.every), w.name)
		}},
}

// tableWatch is what a table's alarms read.
type tableWatch struct {
	label, name                   string
	readThrottles, writeThrottles awscloudwatch.Metric
	systemErrors                  awscloudwatch.IMetric
}

// DynamoDB publishes throttle and error counts only when they are non-zero: missing data
// does not breach. One period: the store already retried before giving up on a record.
var tableAlarms = []alarmDef[tableWatch]{
	{id: "ReadThrottles", severity: sevTicket, runbook: "table-throttles",
		metric: func(w *tableWatch) awscloudwatch.IMetric { return w.readThrottles },
		describe: func(w *tableWatch) string {
			return fmt.Sprintf("[%s] DynamoDB throttled reads on %s. The idempotency store retries with backoff; records that still fail return to SQS and are retried. "+
				"On-demand tables throttle on a hot partition or above twice their previous peak; provisioned ones when a burst outruns auto scaling or hits its maximum. "+
				"Check first ThrottledRequests by operation and Contributor Insights for a hot key, then the table's maximum (throughput or auto scaling).", w.label, w.name)
		}},
	{id: "WriteThrottles", severity: sevTicket, runbook: "table-throttles",
		metric: func(w *tableWatch) awscloudwatch.IMetric { return w.writeThrottles },
		describe: func(w *tableWatch) string {
			return fmt.Sprintf("[%s] DynamoDB throttled writes on %s: acquiring or completing idempotency records is slowed (every new message writes twice). "+
				"The store retries with backoff; records that still fail return to SQS. "+
				"Check first a traffic spike (consumer concurrency, a large fan-out), then Contributor Insights for a hot key, then the table's maximum throughput setting "+
				"(provisioned: ConsumedWriteCapacityUnits against the auto scaling maximum).", w.label, w.name)
		}},
	{id: "SystemErrors", severity: sevTicket, runbook: "table-system-errors",
		metric: func(w *tableWatch) awscloudwatch.IMetric { return w.systemErrors },
		describe: func(w *tableWatch) string {
			return fmt.Sprintf("[%s] DynamoDB returned internal server errors (SystemErrors) on %s for the idempotency store's item operations. "+
				"The store retries them; records that still fail return to SQS. Check first the AWS Health Dashboard for DynamoDB in this Region; "+
				"if it persists without an event there, open a support case with the request ids from the consumer logs.", w.label, w.name)
		}},
}
