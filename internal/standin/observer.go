package standin

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// Observer records what one deployment's run produces as the CloudWatch metrics its alarms read:
// the functions' EMF lines, Lambda's Invocations, Errors and Duration per invocation,
// DynamoDB's throttle and error counts from the proxy's replies, and the queues' depths,
// oldest message age, receives and deletes. Dimension values are logical ids, as the
// template's alarms name them.
type Observer struct {
	d           *Deployment
	sq          *sqs.Client
	errorf      func(format string, args ...any)
	series      *alarm.Series
	Clock       alarm.Clock
	ages        *alarm.AgeTracker
	fnByName    map[string]string // Lambda function name -> logical id
	queueByURL  map[string]string
	tableByName map[string]string
	handles     sync.Map // receipt handle -> [2]string{queue, message id}
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}

	beatMu     sync.Mutex
	beating    map[string]bool // queues whose heartbeats run
	beats      sync.WaitGroup
	Heartbeats atomic.Int64 // heartbeats SQS accepted
}

// NewObserver starts recording the metrics of the deployment d; create it before any poller
// or function starts. The alarm clock starts now and runs scale times faster than the wall
// clock (AlarmTimeScale in the kit). functionName maps a function's logical id to the Lambda
// function name its environments run under; errorf reports what the observer could not do
// (a heartbeat input that is not a SendMessage request). Stop it when the run ends.
func NewObserver(d *Deployment, sq *sqs.Client, functionName func(id string) string, scale int, errorf func(format string, args ...any)) *Observer {
	o := &Observer{d: d, sq: sq, errorf: errorf, series: alarm.NewSeries(), Clock: alarm.Clock{Start: time.Now(), Scale: float64(scale)}, ages: alarm.NewAgeTracker(),
		fnByName: map[string]string{}, queueByURL: map[string]string{}, tableByName: map[string]string{}, done: make(chan struct{})}
	for id := range d.Template.Functions {
		o.fnByName[functionName(id)] = id
	}
	for id, u := range d.QueueURL {
		o.queueByURL[u] = id
	}
	for id, n := range d.TableName {
		o.tableByName[n] = id
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.ctx, o.cancel, o.beating = ctx, cancel, map[string]bool{}
	go o.sample(ctx)
	return o
}

// Stop ends the sampling and the heartbeats and waits for them.
func (o *Observer) Stop() {
	o.cancel()
	<-o.done
	o.beats.Wait()
}

// startHeartbeats stands in for EventBridge Scheduler running the template's SQS-target
// schedules (the heartbeats) that send to queue: the first at once, then one every rate of
// the alarm clock, flexible window off, each request from the template's input with the
// scheduled time (on the alarm clock) filled in and the queue's URL, retried up to the
// schedule's retry attempts when SQS refuses it. They run until the observer stops. A
// pipeline's heartbeats start when the scenario first polls it: a pipeline a scenario never
// runs is not part of it, as if not deployed.
func (o *Observer) StartHeartbeats(queue string) {
	o.beatMu.Lock()
	defer o.beatMu.Unlock()
	if o.beating[queue] {
		return
	}
	o.beating[queue] = true
	for _, s := range o.d.Template.SendSchedules {
		if s.Queue != queue {
			continue
		}
		o.beats.Add(1)
		go func() {
			defer o.beats.Done()
			tick := time.NewTicker(o.Clock.WallDuration(s.rate))
			defer tick.Stop()
			for {
				o.heartbeat(s)
				select {
				case <-o.ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
}

// heartbeat makes one SendMessage request of schedule s.
func (o *Observer) heartbeat(s SendSchedule) {
	at := o.Clock.Alarm(time.Now()).UTC().Truncate(time.Second).Format(time.RFC3339)
	var req struct {
		MessageBody, MessageGroupId, MessageDeduplicationId string
		MessageAttributes                                   map[string]struct{ DataType, StringValue string }
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(s.Input, "<aws.scheduler.scheduled-time>", at)), &req); err != nil {
		o.errorf("schedule %s: its input is not a SendMessage request: %v", s.LogicalID, err)
		return
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(o.d.QueueURL[s.Queue]), MessageBody: aws.String(req.MessageBody),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{}}
	for name, a := range req.MessageAttributes {
		in.MessageAttributes[name] = sqstypes.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue)}
	}
	if req.MessageGroupId != "" {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(req.MessageGroupId), aws.String(req.MessageDeduplicationId)
	}
	for range s.retries + 1 {
		out, err := o.sq.SendMessage(o.ctx, in)
		if err == nil {
			now := time.Now()
			o.ages.Sent(s.Queue, aws.ToString(out.MessageId), now)
			o.series.Add(sqsMetric("NumberOfMessagesSent", s.Queue), now, 1)
			o.Heartbeats.Add(1)
			return
		}
		if o.ctx.Err() != nil {
			return
		}
	}
}

func sqsMetric(name, queue string) alarm.MetricID {
	return alarm.NewMetricID("AWS/SQS", name, "QueueName", queue)
}

// sample records every queue's depth and oldest message age every half minute of the alarm
// clock (finer than the one-minute resolution SQS publishes at), and a zero for
// its counters: SQS publishes them for every active queue each minute.
func (o *Observer) sample(ctx context.Context) {
	defer close(o.done)
	tick := time.NewTicker(o.Clock.WallDuration(time.Minute / 2))
	defer tick.Stop()
	queues := slices.Sorted(maps.Keys(o.d.QueueURL))
	for {
		for _, q := range queues {
			out, err := o.sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(o.d.QueueURL[q]),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
			})
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				continue // a missed sample is missing data, as in CloudWatch
			}
			now := time.Now()
			n := func(a sqstypes.QueueAttributeName) float64 {
				v, _ := strconv.ParseFloat(out.Attributes[string(a)], 64)
				return v
			}
			visible, inflight, delayed := n(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
				n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible), n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)
			o.series.Add(sqsMetric("ApproximateNumberOfMessagesVisible", q), now, visible)
			o.series.Add(sqsMetric("ApproximateNumberOfMessagesNotVisible", q), now, inflight)
			o.series.Add(sqsMetric("ApproximateNumberOfMessagesDelayed", q), now, delayed)
			for _, c := range []string{"NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted"} {
				o.series.Add(sqsMetric(c, q), now, 0)
			}
			if visible+inflight+delayed == 0 {
				o.ages.Empty(q)
				o.series.Add(sqsMetric("ApproximateAgeOfOldestMessage", q), now, 0)
			} else if age, ok := o.ages.Oldest(q, now); ok {
				// Read on the alarm clock, like every time of the evaluation.
				o.series.Add(sqsMetric("ApproximateAgeOfOldestMessage", q), now, age.Seconds()*o.Clock.Scale)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// middleware is an SQS client option for the pollers' client: it records receives and
// deletes.
func (o *Observer) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("e2eAlarmMetrics",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if err != nil {
				return out, md, err
			}
			now := time.Now()
			switch req := in.Parameters.(type) {
			case *sqs.ReceiveMessageInput:
				q := o.queueByURL[aws.ToString(req.QueueUrl)]
				res, _ := out.Result.(*sqs.ReceiveMessageOutput)
				if res == nil || len(res.Messages) == 0 {
					break
				}
				for _, m := range res.Messages {
					o.handles.Store(aws.ToString(m.ReceiptHandle), [2]string{q, aws.ToString(m.MessageId)})
					ms, _ := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
					count, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
					if ms > 0 {
						o.ages.Received(q, aws.ToString(m.MessageId), time.UnixMilli(ms), count)
					}
				}
				o.series.Add(sqsMetric("NumberOfMessagesReceived", q), now, float64(len(res.Messages)))
			case *sqs.DeleteMessageBatchInput:
				q := o.queueByURL[aws.ToString(req.QueueUrl)]
				res, _ := out.Result.(*sqs.DeleteMessageBatchOutput)
				if res == nil {
					break
				}
				byID := map[string]string{}
				for _, e := range req.Entries {
					byID[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
				}
				for _, ok := range res.Successful {
					if h, found := o.handles.LoadAndDelete(byID[aws.ToString(ok.Id)]); found {
						o.ages.Deleted(q, h.([2]string)[1])
					}
				}
				o.series.Add(sqsMetric("NumberOfMessagesDeleted", q), now, float64(len(res.Successful)))
			}
			return out, md, err
		}), middleware.After)
}

// sent records messages the harness sent to a queue.
func (o *Observer) Sent(queue string, ok []sqstypes.SendMessageBatchResultEntry) {
	now := time.Now()
	for _, e := range ok {
		o.ages.Sent(queue, aws.ToString(e.MessageId), now)
	}
	o.series.Add(sqsMetric("NumberOfMessagesSent", queue), now, float64(len(ok)))
}

// invocation records Lambda's metrics for one invocation of function (a logical id): a
// failure as a whole (function error, timeout, crash) is an Error.
func (o *Observer) Invocation(function string, start time.Time, res lambdart.Result, err error) {
	m := func(name string) alarm.MetricID {
		return alarm.NewMetricID("AWS/Lambda", name, "FunctionName", function)
	}
	failed := 0.0
	if err != nil || res.FunctionError != nil {
		failed = 1
	}
	o.series.Add(m("Invocations"), start, 1)
	o.series.Add(m("Errors"), start, failed)
	if res.Duration > 0 {
		o.series.Add(m("Duration"), start, float64(res.Duration.Milliseconds()))
	}
}

// line records a function's output line when it is EMF.
func (o *Observer) Line(b []byte) {
	alarm.RecordEMF(o.series, b, func(dim, v string) string {
		if id, ok := o.fnByName[v]; ok && dim == "Service" {
			return id
		}
		return v
	})
}

// dynamo records what DynamoDB would count for one call, from its reply (injected faults
// included): throttles (ThrottledRequests per operation, Read/WriteThrottleEvents per table),
// SystemErrors for 5xx, ConditionalCheckFailedRequests, and UserErrors (account-wide) for
// other 4xx. DynamoDB publishes these only when they are not zero.
func (o *Observer) Dynamo(c ddbproxy.Call, r ddbproxy.Reply) {
	table := o.tableByName[c.Table]
	if table == "" || r.Status/100 == 2 {
		return
	}
	now := time.Now()
	db := func(name string, dims ...string) alarm.MetricID {
		return alarm.NewMetricID("AWS/DynamoDB", name, dims...)
	}
	switch {
	case r.Type == "ThrottlingException" || r.Type == "ProvisionedThroughputExceededException" || r.Type == "RequestLimitExceeded":
		o.series.Add(db("ThrottledRequests", "TableName", table, "Operation", c.Op), now, 1)
		metric := "WriteThrottleEvents"
		if c.Op == "GetItem" || c.Op == "Query" || c.Op == "Scan" || c.Op == "BatchGetItem" {
			metric = "ReadThrottleEvents"
		}
		o.series.Add(db(metric, "TableName", table), now, 1)
	case r.Status >= 500:
		o.series.Add(db("SystemErrors", "TableName", table, "Operation", c.Op), now, 1)
	case r.Type == "ConditionalCheckFailedException":
		o.series.Add(db("ConditionalCheckFailedRequests", "TableName", table), now, 1)
	default:
		o.series.Add(db("UserErrors"), now, 1)
	}
}

// evaluate applies every alarm of the template to what the run produced until end.
func (o *Observer) Evaluate(end time.Time) (map[string]alarm.Evaluation, error) {
	alarms, err := o.withoutIdleHeartbeats()
	if err != nil {
		return nil, err
	}
	return alarm.EvaluateAll(alarms, o.d.Template.Composites, o.series, o.Clock, end)
}

// withoutIdleHeartbeats is the template's alarms to evaluate: the heartbeat alarm of a pipeline whose
// heartbeats do not run (StartHeartbeats was not called for its queue: in a test, it is driven by
// hand, or not at all) treats missing data as not breaching, as if that pipeline had no
// heartbeat. Evaluated as synthesized it would report the missing schedule in every such
// scenario, not the failure under test. Where the heartbeats run, the alarm is evaluated as
// synthesized.
func (o *Observer) withoutIdleHeartbeats() ([]alarm.Alarm, error) {
	ps, err := o.d.Template.Pipelines()
	if err != nil {
		return nil, err
	}
	o.beatMu.Lock()
	idle := map[string]bool{}
	for _, p := range ps {
		idle[p.Consumer] = !o.beating[p.Queue]
	}
	o.beatMu.Unlock()
	alarms := slices.Clone(o.d.Template.Alarms)
	for i, a := range alarms {
		for _, m := range a.Metrics() {
			if m.Name == "ProbeCompleted" && idle[m.Dim("Service")] {
				alarms[i].TreatMissingData = "notBreaching"
			}
		}
	}
	return alarms, nil
}
