//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"

	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
	"github.com/idempotent-sqs/pipeline/internal/standin/ledger"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
	"github.com/idempotent-sqs/pipeline/internal/standin/schedule"
)

// EnvAssembly names the cloud assembly directory the suite deploys (`make e2e` synthesizes
// it with short timeouts, so that redelivery after a visibility timeout takes seconds).
const EnvAssembly = "E2E_ASSEMBLY"

var (
	ddb  *dynamolocal.Server
	sqsd *sqslocal.Server
	tmpl *standin.Template
	bins = map[string]string{} // "consumer" / "dispatcher" -> bootstrap path

	soakMessages = flag.Int("soak.messages", 3000, "messages in TestSoak (make soak: 100000)")
	soakFail     = flag.Float64("soak.fail", 0.15, "share of soak messages whose first delivery fails transiently")
	soakPoison   = flag.Float64("soak.poison", 0.01, "share of soak messages that are poison")
	soakPollers  = flag.Int("soak.pollers", 4, "concurrent consumer environments in TestSoak")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "e2e:", err); return 1 }
	dir := os.Getenv(EnvAssembly)
	if dir == "" {
		return fail(fmt.Errorf("%s is not set: run `make e2e`, which synthesizes the stack and sets it", EnvAssembly))
	}
	var err error
	if tmpl, err = standin.LoadAssembly(dir); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	binDir, err := os.MkdirTemp("", "e2e-bin-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(binDir)
	for _, fn := range []string{"consumer", "dispatcher"} {
		out := filepath.Join(binDir, fn, "bootstrap")
		if err := lambdart.Build(ctx, "github.com/idempotent-sqs/pipeline/functions/"+fn, out); err != nil {
			return fail(fmt.Errorf("build %s: %w", fn, err))
		}
		bins[fn] = out
	}
	// Both backends start together; either failing to start fails the run.
	var wg sync.WaitGroup
	var dErr, sErr error
	wg.Go(func() { ddb, dErr = dynamolocal.Start() })
	wg.Go(func() { sqsd, sErr = sqslocal.Start() })
	wg.Wait()
	defer func() {
		if ddb != nil {
			ddb.Stop()
		}
		if sqsd != nil {
			sqsd.Stop()
		}
	}()
	if err := errors.Join(dErr, sErr); err != nil {
		return fail(err)
	}
	fmt.Printf("e2e: template %s from %s; SQS server %s at %s; DynamoDB Local at %s; %d alarms and %d composite alarms evaluated on an alarm clock %dx the wall clock\n",
		tmpl.Name, dir, sqsd.Kind(), sqsd.Endpoint(), ddb.Endpoint(), len(tmpl.Alarms), len(tmpl.Composites), alarm.TimeScale)
	code := m.Run()
	if ctlBin != "" && ctlErr == nil {
		os.RemoveAll(filepath.Dir(ctlBin)) // the pipelinectl a scenario built
	}
	printAlarmTable(tmpl)
	return code
}

// checkOnly skips a long scenario under -short: make test runs the core scenarios (the
// runtime contracts, each within about 30 s), make check all of them (README, "What make
// check adds").
func checkOnly(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long scenario: make check runs it (make e2e)")
	}
}

// world is one scenario's private deployment of the template: its own queues and table (names
// suffixed with the scenario), a DynamoDB proxy for fault injection and call counts, an SQS
// proxy for the dispatcher's call counts, and a ledger of every consumer's output.
type world struct {
	t      *testing.T
	d      *standin.Deployment
	sq     *sqs.Client
	pollSQ *sqs.Client // the pollers' client: sq, with every receive in recv
	recv   *receiveLog
	db     *dynamodb.Client
	dynamo *ddbproxy.Proxy // consumers -> DynamoDB Local
	sqsPx  *ddbproxy.Proxy // dispatchers -> SQS server
	ledger *ledger.Ledger

	mu          sync.Mutex
	envs        []*lambdart.Env
	fnOf        map[*lambdart.Env]string // execution environment -> function logical id
	invokeFails []string                 // why invocations through w.invoker failed as a whole

	obs *standin.Observer // the run's metrics, once watchAlarms was called
}

var worldSeq atomic.Int64

func newWorld(t *testing.T, name string) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{t: t, sq: sqsd.Client(), db: ddb.Client(), ledger: ledger.New(), recv: newReceiveLog(), fnOf: map[*lambdart.Env]string{}}
	w.pollSQ = sqsd.Client(func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, w.recv.middleware) })
	suffix := fmt.Sprintf("%s%d", name, worldSeq.Add(1))
	var err error
	if w.d, err = standin.Deploy(ctx, w.sq, w.db, tmpl, suffix); err != nil {
		t.Fatal(err)
	}
	if w.dynamo, err = ddbproxy.New(ddb.Endpoint()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.dynamo.Close() })
	if w.sqsPx, err = ddbproxy.New(sqsd.Endpoint()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.sqsPx.Close() })
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, e := range w.envs {
			e.Close()
		}
		if n, last := w.ledger.NonJSON(); n > 0 {
			t.Errorf("%d consumer output lines were not JSON (the contract is structured logs only); last: %s", n, strings.Join(last, "\n"))
		}
	})
	return w
}

// pipeline returns the template's standard or FIFO pipeline.
func (w *world) pipeline(fifo bool) standin.Pipeline {
	w.t.Helper()
	ps, err := w.d.Template.Pipelines()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range ps {
		if p.Fifo == fifo && p.Dispatcher != "" {
			return p
		}
	}
	w.t.Fatalf("template has no pipeline with fifo=%v and a dispatcher", fifo)
	return standin.Pipeline{}
}

// env starts (lazily, at the first Invoke) one execution environment of a function, with the
// template's environment and the local endpoints.
func (w *world) env(function string, output func([]byte)) *lambdart.Env {
	w.t.Helper()
	return w.envWith(function, output, nil)
}

// envWith is env with some of the template's variables overridden (a scenario that needs,
// say, a record TTL of seconds).
func (w *world) envWith(function string, output func([]byte), overrides map[string]string) *lambdart.Env {
	w.t.Helper()
	vars, err := w.d.Env(function)
	if err != nil {
		w.t.Fatal(err)
	}
	maps.Copy(vars, overrides)
	f := w.d.Template.Functions[function]
	bin, err := f.Binary()
	if err != nil {
		w.t.Fatal(err)
	}
	vars["AWS_ENDPOINT_URL_DYNAMODB"] = w.dynamo.URL
	vars["AWS_ENDPOINT_URL_SQS"] = w.sqsPx.URL
	if obs := w.obs; obs != nil { // the function's EMF lines become metrics
		inner := output
		output = func(line []byte) {
			obs.Line(line)
			if inner != nil {
				inner(line)
			}
		}
	}
	e, err := lambdart.New(lambdart.Config{
		Binary: bins[bin], Env: vars, FunctionName: w.functionName(function),
		Timeout: time.Duration(f.Timeout) * time.Second, MemoryMB: f.MemoryMB,
		Region: sqslocal.Region, Output: output,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	w.envs = append(w.envs, e)
	w.fnOf[e] = function
	w.mu.Unlock()
	return e
}

// functionName is the Lambda function name of a function of the template in this world.
func (w *world) functionName(function string) string { return function + "-" + w.d.Suffix }

// invoke runs one invocation and, when the world watches its alarms, records Lambda's
// metrics for it (an invocation cut short by ctx, a stopping poller, is not one).
func (w *world) invoke(ctx context.Context, e *lambdart.Env, payload []byte) (lambdart.Result, error) {
	start := time.Now()
	res, err := e.Invoke(ctx, payload)
	if w.obs != nil && ctx.Err() == nil {
		w.mu.Lock()
		fn := w.fnOf[e]
		w.mu.Unlock()
		w.obs.Invocation(fn, start, res, err)
	}
	return res, err
}

// invoker adapts an Env to the poller's Invoker (a function error fails the invocation),
// and keeps, for failure messages, why an invocation failed as a whole.
func (w *world) invoker(e *lambdart.Env) poller.Invoker {
	inv := poller.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		res, err := w.invoke(ctx, e, payload)
		if err != nil {
			return nil, err
		}
		if res.FunctionError != nil {
			return nil, res.FunctionError
		}
		return res.Payload, nil
	})
	return poller.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		out, err := inv.Invoke(ctx, payload)
		if err != nil && ctx.Err() == nil {
			w.mu.Lock()
			w.invokeFails = append(w.invokeFails, err.Error())
			w.mu.Unlock()
		}
		return out, err
	})
}

// invokeFailures is why invocations failed as a whole so far.
func (w *world) invokeFailures() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.invokeFails)
}

// poller is the pipeline's event source mapping over the given execution environments, with
// its receives in w.recv.
func (w *world) poller(p standin.Pipeline, envs ...poller.Invoker) *poller.Poller {
	return &poller.Poller{SQS: w.pollSQ, QueueURL: w.d.QueueURL[p.Queue], QueueARN: w.d.QueueARN[p.Queue],
		Region: sqslocal.Region, Mapping: p.Mapping, Fifo: p.Fifo, Envs: envs}
}

// poll runs n consumer environments behind the pipeline's event source mapping until the
// returned stop is called.
func (w *world) poll(p standin.Pipeline, n int) (*poller.Poller, func()) {
	w.t.Helper()
	envs := make([]poller.Invoker, n)
	for i := range envs {
		envs[i] = w.invoker(w.env(p.Consumer, w.consumerOutput))
	}
	pl := w.poller(p, envs...)
	if w.obs != nil {
		w.obs.StartHeartbeats(p.Queue)
	}
	return pl, w.runPoller(pl)
}

// runPoller runs a Poller until the returned stop is called (stop waits for it).
func (w *world) runPoller(pl *poller.Poller) func() {
	if pl.Region == "" {
		pl.Region = sqslocal.Region
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- pl.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				w.t.Errorf("poller: %v", err)
			}
		})
	}
	w.t.Cleanup(stop)
	return stop
}

// consumerOutput feeds a consumer's output line to the ledger (and to stderr with
// E2E_DEBUG=1, to watch a scenario).
func (w *world) consumerOutput(line []byte) {
	w.ledger.Line(line)
	if debug {
		fmt.Fprintf(os.Stderr, "%s consumer: %s\n", w.d.Suffix, line)
	}
}

var debug = os.Getenv("E2E_DEBUG") != ""

// dispatch invokes the pipeline's dispatcher as its schedule would for one firing.
func (w *world) dispatch(e *lambdart.Env, p standin.Pipeline, scheduled time.Time, execID string, items []map[string]any) error {
	s, err := w.d.Template.ScheduleFor(p.Dispatcher)
	if err != nil {
		return err
	}
	in, err := schedule.Input(s, scheduled, execID, items)
	if err != nil {
		return err
	}
	res, err := w.invoke(w.t.Context(), e, in)
	if err != nil {
		return err
	}
	if res.FunctionError != nil {
		return res.FunctionError
	}
	return nil
}

// message is one message a scenario sends straight to a queue.
type message struct {
	Body  string
	Group string // FIFO: the message group; standard: the fair-queue tenant, when set
	Dedup string // FIFO only; default: unique per send
}

var sendSeq atomic.Int64

// send puts messages on a queue in order, ten per SendMessageBatch.
func (w *world) send(queue string, msgs []message) {
	w.t.Helper()
	fifo := w.d.Template.Queues[queue].Fifo()
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.Body)}
			if fifo {
				e.MessageGroupId = aws.String(m.Group)
				dedup := m.Dedup
				if dedup == "" {
					dedup = "send-" + strconv.FormatInt(sendSeq.Add(1), 10)
				}
				e.MessageDeduplicationId = aws.String(dedup)
			} else if m.Group != "" {
				e.MessageGroupId = aws.String(m.Group)
			}
			entries = append(entries, e)
		}
		out, err := w.sq.SendMessageBatch(w.t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(w.d.QueueURL[queue]), Entries: entries})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(out.Failed) > 0 {
			w.t.Fatalf("send: %d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
		}
		if w.obs != nil {
			w.obs.Sent(queue, out.Successful)
		}
	}
}

// depth is the number of messages in a queue, visible or in flight.
func (w *world) depth(queue string) int {
	out, err := w.sq.GetQueueAttributes(w.t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(w.d.QueueURL[queue]),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// waitFor polls cond every 100 ms until it holds or timeout passes (a scenario failure). It
// returns as soon as cond holds: make timeout generous (see patience), it is a bound on a
// broken run, not a speed the pipeline must reach.
func (w *world) waitFor(what string, timeout time.Duration, cond func() bool) time.Duration {
	w.t.Helper()
	start := time.Now()
	for !cond() {
		if waited := time.Since(start); waited > timeout {
			w.t.Fatalf("timed out waiting for %s: %v waited (limit %v): %d effects, outcomes %v, DynamoDB calls %v, invocations failed %q",
				what, waited.Round(100*time.Millisecond), timeout, len(w.ledger.Effects()), w.ledger.Outcomes(), w.dynamo.Counts(), head(w.invokeFailures()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// patience is how long a scenario waits for the messages of queue to be done: as long as the
// redrive policy keeps a message that keeps failing (maxReceiveCount receives, a visibility
// timeout apart), and a minute more for a loaded machine. A message not done by then is in
// the DLQ or lost, so a longer wait could not change the verdict; a shorter one could fail a
// run whose records were only late (on a loaded machine a record not started within
// BATCH_DEADLINE_MARGIN of the 3 s timeout is reported and comes back a visibility timeout
// later).
func (w *world) patience(queue string) time.Duration {
	return time.Duration(w.d.Template.Queues[queue].MaxReceiveCount())*w.visibility(queue) + time.Minute
}

// quiesce closes every execution environment of the world, which waits for their output:
// after it, the ledger holds every line the consumers wrote. Call it once the pollers have
// stopped.
func (w *world) quiesce() {
	w.mu.Lock()
	envs := slices.Clone(w.envs)
	w.mu.Unlock()
	for _, e := range envs {
		e.Close()
	}
}

// receiveLog records every message the pollers received, by body and by id.
type receiveLog struct {
	mu     sync.Mutex
	byBody map[string][]receipt
	ids    map[string]string // MessageId -> body
}

func newReceiveLog() *receiveLog {
	return &receiveLog{byBody: map[string][]receipt{}, ids: map[string]string{}}
}

// middleware is an SQS client option that records the messages of every ReceiveMessage.
func (l *receiveLog) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("e2eReceiveLog",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			sent := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && err == nil && len(r.Messages) > 0 {
				answered := time.Now()
				l.mu.Lock()
				for _, m := range r.Messages {
					body := aws.ToString(m.Body)
					l.byBody[body] = append(l.byBody[body], receipt{sent, answered})
					l.ids[aws.ToString(m.MessageId)] = body
				}
				l.mu.Unlock()
			}
			return out, md, err
		}), middleware.After)
}

// of returns the receipts of the messages with body, in order.
func (l *receiveLog) of(body string) []receipt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.byBody[body])
}

// body is the body of the message received with id, or "" when none was.
func (l *receiveLog) body(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[id]
}

// distinct is how many different messages (by MessageId) were received.
func (l *receiveLog) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// drain reads every message of a queue (a DLQ, once nothing else moves) without deleting:
// each receive hides them for the queue's visibility timeout, long enough to read them all.
func (w *world) drain(queue string) []sqstypes.Message {
	w.t.Helper()
	var all []sqstypes.Message
	for {
		out, err := w.sq.ReceiveMessage(w.t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.d.QueueURL[queue]), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return all
		}
		all = append(all, out.Messages...)
	}
}

// visibility is a queue's visibility timeout from the template.
func (w *world) visibility(queue string) time.Duration {
	return w.d.Template.Queues[queue].VisibilityTimeout()
}

// body is a consumer message body with the default key field.
func body(key string, extra ...string) string {
	b, _ := json.Marshal(map[string]any{"idempotencyKey": key, "payload": strings.Join(extra, ",")})
	return string(b)
}

// report prints one scenario figure line, collected by `make e2e` into the scenario table.
func report(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	t.Log(msg)
	fmt.Printf("FIGURE %s: %s\n", t.Name(), msg)
}

// watched is inv, with each event it is given shown to seen first, with its size in bytes.
func watched(t *testing.T, inv poller.Invoker, seen func(ev events.SQSEvent, size int)) poller.Invoker {
	return poller.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Errorf("the event is not an SQS event: %v", err)
		}
		seen(ev, len(payload))
		return inv.Invoke(ctx, payload)
	})
}
