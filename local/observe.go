package local

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// Endpoints are the local servers' URLs, for the AWS SDKs and CLI (AWS_ENDPOINT_URL_SQS,
// AWS_ENDPOINT_URL_DYNAMODB) and pipelinectl.
type Endpoints struct {
	SQS, DynamoDB, Region string
	// AWS serves the parts of Lambda (Invoke of a dispatcher, ListEventSourceMappings),
	// CloudWatch (DescribeAlarms) and Scheduler (GetSchedule) that pipelinectl reads,
	// from what the kit runs.
	AWS string
}

// Endpoints returns where the servers listen.
func (k *Kit) Endpoints() Endpoints {
	if k.at != nil { // attached: the deployment's own
		return Endpoints{SQS: k.at.endpoint, DynamoDB: k.at.endpoint, Region: k.region, AWS: k.at.endpoint}
	}
	return Endpoints{SQS: k.sqsd.Endpoint(), DynamoDB: k.ddb.Endpoint(), Region: sqslocal.Region, AWS: k.apiURL}
}

// Environ is the environment for a program (the AWS CLI, an SDK, pipelinectl) to reach the
// local servers: their endpoints, the region (AWS_REGION, and AWS_DEFAULT_REGION for the
// AWS CLI v1) and dummy credentials. Attached (Options.Attach), it is the deployment's
// endpoint and region, and Lambda at the kit (its functions run here); the program brings
// its own credentials.
func (k *Kit) Environ() []string {
	e := k.Endpoints()
	if k.at != nil {
		env := []string{"AWS_REGION=" + e.Region, "AWS_DEFAULT_REGION=" + e.Region, "AWS_ENDPOINT_URL_LAMBDA=" + k.apiURL}
		if e.AWS != "" {
			env = append(env, "AWS_ENDPOINT_URL="+e.AWS)
		}
		return env
	}
	return []string{"AWS_ENDPOINT_URL_SQS=" + e.SQS, "AWS_ENDPOINT_URL_DYNAMODB=" + e.DynamoDB,
		"AWS_ENDPOINT_URL_LAMBDA=" + e.AWS, "AWS_ENDPOINT_URL_CLOUDWATCH=" + e.AWS, "AWS_ENDPOINT_URL_SCHEDULER=" + e.AWS,
		"AWS_ENDPOINT_URL_CLOUDFORMATION=" + e.AWS, "AWS_ENDPOINT_URL=" + e.AWS,
		"AWS_REGION=" + e.Region, "AWS_DEFAULT_REGION=" + e.Region, "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local"}
}

// SQS and DynamoDB return the kit's clients of the local servers (attached, of the
// deployment, with the caller's credentials): the same two each time, safe for concurrent
// use, so a test may call them per request without opening a connection each time.
func (k *Kit) SQS() *sqs.Client { return k.sq }

func (k *Kit) DynamoDB() *dynamodb.Client { return k.db }

// Ignored lists, per stack, the template properties that have no local meaning and were
// not applied (encryption, tags, backups, provisioned capacity).
func (k *Kit) Ignored() map[string][]string {
	out := map[string][]string{}
	for _, st := range k.stacks {
		out[st.ref.DisplayName] = slices.Clone(st.d.Ignored)
	}
	return out
}

// Pipelines lists the running pipelines, by stack and name.
func (k *Kit) Pipelines() []Running {
	var out []Running
	for _, st := range k.stacks {
		for _, r := range st.pipelines {
			out = append(out, r.Running)
		}
	}
	return out
}

// pipeline finds a pipeline by name ("Name" or "Stack/Name"); "" is the only one.
func (k *Kit) pipeline(name string) (*run, error) {
	var found []*run
	var names []string
	for _, st := range k.stacks {
		for _, r := range st.pipelines {
			names = append(names, r.Stack+"/"+r.Name)
			if name == "" || name == r.Name || name == r.Stack+"/"+r.Name || name == r.StackName+"/"+r.Name {
				found = append(found, r)
			}
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return nil, fmt.Errorf("local: no pipeline %q; there are %s", name, strings.Join(names, ", "))
	case name == "":
		return nil, fmt.Errorf("local: %d pipelines run (%s): name one", len(found), strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("local: %q names %d pipelines: use Stack/Name (%s)", name, len(found), strings.Join(names, ", "))
}

// WaitIdle waits until every pipeline queue is empty (nothing visible, in flight or
// delayed) on two reads a second apart, and returns how long it waited. Dead-letter queues
// are not waited for.
func (k *Kit) WaitIdle(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	quiet := 0
	for {
		busy, err := k.busy(ctx)
		if err != nil {
			return time.Since(start), err
		}
		if busy == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if quiet == 2 {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("local: not idle after %v (%d messages in the pipelines' queues): %w", time.Since(start).Round(time.Second), busy, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func (k *Kit) busy(ctx context.Context) (int, error) {
	n := 0
	for _, st := range k.stacks {
		for _, r := range st.pipelines {
			d, err := k.depth(ctx, r.QueueURL)
			if err != nil {
				return 0, err
			}
			n += d.Visible + d.InFlight + d.Delayed
		}
	}
	return n, nil
}

// Depth is a queue's approximate message counts.
type Depth struct{ Visible, InFlight, Delayed int }

func (k *Kit) depth(ctx context.Context, url string) (Depth, error) {
	out, err := k.sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return Depth{}, fmt.Errorf("local: queue attributes of %s: %w", url, err)
	}
	n := func(a sqstypes.QueueAttributeName) int { v, _ := strconv.Atoi(out.Attributes[string(a)]); return v }
	return Depth{n(sqstypes.QueueAttributeNameApproximateNumberOfMessages), n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)}, nil
}

// Status is a pipeline's state at one moment.
type Status struct {
	Pipeline string
	Queue    Depth
	DLQ      Depth
	// Outcomes counts the consumer's record outcomes by name ("processed", "duplicate",
	// "invalid_input", "dead_lettered", "probe", ...), from its logs.
	Outcomes map[string]int
	// Invocations counts the consumer's invocations, whatever the function is; Failed
	// those that failed as a whole (an error returned, a crash, a failed init, a timeout),
	// and LastError says how the last one failed ("" for none). Filtered counts the records
	// the mapping's filter criteria deleted undelivered.
	Invocations, Failed, Filtered int64
	LastError                     string
	// Refused is the calls of the pipeline's functions that the kit refused because they
	// would have left this machine (a call to a host other than AWS's, which the kit
	// answers, or a TLS client that does not trust the kit's authority): each host, with
	// its AWS service if any, and how many times ("partner.example.com:443 x3"). Kit.Err
	// says each once, with the fix.
	Refused []string
}

// Status reads every pipeline's queue depths and outcomes.
func (k *Kit) Status(ctx context.Context) ([]Status, error) {
	var out []Status
	for _, st := range k.stacks {
		for _, r := range st.pipelines {
			q, err := k.depth(ctx, r.QueueURL)
			if err != nil {
				return nil, err
			}
			var dl Depth
			if r.DLQURL != "" { // a queue without a redrive policy has none
				if dl, err = k.depth(ctx, r.DLQURL); err != nil {
					return nil, err
				}
			}
			s := Status{Pipeline: r.Stack + "/" + r.Name, Queue: q, DLQ: dl, Outcomes: r.ledger.Outcomes(),
				Invocations: r.poller.Stats.Invocations.Load(), Failed: r.poller.Stats.InvokeErrors.Load(), Filtered: r.poller.Stats.Filtered.Load()}
			if e := r.lastErr.Load(); e != nil {
				s.LastError = *e
			}
			s.Refused = k.refusedOf(st.ref.ID, r.Consumer, r.Dispatcher)
			out = append(out, s)
		}
	}
	return out, nil
}

// Outcomes counts a pipeline's record outcomes so far (see Status).
func (k *Kit) Outcomes(pipeline string) (map[string]int, error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	return r.ledger.Outcomes(), nil
}

// DeadLetter is a message in a dead-letter queue.
type DeadLetter struct {
	Body string
	// Reason is the DeadLetterReason attribute the consumer sets when it moves a record at
	// once (bad input); "" for a record SQS moved after maxReceiveCount receives.
	Reason     string
	Attributes map[string]string
}

// DeadLetters reads a pipeline's dead-letter queue without taking anything out of it: each
// message is received and made visible again at once. A FIFO queue hands out no message
// behind one in flight in its group, so at most 10 of each group are read at a time: when
// more are there, DeadLetters returns those it read and an error saying how many it could
// not.
func (k *Kit) DeadLetters(ctx context.Context, pipeline string) ([]DeadLetter, error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	if r.DLQURL == "" {
		return nil, fmt.Errorf("local: pipeline %s has no dead-letter queue: its queue has no redrive policy", r.Name)
	}
	var out []DeadLetter
	var handles []string
	defer func() {
		for _, h := range handles { // back to visible, whatever happened
			_, _ = k.sq.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(r.DLQURL), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
		}
	}()
	for {
		res, err := k.sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.DLQURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return nil, fmt.Errorf("local: read the DLQ of %s: %w", r.Name, err)
		}
		if len(res.Messages) == 0 {
			if !r.Fifo {
				return out, nil
			}
			d, err := k.depth(ctx, r.DLQURL)
			if err != nil {
				return out, err
			}
			if d.Visible > 0 {
				return out, fmt.Errorf("local: read %d messages of the FIFO DLQ of %s; %d more are behind them in their message groups, "+
					"which SQS hands out only once those before them leave the queue (10 of a group at a time)", len(out), r.Name, d.Visible)
			}
			return out, nil
		}
		for _, m := range res.Messages {
			handles = append(handles, aws.ToString(m.ReceiptHandle))
			dl := DeadLetter{Body: aws.ToString(m.Body), Attributes: map[string]string{}}
			for n, v := range m.MessageAttributes {
				dl.Attributes[n] = aws.ToString(v.StringValue)
			}
			dl.Reason = dl.Attributes[contract.AttrDeadLetterReason]
			out = append(out, dl)
		}
	}
}

// Records reads a pipeline's idempotency table: every item, its attributes as Go values
// (strings, float64 numbers, bools, nested maps and lists).
func (k *Kit) Records(ctx context.Context, pipeline string) ([]map[string]any, error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	return k.Scan(ctx, r.Table)
}

// Scan reads every item of a local table (a pipeline's, or one of your own stacks' tables,
// by the local name TableNames gives).
func (k *Kit) Scan(ctx context.Context, table string) ([]map[string]any, error) {
	var out []map[string]any
	var start map[string]dbtypes.AttributeValue
	for {
		res, err := k.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("local: scan %s: %w", table, err)
		}
		for _, item := range res.Items {
			out = append(out, fromAttributes(item))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// TableNames maps each table's logical id to its local name, per stack.
func (k *Kit) TableNames() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, st := range k.stacks {
		out[st.ref.DisplayName] = maps.Clone(st.d.TableName)
	}
	return out
}

func fromAttributes(item map[string]dbtypes.AttributeValue) map[string]any {
	out := make(map[string]any, len(item))
	for n, v := range item {
		out[n] = fromAttribute(v)
	}
	return out
}

func fromAttribute(v dbtypes.AttributeValue) any {
	switch a := v.(type) {
	case *dbtypes.AttributeValueMemberS:
		return a.Value
	case *dbtypes.AttributeValueMemberN:
		f, _ := strconv.ParseFloat(a.Value, 64)
		return f
	case *dbtypes.AttributeValueMemberBOOL:
		return a.Value
	case *dbtypes.AttributeValueMemberNULL:
		return nil
	case *dbtypes.AttributeValueMemberB:
		return a.Value
	case *dbtypes.AttributeValueMemberM:
		return fromAttributes(a.Value)
	case *dbtypes.AttributeValueMemberL:
		l := make([]any, len(a.Value))
		for i, e := range a.Value {
			l[i] = fromAttribute(e)
		}
		return l
	case *dbtypes.AttributeValueMemberSS:
		return a.Value
	case *dbtypes.AttributeValueMemberNS:
		return a.Value
	}
	return nil
}

// The states of an alarm (AlarmState.State), as CloudWatch names them.
const (
	StateOK           = "OK"
	StateAlarm        = "ALARM"
	StateInsufficient = "INSUFFICIENT_DATA"
)

// AlarmTimeScale is how many times faster than the wall clock the kit's alarm clock runs
// unless Options.AlarmTimeScale says otherwise.
const AlarmTimeScale = 30

// AlarmState is one alarm of a running stack as CloudWatch would show it now.
type AlarmState struct {
	// Name is the alarm's name here: its AlarmName, or its logical id and the stack's
	// suffix (Deployment.AlarmName), as the stand-in DescribeAlarms reports it.
	Stack, LogicalID, Name string
	State                  string // StateOK, StateAlarm or StateInsufficient
	// Since is when (wall clock) the alarm entered State; zero when it never changed.
	Since time.Time
}

// Alarms evaluates every alarm and composite alarm of the running stacks, on the alarm
// clock, with what the pipelines did so far.
func (k *Kit) Alarms() ([]AlarmState, error) {
	now := time.Now()
	var out []AlarmState
	for _, st := range k.stacks {
		evs, err := st.obs.Evaluate(now)
		if err != nil {
			return nil, fmt.Errorf("local: stack %s: %w", st.ref.DisplayName, err)
		}
		for _, id := range slices.Sorted(maps.Keys(evs)) {
			ev := evs[id]
			s := AlarmState{Stack: st.ref.DisplayName, LogicalID: id, Name: st.d.AlarmName(id), State: ev.StateAt(st.obs.Clock.Alarm(now))}
			for _, tr := range ev.Transitions {
				if tr.State == s.State {
					s.Since = st.obs.Clock.Wall(tr.At)
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// Effects counts, by idempotency key, the "effect applied" lines a pipeline's consumer
// logged (consume.LogEffect, the default effect, writes one per run): a count above one is
// an effect that ran twice.
func (k *Kit) Effects(pipeline string) (map[string]int, error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	return r.ledger.Effects(), nil
}

// Outputs are the running stacks' outputs (a nested stack's only through its parent's) resolved to their local values, by stack
// (CloudFormation) name and output name, as `cdk deploy --outputs-file` writes them: pipelinectl's --outputs reads
// them (pipelinectl dlq inspect --outputs FILE --stack STACK --pipeline NAME). An output
// the kit cannot resolve (an attribute of a resource it does not create) is left out and
// named in the second result.
func (k *Kit) Outputs() (map[string]map[string]string, []string) {
	out := map[string]map[string]string{}
	var skipped []string
	for _, st := range k.stacks {
		if st.ref.Parent != "" {
			continue // a nested stack's outputs are its parent's to give (cdk deploy writes none)
		}
		m := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(st.d.Template.Outputs)) {
			v, err := st.d.Resolve(st.d.Template.Outputs[name])
			if s, ok := v.(string); err == nil && ok {
				m[name] = s
			} else if f, ok := v.(float64); err == nil && ok {
				m[name] = strconv.FormatFloat(f, 'f', -1, 64)
			} else {
				skipped = append(skipped, st.ref.DisplayName+"."+name)
			}
		}
		out[st.ref.StackName] = m
	}
	return out, skipped
}

// WaitForAlarm waits until an alarm whose logical id or name contains match is in ALARM,
// and returns it. It reports, when ctx ends first, the states of the alarms that match.
func (k *Kit) WaitForAlarm(ctx context.Context, match string) (AlarmState, error) {
	for {
		states, err := k.Alarms()
		if err != nil {
			return AlarmState{}, err
		}
		var seen []string
		for _, a := range states {
			if strings.Contains(a.LogicalID, match) || strings.Contains(a.Name, match) {
				if a.State == alarm.StateAlarm {
					return a, nil
				}
				seen = append(seen, a.LogicalID+" "+a.State)
			}
		}
		if len(seen) == 0 {
			return AlarmState{}, fmt.Errorf("local: no alarm's logical id or name contains %q", match)
		}
		select {
		case <-ctx.Done():
			return AlarmState{}, fmt.Errorf("local: waiting for %q in ALARM: %w (%s)", match, ctx.Err(), strings.Join(seen, ", "))
		case <-time.After(time.Second):
		}
	}
}
