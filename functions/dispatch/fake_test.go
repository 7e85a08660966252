package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// fakeSQS records every SendMessageBatch call; respond decides the outcome (nil: all accepted).
type fakeSQS struct {
	mu      sync.Mutex
	calls   []*sqs.SendMessageBatchInput
	respond func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*fakeSQS)(nil)

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, in)
	if f.respond == nil {
		return acceptAll(in), nil
	}
	return f.respond(len(f.calls)-1, in)
}

// entries returns every entry of every call, in call order.
func (f *fakeSQS) entries() []types.SendMessageBatchRequestEntry {
	var out []types.SendMessageBatchRequestEntry
	for _, c := range f.calls {
		out = append(out, c.Entries...)
	}
	return out
}

func acceptAll(in *sqs.SendMessageBatchInput) *sqs.SendMessageBatchOutput {
	return respondWith(in, nil)
}

// respondWith accepts every entry except those in fail (entry id -> failure).
func respondWith(in *sqs.SendMessageBatchInput, fail map[string]types.BatchResultErrorEntry) *sqs.SendMessageBatchOutput {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if f, bad := fail[aws.ToString(e.Id)]; bad {
			f.Id = e.Id
			out.Failed = append(out.Failed, f)
			continue
		}
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{
			Id: e.Id, MessageId: aws.String("mid-" + aws.ToString(e.Id)), MD5OfMessageBody: aws.String("x")})
	}
	return out
}

func internalError() types.BatchResultErrorEntry {
	return types.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false}
}

type testEnv struct {
	h      *Handler
	sqs    *fakeSQS
	logs   *bytes.Buffer
	emf    *bytes.Buffer
	sleeps []time.Duration
}

func testConfig(fifo bool) Config {
	cfg := Config{
		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", JobName: "nightly",
		SendMaxAttempts: 5, MetricsNamespace: "Test", LogLevel: slog.LevelDebug,
	}
	if fifo {
		cfg.QueueURL += ".fifo"
		cfg.Fifo = true
		cfg.DefaultGroupID = "default-group"
	}
	return cfg
}

func newTestEnv(t *testing.T, cfg Config, items ItemSource) *testEnv {
	t.Helper()
	te := &testEnv{sqs: &fakeSQS{}, logs: &bytes.Buffer{}, emf: &bytes.Buffer{}}
	te.h = NewHandler(cfg, te.sqs, items, telemetry.NewLogger(te.logs, slog.LevelDebug), te.emf)
	te.h.sleep = func(ctx context.Context, d time.Duration) error {
		te.sleeps = append(te.sleeps, d)
		return ctx.Err()
	}
	te.h.jitter = func(max time.Duration) time.Duration { return max } // the ceiling, so waits are exact
	return te
}

func loadEvent(t *testing.T) Event {
	t.Helper()
	raw, err := os.ReadFile("testdata/schedule_event.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func eventWithItems(n int) Event {
	ev := Event{ScheduledTime: "2025-03-04T05:00:00Z", ExecutionID: "exec", Job: "nightly"}
	for i := range n {
		ev.Items = append(ev.Items, Item{ID: "item-" + strconv.Itoa(i)})
	}
	return ev
}

// metrics parses the single EMF line the handler flushed.
func (te *testEnv) metrics(t *testing.T) map[string]any {
	t.Helper()
	lines := bytes.Split(bytes.TrimSpace(te.emf.Bytes()), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("want exactly one EMF line per invocation, got %d: %s", len(lines), te.emf)
	}
	var m map[string]any
	if err := json.Unmarshal(lines[0], &m); err != nil {
		t.Fatalf("EMF line: %v", err)
	}
	te.emf.Reset()
	return m
}

// logLines returns the parsed log lines whose message is msg.
func (te *testEnv) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(te.logs.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}
