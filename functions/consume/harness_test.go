package consume

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

// srv is DynamoDB Local, started once for the package; a start failure fails the run.
var srv *dynamolocal.Server

func TestMain(m *testing.M) { os.Exit(testmain.With(m, dynamolocal.Start, &srv)) }

var tableSeq atomic.Int64

// newTable creates a fresh table so tests never see each other's records.
func newTable(t *testing.T, sortKey string) string {
	t.Helper()
	name := fmt.Sprintf("consumer-test-%d", tableSeq.Add(1))
	if err := srv.CreateTable(context.Background(), name, "id", sortKey); err != nil {
		t.Fatalf("create table: %v\n%s", err, srv.Output())
	}
	return name
}

// syncBuffer is stdout for a test: log lines and EMF lines from concurrent records.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines parses every JSON line written so far.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, raw := range bytes.Split(b.buf.Bytes(), []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", raw)
		}
		out = append(out, m)
	}
	return out
}

func (b *syncBuffer) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

type harness struct {
	t     *testing.T
	h     *Handler
	out   *syncBuffer
	table string
	env   map[string]string
}

func lookupFrom(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// newHarness builds a Handler the way start does, from env (plus a fresh table), against
// DynamoDB Local. effect nil means the default LogEffect.
func newHarness(t *testing.T, env map[string]string, effect func(log *slog.Logger) Effect) *harness {
	t.Helper()
	full := map[string]string{"IDEMPOTENCY_TABLE_NAME": newTable(t, env["IDEMPOTENCY_SORT_KEY"]), "LOG_LEVEL": "DEBUG"}
	for k, v := range env {
		full[k] = v
	}
	cfg, err := LoadConfig(lookupFrom(full))
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	log := telemetry.NewLogger(out, cfg.LogLevel)
	var eff Effect
	if effect != nil {
		eff = effect(log)
	}
	h, err := NewHandler(cfg, srv.Client(idempotency.WithoutSDKRetries), eff, log, out)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, h: h, out: out, table: full["IDEMPOTENCY_TABLE_NAME"], env: full}
}

// invoke runs one invocation and returns the failed message ids (sorted), the record lines by
// message id, the effect lines' keys (in order) and the EMF metrics. It resets the output.
func (hs *harness) invoke(ev events.SQSEvent) (failed []string, records map[string]map[string]any, effects []string, metrics map[string]float64) {
	t := hs.t
	t.Helper()
	resp, err := hs.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned an error for a batch: %v", err)
	}
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	sort.Strings(failed)
	records = map[string]map[string]any{}
	emfLines := 0
	for _, l := range hs.out.lines(t) {
		switch {
		case l["_aws"] != nil:
			emfLines++
			// Every metric the line's directives declare: registered ones and those counted
			// in this flush only.
			metrics = map[string]float64{}
			aws, _ := l["_aws"].(map[string]any)
			directives, _ := aws["CloudWatchMetrics"].([]any)
			for _, d := range directives {
				declared, _ := d.(map[string]any)["Metrics"].([]any)
				for _, m := range declared {
					name, _ := m.(map[string]any)["Name"].(string)
					v, _ := l[name].(float64)
					metrics[name] = v
				}
			}
			for _, name := range telemetry.ConsumerMetrics() {
				if _, ok := metrics[name]; !ok {
					t.Errorf("metrics line without the registered %s: %v", name, l)
				}
			}
		case l["message"] == "record outcome":
			id, _ := l["messageId"].(string)
			if records[id] != nil {
				t.Errorf("two record lines for %s: %v and %v", id, records[id], l)
			}
			records[id] = l
		case l["message"] == "effect applied":
			effects = append(effects, l["idempotencyKey"].(string))
		}
	}
	if emfLines != 1 {
		t.Errorf("%d EMF lines, want exactly one flush per invocation", emfLines)
	}
	hs.out.reset()
	return failed, records, effects, metrics
}

func loadEvent(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

// record returns a standard-queue record with the given id and body.
func record(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:work",
		Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}
