package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/dlq"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/functions/consume"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

// The servers, started once for the package; a start failure fails the run.
var (
	sqsSrv *sqslocal.Server
	ddbSrv *dynamolocal.Server
)

// TestMain starts ElasticMQ and DynamoDB Local side by side and points the SDK's standard
// variables at them, so the CLI reaches them the way an operator's shell would
// (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB, static credentials, no config files).
func TestMain(m *testing.M) {
	var wg sync.WaitGroup
	var sqsErr, ddbErr error
	wg.Go(func() { sqsSrv, sqsErr = sqslocal.Start() })
	wg.Go(func() { ddbSrv, ddbErr = dynamolocal.Start() })
	wg.Wait()
	if sqsSrv != nil {
		defer sqsSrv.Stop()
	}
	if ddbSrv != nil {
		defer ddbSrv.Stop()
	}
	if err := errors.Join(sqsErr, ddbErr); err != nil {
		fmt.Fprintln(os.Stderr, "pipelinectl tests: local backends did not start:", err)
		os.Exit(1)
	}
	none := filepath.Join(os.TempDir(), "pipelinectl-test-no-such-file")
	// The go command's build cache sits in the user cache directory unless GOCACHE says
	// otherwise: pinned here before XDG_CACHE_HOME moves, or every build these tests make (the
	// pipelinectl binary, the kit's functions) would start from an empty cache.
	if err := keepGoCache(); err != nil {
		fmt.Fprintln(os.Stderr, "pipelinectl tests:", err)
		os.Exit(1)
	}
	cacheDir, err := os.MkdirTemp("", "pipelinectl-test-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"AWS_REGION": sqslocal.Region, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_SQS": sqsSrv.Endpoint(), "AWS_ENDPOINT_URL_DYNAMODB": ddbSrv.Endpoint(),
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_PROFILE": "", "AWS_ENDPOINT_URL": "",
		// Redrive journals (os.UserCacheDir) in a directory of this run's, not the user's.
		"XDG_CACHE_HOME": cacheDir,
	} {
		os.Setenv(k, v)
	}
	code := jsiitest.Run(m)
	sqsSrv.Stop()
	ddbSrv.Stop()
	if reference.dir != "" {
		os.RemoveAll(reference.dir)
	}
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	// Removed here, not deferred: os.Exit runs no deferred call, and each run's journals and
	// the kit's caches in it came to about 400 MB, left behind in the temporary directory.
	os.RemoveAll(cacheDir)
	os.Exit(code)
}

var seq atomic.Int64

// pipe is one test's pipeline on the local backends: a queue whose redrive policy moves a
// message to its DLQ after 2 receives, the DLQ, a table, and the outputs file that names them.
type pipe struct {
	name, stack, outputs    string
	queueURL, dlqURL, table string
	fifo                    bool
}

func newPipe(t *testing.T, fifo bool) *pipe {
	t.Helper()
	ctx := t.Context()
	n := seq.Add(1)
	p := &pipe{name: "Standard", stack: fmt.Sprintf("Stack%d", n), fifo: fifo, table: fmt.Sprintf("idem-%d", n)}
	suffix, attrs := "", map[string]string{"VisibilityTimeout": "1"}
	if fifo {
		p.name, suffix = "Fifo", ".fifo"
		attrs["FifoQueue"] = "true"
	}
	dlqAttrs := map[string]string{}
	if fifo {
		dlqAttrs["FifoQueue"] = "true"
	}
	var dlqArn string
	var err error
	if p.dlqURL, dlqArn, err = sqsSrv.CreateQueue(ctx, fmt.Sprintf("dlq-%d%s", n, suffix), dlqAttrs); err != nil {
		t.Fatal(err)
	}
	attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqArn)
	if p.queueURL, _, err = sqsSrv.CreateQueue(ctx, fmt.Sprintf("work-%d%s", n, suffix), attrs); err != nil {
		t.Fatal(err)
	}
	if err := ddbSrv.CreateTable(ctx, p.table, "id", ""); err != nil {
		t.Fatal(err)
	}
	p.outputs = filepath.Join(t.TempDir(), "outputs.json")
	p.writeOutputs(t, "600h0m0s") // the reference stack's default record TTL
	return p
}

// writeOutputs writes the outputs file as 'cdk deploy --outputs-file' would, with the
// consumer's record TTL.
func (p *pipe) writeOutputs(t *testing.T, recordTTL string) {
	t.Helper()
	b, _ := json.Marshal(map[string]map[string]string{p.stack: {
		p.name + "QueueUrl": p.queueURL, p.name + "DeadLetterQueueUrl": p.dlqURL,
		p.name + "ConsumerFunctionName": "consumer", p.name + "RecordTTL": recordTTL, "IdempotencyTableName": p.table,
	}})
	if err := os.WriteFile(p.outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ctl runs pipelinectl with args and returns its exit code, stdout and stderr.
func ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(t.Context(), args, &out, &errOut)
	t.Logf("$ pipelinectl %s   (exit %d, %s)\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// mustCtl is ctl for a command that must succeed.
func mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	return ctlWant(t, cli.ExitOK, args...)
}

// ctlWant is ctl for a command that must exit with code.
func ctlWant(t *testing.T, code int, args ...string) string {
	t.Helper()
	got, out, errOut := ctl(t, args...)
	if got != code {
		t.Fatalf("pipelinectl %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, errOut)
	}
	return out
}

// (p *pipe) args are the flags that find this pipeline from its outputs file.
func (p *pipe) args(cmd ...string) []string {
	return append(cmd, "--outputs", p.outputs, "--pipeline", p.name)
}

// consumer runs the real consumer library (functions/consume) on the pipe's queue, with an
// effect that records each key it runs, in order, and fails for poisoned keys until fixed.
type consumer struct {
	p       *pipe
	handler consume.LambdaFunc
	mu      sync.Mutex
	effects []string // keys, in the order their effects ran
	poison  map[string]bool
	fixed   atomic.Bool
	// lostDeletes are keys whose messages are never deleted although their records complete:
	// the invocation timed out after them (a later record of its batch hung), so the event
	// source mapping deleted nothing. Until cleared, they go round to the DLQ COMPLETED.
	lostDeletes sync.Map
}

func newConsumer(t *testing.T, p *pipe, poison ...string) *consumer {
	return newConsumerEnv(t, p, nil, poison...)
}

// newConsumerEnv is newConsumer with extra environment (e.g. a short IDEMPOTENCY_RECORD_TTL).
func newConsumerEnv(t *testing.T, p *pipe, extra map[string]string, poison ...string) *consumer {
	c := &consumer{p: p, poison: map[string]bool{}}
	for _, k := range poison {
		c.poison[k] = true
	}
	env := map[string]string{"IDEMPOTENCY_TABLE_NAME": p.table, "IDEMPOTENCY_KEY_PREFIX": p.name, "DEAD_LETTER_QUEUE_URL": p.dlqURL,
		"AWS_REGION": sqslocal.Region, "IDEMPOTENCY_VALIDATE_PAYLOAD": "true"}
	maps.Copy(env, extra)
	c.handler = consume.Init(func(consume.Env) (consume.Effect, error) {
		return func(ctx context.Context, msg consume.Message) ([]byte, error) {
			if c.poison[msg.Key] && !c.fixed.Load() {
				return nil, fmt.Errorf("downstream rejects %s", msg.Key)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.effects = append(c.effects, msg.Key)
			return nil, nil
		}, nil
	}, consume.WithLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }),
		consume.WithOutput(io.Discard), consume.WithDynamoDB(ddbSrv.Client()), consume.WithSQS(sqsSrv.Client()))
	return c
}

func (c *consumer) ran() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.effects)
}

// drain plays the event source mapping until the queue is empty: receive a batch, hand it
// to the handler, delete what succeeded. Failed records come back after the 1 s visibility
// timeout, and after 2 receives SQS moves them to the DLQ.
func (c *consumer) drain(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	api := sqsSrv.Client()
	q, err := cli.GetQueue(ctx, api, c.p.queueURL)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 2*time.Minute {
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.p.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			if q := queueCounts(t, c.p.queueURL); q == [2]int64{} {
				t.Logf("queue drained in %s", time.Since(start).Round(time.Millisecond))
				return
			}
			continue
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
				Body: aws.ToString(m.Body), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
				EventSourceARN: q.ARN} // a FIFO ARN makes the batch processor keep group order
			for k, a := range m.MessageAttributes {
				rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(a.DataType), StringValue: a.StringValue}
			}
			ev.Records = append(ev.Records, rec)
		}
		resp, err := c.handler(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range out.Messages {
			if _, lost := c.lostDeletes.Load(keyOf(aws.ToString(m.Body))); lost {
				continue
			}
			if !failed[aws.ToString(m.MessageId)] {
				if _, err := api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.p.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Fatalf("queue not drained after 2 minutes: %v", queueCounts(t, c.p.queueURL))
}

// dlqSettles waits (10 s at most) for a queue's counts to read want. The summary's own
// visible / in-flight split is read right after the run gives its messages back, and the
// server may still count one in flight for a moment: the test checks the depth here instead.
//
// ElasticMQ moves a message that reached maxReceiveCount to the DLQ asynchronously (one
// actor hands it to another): the source queue can read empty before the DLQ shows it, the
// more so on a loaded machine. So a test waits here for what the DLQ must hold before it
// acts on the DLQ.
func dlqSettles(t *testing.T, url string, want [2]int64) {
	t.Helper()
	start := time.Now()
	for {
		q := queueCounts(t, url)
		if q == want {
			t.Logf("%s read %v after %s", url, want, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > time.Minute {
			t.Errorf("%s reads %v after %s, want %v", url, q, time.Since(start).Round(time.Millisecond), want)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queueCounts is a queue's approximate (visible, in flight) counts.
func queueCounts(t *testing.T, url string) [2]int64 {
	t.Helper()
	q, err := cli.GetQueue(t.Context(), sqsSrv.Client(), url)
	if err != nil {
		t.Fatal(err)
	}
	return [2]int64{q.Visible, q.InFlight}
}

// send puts messages on the pipe's queue: key "" sends a body without an idempotency key
// (bad input); on a FIFO queue each in the group given.
func (p *pipe) send(t *testing.T, group string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		body := fmt.Sprintf(`{"idempotencyKey":%q,"n":%d}`, k, seq.Add(1))
		if k == "" {
			body = `{"no":"key"}`
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(p.queueURL), MessageBody: aws.String(body)}
		if p.fifo {
			in.MessageGroupId = aws.String(group)
			in.MessageDeduplicationId = aws.String(strconv.FormatInt(seq.Add(1), 10))
		}
		if _, err := sqsSrv.Client().SendMessage(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
}

// keyOf is the idempotency key of a body p.send wrote, "" for bad input.
func keyOf(body string) string {
	var b struct {
		Key string `json:"idempotencyKey"`
	}
	_ = json.Unmarshal([]byte(body), &b)
	return b.Key
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func count(keys []string, k string) int {
	n := 0
	for _, x := range keys {
		if x == k {
			n++
		}
	}
	return n
}

// The loop on a standard pipeline: poison in, inspect, dry run, fix, redrive (bad input
// stays), each effect once, then the bad input moved on request, and the records.
func TestStandardInspectRedriveRecord(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	c := newConsumer(t, p, "k1", "k3")
	p.send(t, "", "k1", "k2", "k3", "")
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{3, 0})
	if got := c.ran(); !slices.Equal(got, []string{"k2"}) {
		t.Fatalf("effects before the fix = %v, want [k2]", got)
	}

	out := mustCtl(t, p.args("dlq", "inspect", "--sample", "1")...)
	wantContains(t, "inspect", out, "(standard)", "source    "+p.queueURL, "3 visible", "scanned   3 in ",
		"redrive policy  2", "value_missing   1", "stays (bad input; --include-invalid moves it)",
		"attr DeadLetterReason  value_missing: ", "attr SourceMessageId", `"idempotencyKey":"k`)
	if q := queueCounts(t, p.dlqURL); q != [2]int64{3, 0} {
		t.Errorf("DLQ after inspect = %v visible/in flight, want [3 0]: inspect must not consume", q)
	}

	out = mustCtl(t, p.args("dlq", "redrive")...)
	wantContains(t, "dry run", out, "scanned      3: 2 to move, 1 to leave (1 bad input, 0 older than the record TTL)", "Dry run: nothing moved")
	if q := queueCounts(t, p.dlqURL); q != [2]int64{3, 0} {
		t.Errorf("DLQ after the dry run = %v, want [3 0]", q)
	}

	c.fixed.Store(true)
	out = ctlWant(t, cli.ExitLeft, p.args("dlq", "redrive", "--yes", "--rate", "50")...)
	wantContains(t, "redrive", out, "method       receive, send, delete", "moved        2\n", "left         in the DLQ: ", "; kept: 1 bad input (--include-invalid moves them)",
		"done, left   everything to move has moved; 1 message stays in the DLQ by rule (the left line's count): the 1 kept above (exit 4)", "audit        ")
	dlqSettles(t, p.dlqURL, [2]int64{1, 0})
	c.drain(t)
	got := c.ran()
	for _, k := range []string{"k1", "k2", "k3"} {
		if n := count(got, k); n != 1 {
			t.Errorf("effect of %s ran %d times, want once (effects %v)", k, n, got)
		}
	}

	// Bad input moves on request, by the move task: the consumer dead-letters it again.
	out = mustCtl(t, p.args("dlq", "redrive", "--yes", "--include-invalid")...)
	wantContains(t, "redrive --include-invalid", out, "method       SQS message move task", "move task COMPLETED: 1 moved", "moved        1\nleft         in the DLQ: 0 visible, 0 in flight")
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{1, 0}) // dead-lettered again
	if got := c.ran(); len(got) != 3 {
		t.Errorf("effects = %v, want 3", got)
	}

	out = mustCtl(t, p.args("record", "get", "k1")...)
	wantContains(t, "record get", out, `record   "Standard#k1"`, "status   COMPLETED", "attempt  3", "lock     none", "payload  sha256 ", "result   none")
	code, _, errOut := ctl(t, p.args("record", "release", "k1")...)
	if code != cli.ExitError {
		t.Errorf("release of a COMPLETED record: exit %d, want %d", code, cli.ExitError)
	}
	wantContains(t, "release COMPLETED", errOut, `release refused: record "Standard#k1": the record is COMPLETED (attempt 3)`)
	code, _, errOut = ctl(t, p.args("record", "get", "nope")...)
	if code != cli.ExitError || !strings.Contains(errOut, `pipelinectl: idempotency: no record: record "Standard#nope"`) {
		t.Errorf("record get of an absent key: exit %d, %q", code, errOut)
	}
}

// The loop on a FIFO pipeline: a poison message holds its group, so the whole group ends in
// the DLQ; after the fix the redrive puts it back in order and every effect runs once, in
// order. The bad input's group stays behind.
func TestFifoInspectRedriveRecord(t *testing.T) {
	t.Parallel()
	p := newPipe(t, true)
	// All of g1 fails until fixed, not only a1 with the rest skipped behind it. SQS counts
	// receives per message and moves each to the DLQ on its own count: a message behind a1
	// that was received once less than a1 is delivered, and run, once a1 is in the DLQ (FIFO
	// keeps order only among the messages still in the queue). A loaded machine made that
	// happen once (make test-stress, 1 run of 10: a3 ran before the fix and the DLQ held 3),
	// so the test did not set up what it meant to. Each failing on its own, all three reach
	// the DLQ whatever their counts, and the redrive must still bring them back in order.
	c := newConsumer(t, p, "a1", "a2", "a3")
	p.send(t, "g1", "a1", "a2", "a3")
	p.send(t, "g2", "b1")
	p.send(t, "bad", "")
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{4, 0})
	if got := c.ran(); !slices.Equal(got, []string{"b1"}) {
		t.Fatalf("effects before the fix = %v, want [b1]", got)
	}
	out := mustCtl(t, p.args("dlq", "inspect")...)
	wantContains(t, "inspect", out, "(FIFO)", "redrive policy  3", "value_missing   1", "FIFO groups scanned: bad (1), g1 (3)",
		"redrive policy, sample 1 of 3", "  group                  bad", `{"idempotencyKey":"a1"`)
	if q := queueCounts(t, p.dlqURL); q != [2]int64{4, 0} {
		t.Errorf("DLQ after inspect = %v, want [4 0]", q)
	}

	out = mustCtl(t, p.args("dlq", "redrive")...)
	wantContains(t, "dry run", out, "scanned      4: 3 to move, 1 to leave (1 bad input, 0 older than the record TTL, 0 behind those in their FIFO group)", "Dry run: nothing moved")

	c.fixed.Store(true)
	out = ctlWant(t, cli.ExitLeft, p.args("dlq", "redrive", "--yes")...)
	wantContains(t, "redrive", out, "method       receive, send, delete", "group bad stays from message ",
		"moved        3\ngave back    1 message this run held: visible again at once\nleft         in the DLQ: ", "; kept: 1 bad input")
	dlqSettles(t, p.dlqURL, [2]int64{1, 0})
	c.drain(t)
	if got := c.ran(); !slices.Equal(got, []string{"b1", "a1", "a2", "a3"}) {
		t.Errorf("effects = %v, want [b1 a1 a2 a3]: each once, g1 in order", got)
	}
	out = mustCtl(t, p.args("record", "get", "a1")...)
	wantContains(t, "record get", out, `record   "Fifo#a1"`, "status   COMPLETED", "attempt  3")
}

// With no bad input a FIFO DLQ moves whole: by the move task where the server runs it for
// FIFO queues, else by receive, send, delete; either way in order and once.
func TestFifoRedriveAll(t *testing.T) {
	t.Parallel()
	p := newPipe(t, true)
	c := newConsumer(t, p, "a1", "a2", "b1", "b2") // each fails on its own: see TestFifoInspectRedriveRecord
	p.send(t, "g1", "a1", "a2")
	p.send(t, "g2", "b1", "b2")
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{4, 0})
	c.fixed.Store(true)
	out := mustCtl(t, p.args("dlq", "redrive", "--yes")...)
	wantContains(t, "redrive", out, "moved        4\nleft         in the DLQ: 0 visible, 0 in flight")
	c.drain(t)
	got := c.ran()
	var g1, g2 []string
	for _, k := range got {
		if k[0] == 'a' {
			g1 = append(g1, k)
		} else {
			g2 = append(g2, k)
		}
	}
	if !slices.Equal(g1, []string{"a1", "a2"}) || !slices.Equal(g2, []string{"b1", "b2"}) {
		t.Errorf("effects = %v, want a1 a2 and b1 b2 in order, each once", got)
	}
}

// A message whose effect completed but whose delete was lost (the invocation timed out later
// in its batch) goes round to the DLQ with a COMPLETED record. Redriven after that record
// expired, it would run its effect a second time: the redrive refuses it by its age, names
// it, and moves it only with --include-expired, which shows the second run it guards against.
func TestRedriveRefusesMessagesOlderThanTheRecordTTL(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	const ttl = 2 * time.Second
	p.writeOutputs(t, ttl.String())
	c := newConsumerEnv(t, p, map[string]string{"IDEMPOTENCY_RECORD_TTL": ttl.String(), "IDEMPOTENCY_LOCK_CAP": "1s"})
	c.lostDeletes.Store("done", true)
	p.send(t, "", "done")
	c.drain(t)
	if got := c.ran(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("effects = %v, want [done]: it completed once, then its copies were duplicates", got)
	}
	dlqSettles(t, p.dlqURL, [2]int64{1, 0}) // the completed message, dead-lettered by the redrive policy
	if t.Failed() {
		t.FailNow()
	}
	out := mustCtl(t, p.args("record", "get", "done")...)
	wantContains(t, "record get", out, "status   COMPLETED")

	// Past the record's expiry (whole seconds, so up to 1 s more): the store treats it as absent.
	start := time.Now()
	time.Sleep(ttl + 1500*time.Millisecond)
	t.Logf("waited %s for the record to expire", time.Since(start).Round(time.Millisecond))
	c.lostDeletes.Clear()

	out = mustCtl(t, p.args("dlq", "inspect")...)
	wantContains(t, "inspect", out, "record TTL   2s (output StandardRecordTTL of stack "+p.stack+" in "+p.outputs+")",
		"a message first sent more than 1s ago may have outlived its record",
		"stays (older than the record TTL; --include-expired moves it)", "Older than the record TTL 2s (first sent more than 1s ago), 1: ")
	out = ctlWant(t, cli.ExitLeft, p.args("dlq", "redrive", "--yes")...)
	wantContains(t, "redrive", out, "scanned      1: 0 to move, 1 to leave (0 bad input, 1 older than the record TTL)",
		"redrive policy         1 stay (older than the record TTL)", "older than the record TTL: ", ": stays", "method       receive, send, delete",
		"moved        0\ngave back    1 message this run held: visible again at once\nleft         in the DLQ: ", "; kept: 1 older than the record TTL (--include-expired moves them",
		"done, left   nothing moved; 1 message stays in the DLQ by rule (the left line's count): the 1 kept above (exit 4)")
	dlqSettles(t, p.dlqURL, [2]int64{1, 0})
	c.drain(t)
	if got := c.ran(); count(got, "done") != 1 {
		t.Fatalf("effects after the refused redrive = %v, want done once", got)
	}

	// What the check prevents: moved anyway, the expired record no longer stops a second run.
	out = mustCtl(t, p.args("dlq", "redrive", "--yes", "--include-expired")...)
	wantContains(t, "redrive --include-expired", out, "WARNING: moves (--include-expired)", "moved        1\nleft         in the DLQ: 0 visible, 0 in flight")
	c.drain(t)
	if got := c.ran(); count(got, "done") != 2 {
		t.Errorf("effects after --include-expired = %v, want done twice (the record had expired)", got)
	}
}

// Without a known record TTL the ages go unchecked, and both commands say so.
func TestUnknownRecordTTLIsSaid(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	out := mustCtl(t, "dlq", "inspect", "--queue-url", p.dlqURL)
	wantContains(t, "inspect --queue-url", out, "record TTL   UNKNOWN (no output RecordTTL; give --record-ttl")
	out = mustCtl(t, "dlq", "redrive", "--queue-url", p.dlqURL, "--to", p.queueURL)
	wantContains(t, "redrive --queue-url", out, "message ages are NOT checked")
	out = mustCtl(t, "dlq", "inspect", "--queue-url", p.dlqURL, "--record-ttl", "72h")
	wantContains(t, "inspect --record-ttl", out, "record TTL   72h0m0s (--record-ttl)")
}

// A message redriven by receive, send, delete carries its first send's time: its age still
// counts from there when it comes back to the DLQ.
func TestRedriveCarriesFirstSent(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	c := newConsumer(t, p, "k1")
	p.send(t, "", "k1")
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{1, 0})
	peeked, err := dlq.Peek(t.Context(), sqsSrv.Client(), p.dlqURL, 10, 4*time.Second)
	if err != nil || len(peeked) != 1 {
		t.Fatalf("DLQ scan: %d messages, %v", len(peeked), err)
	}
	first := dlq.Sent(peeked[0])
	// SentTimestamp has millisecond resolution: make the resend's clearly later.
	time.Sleep(1100 * time.Millisecond)
	// --max 1: the scan cannot vouch for every message, so the receive path moves it.
	mustCtl(t, append(p.args("dlq", "redrive", "--yes"), "--include-invalid", "--max", "1")...)
	c.drain(t) // k1 still poisoned: back to the DLQ, as a new message
	dlqSettles(t, p.dlqURL, [2]int64{1, 0})
	peeked, err = dlq.Peek(t.Context(), sqsSrv.Client(), p.dlqURL, 10, 4*time.Second)
	if err != nil || len(peeked) != 1 {
		t.Fatalf("DLQ scan after the round: %d messages, %v", len(peeked), err)
	}
	if got := dlq.FirstSent(peeked[0]); !got.Equal(first) || !dlq.Sent(peeked[0]).After(first) {
		t.Errorf("first sent %s (sent %s), want the original %s", got, dlq.Sent(peeked[0]), first)
	}
}

// SQS allows 10 message attributes. Bad input dead-lettered by the real consumer on
// ElasticMQ: with 9 of its own, the one free slot is DeadLetterReason with the source id at
// its end; with 10, the copy keeps exactly its own, and dlq inspect can only group it under
// "redrive policy" (the README says so, and what to deduplicate on).
func TestDeadLetterAttributesWithNineAndTenOfTheMessagesOwn(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	c := newConsumer(t, p)
	ids := map[int]string{}
	for _, n := range []int{9, 10} {
		attrs := map[string]sqstypes.MessageAttributeValue{}
		for i := range n {
			attrs[fmt.Sprintf("a%d", i)] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		out, err := sqsSrv.Client().SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(p.queueURL), MessageBody: aws.String(fmt.Sprintf(`{"no":"key","n":%d}`, n)), MessageAttributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = aws.ToString(out.MessageId)
	}
	c.drain(t)
	dlqSettles(t, p.dlqURL, [2]int64{2, 0})
	msgs, err := dlq.Peek(t.Context(), sqsSrv.Client(), p.dlqURL, 10, 4*time.Second)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("DLQ scan: %d messages, %v; want the 2 bad ones", len(msgs), err)
	}
	for _, m := range msgs {
		n := len(m.MessageAttributes)
		_, hasSource := m.MessageAttributes[contract.AttrSourceMessageID]
		reason := aws.ToString(m.MessageAttributes[contract.AttrDeadLetterReason].StringValue)
		switch {
		case strings.Contains(aws.ToString(m.Body), `"n":9`):
			if n != 10 || hasSource || !strings.HasPrefix(reason, "value_missing: ") || !strings.HasSuffix(reason, "(source message "+ids[9]+")") {
				t.Errorf("9 of its own: %d attributes, SourceMessageId %v, DeadLetterReason %q; want 10, none, the reason ending in the source id", n, hasSource, reason)
			}
		default:
			if n != 10 || hasSource || reason != "" {
				t.Errorf("10 of its own: %d attributes, SourceMessageId %v, DeadLetterReason %q; want its own 10 only", n, hasSource, reason)
			}
		}
	}
	out := mustCtl(t, p.args("dlq", "inspect")...)
	wantContains(t, "inspect", out, "redrive policy  1", "value_missing   1")
}

// keepGoCache sets GOCACHE to the build cache the go command uses now, so that a test that
// moves XDG_CACHE_HOME (or HOME) keeps it.
func keepGoCache() error {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return fmt.Errorf("go env GOCACHE: %w", err)
	}
	return os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
}

// built is the pipelinectl binary, built once for the tests that run it as a process.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func ctlBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "pipelinectl-bin-"); built.err != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, "pipelinectl"), ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "pipelinectl")
}
