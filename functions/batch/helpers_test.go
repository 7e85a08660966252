package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

const (
	stdARN  = "arn:aws:sqs:eu-west-1:123456789012:work"
	fifoARN = "arn:aws:sqs:eu-west-1:123456789012:work.fifo"
)

// stdEvent builds a standard-queue event with one record per id.
func stdEvent(ids ...string) events.SQSEvent {
	var ev events.SQSEvent
	for _, id := range ids {
		ev.Records = append(ev.Records, sqsMsg(id, "", stdARN))
	}
	return ev
}

// fifoEvent builds a FIFO event from "group:id" specs; a spec without ":" has no group.
func fifoEvent(specs ...string) events.SQSEvent {
	var ev events.SQSEvent
	for _, s := range specs {
		group, id, ok := strings.Cut(s, ":")
		if !ok {
			group, id = "", s
		}
		ev.Records = append(ev.Records, sqsMsg(id, group, fifoARN))
	}
	return ev
}

func sqsMsg(id, group, arn string) events.SQSMessage {
	m := events.SQSMessage{
		MessageId:      id,
		Body:           `{"idempotencyKey":"` + id + `"}`,
		EventSource:    "aws:sqs",
		EventSourceARN: arn,
		AWSRegion:      "eu-west-1",
		Attributes:     map[string]string{"ApproximateReceiveCount": "2"},
	}
	if group != "" {
		m.Attributes["MessageGroupId"] = group
	}
	return m
}

// checkAccounted is the invariant every test asserts: one result per record in event order
// with the record's identity, a valid status, an error exactly when not succeeded, and a
// response naming, once each and in event order, exactly the ids that did not succeed.
// Nothing is lost: every record either succeeded or is named in batchItemFailures.
func checkAccounted(t *testing.T, ev events.SQSEvent, rep Report) {
	t.Helper()
	if len(rep.Results) != len(ev.Records) {
		t.Fatalf("%d results for %d records", len(rep.Results), len(ev.Records))
	}
	var wantFailed []string
	failedSeen := map[string]bool{}
	for i, res := range rep.Results {
		rec := ev.Records[i]
		if res.MessageID != rec.MessageId || res.GroupID != rec.Attributes["MessageGroupId"] {
			t.Errorf("result %d is (%q,%q), record is (%q,%q): not in event order",
				i, res.MessageID, res.GroupID, rec.MessageId, rec.Attributes["MessageGroupId"])
		}
		if res.Status < StatusSucceeded || res.Status > StatusSkippedDeadline {
			t.Errorf("result %d (%s): invalid status %v", i, res.MessageID, res.Status)
		}
		if (res.Status == StatusSucceeded) != (res.Err == nil) {
			t.Errorf("result %d (%s): status %v with err %v", i, res.MessageID, res.Status, res.Err)
		}
		if res.Status != StatusSucceeded && !failedSeen[res.MessageID] {
			failedSeen[res.MessageID] = true
			wantFailed = append(wantFailed, res.MessageID)
		}
	}
	resp := rep.Response()
	if resp.BatchItemFailures == nil {
		t.Fatal("BatchItemFailures is nil; Lambda must get a list")
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if !slices.Equal(got, wantFailed) {
		t.Errorf("batchItemFailures = %q, want %q", got, wantFailed)
	}
	for i, rec := range ev.Records {
		if rep.Results[i].Status != StatusSucceeded && !slices.Contains(got, rec.MessageId) {
			t.Errorf("record %d (%s) failed but is not in batchItemFailures: it would be lost", i, rec.MessageId)
		}
	}
	raw, err := json.Marshal(resp)
	if err != nil || !bytes.HasPrefix(raw, []byte(`{"batchItemFailures":[`)) {
		t.Errorf("response JSON %s (%v)", raw, err)
	}
}

// statusesByID maps message id -> status string for compact table assertions.
func statusesByID(rep Report) map[string]Status {
	m := map[string]Status{}
	for _, r := range rep.Results {
		if !r.Duplicate {
			m[r.MessageID] = r.Status
		}
	}
	return m
}

// recorder wraps a handler and records which records it saw, globally and per group.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	byGroup map[string][]string
	count   map[string]int
}

func newRecorder() *recorder {
	return &recorder{byGroup: map[string][]string{}, count: map[string]int{}}
}

func (r *recorder) wrap(fn Handler) Handler {
	return func(ctx context.Context, msg events.SQSMessage) error {
		r.mu.Lock()
		r.calls = append(r.calls, msg.MessageId)
		g := msg.Attributes["MessageGroupId"]
		r.byGroup[g] = append(r.byGroup[g], msg.MessageId)
		r.count[msg.MessageId]++
		r.mu.Unlock()
		if fn == nil {
			return nil
		}
		return fn(ctx, msg)
	}
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// failIDs returns a handler failing the given message ids.
func failIDs(ids ...string) Handler {
	return func(_ context.Context, msg events.SQSMessage) error {
		if slices.Contains(ids, msg.MessageId) {
			return fmt.Errorf("process %s: %w", msg.MessageId, errBoom)
		}
		return nil
	}
}

var errBoom = errors.New("boom")

// barrier releases its waiters once n have arrived. The timeout only turns a broken
// implementation (that never lets n run at once) into a failure instead of a hung test.
type barrier struct {
	n       int32
	arrived atomic.Int32
	open    chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: int32(n), open: make(chan struct{})} }

func (b *barrier) wait() error {
	if b.arrived.Add(1) == b.n {
		close(b.open)
	}
	select {
	case <-b.open:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("barrier: only %d of %d arrived; they never ran concurrently", b.arrived.Load(), b.n)
	}
}

// fakeClock drives the deadline guard and hard stop deterministically.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}
func (c *fakeClock) now() time.Time  { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// newTestProcessor builds a Processor logging JSON into the returned buffer. Its hard stop
// never fires unless a test replaces p.after.
func newTestProcessor(t *testing.T, opts Options) (*Processor, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	if opts.Logger == nil {
		opts.Logger = telemetry.NewLogger(buf, -8)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	p.after = func(time.Duration) <-chan time.Time { return nil }
	return p, buf
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the decoded JSON log lines whose message is msg.
func (b *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line not JSON: %v: %s", err, l)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}
