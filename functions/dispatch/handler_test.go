package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
)

func TestHandleFIFOMessages(t *testing.T) {
	raw, err := os.ReadFile("testdata/fifo_entries.json")
	if err != nil {
		t.Fatal(err)
	}
	var want []struct{ Body, Key, Group, Dedup string }
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	te := newTestEnv(t, testConfig(true), nil)
	sum, err := te.h.Handle(context.Background(), loadEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	if sum != (Summary{Job: "nightly", Occurrence: "2025-03-04T05:00:00Z", Items: 3, Sent: 3}) {
		t.Errorf("summary = %+v", sum)
	}
	if len(te.sqs.calls) != 1 || aws.ToString(te.sqs.calls[0].QueueUrl) != testConfig(true).QueueURL {
		t.Fatalf("calls = %d, want 1 to the queue", len(te.sqs.calls))
	}
	got := te.sqs.entries()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		e := got[i]
		attr := e.MessageAttributes[attrKey]
		if aws.ToString(e.MessageBody) != w.Body {
			t.Errorf("entry %d body\n got %s\nwant %s", i, aws.ToString(e.MessageBody), w.Body)
		}
		if aws.ToString(attr.DataType) != "String" || aws.ToString(attr.StringValue) != w.Key || len(e.MessageAttributes) != 1 {
			t.Errorf("entry %d attributes = %+v, want only IdempotencyKey String %q", i, e.MessageAttributes, w.Key)
		}
		if aws.ToString(e.MessageGroupId) != w.Group || aws.ToString(e.MessageDeduplicationId) != w.Dedup {
			t.Errorf("entry %d group/dedup = %q/%q, want %q/%q", i, aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId), w.Group, w.Dedup)
		}
		if w.Dedup != msgkey.DeduplicationID(w.Key) {
			t.Errorf("fixture: dedup %q is not DeduplicationID(%q)", w.Dedup, w.Key)
		}
	}
}

func TestHandleFIFOLongKeyHashesDedupID(t *testing.T) {
	id := strings.Repeat("x", 200)
	te := newTestEnv(t, testConfig(true), nil)
	ev := Event{ScheduledTime: "2025-03-04T05:06:07Z", Items: []Item{{ID: id}}}
	if _, err := te.h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	e := te.sqs.entries()[0]
	key := aws.ToString(e.MessageAttributes[attrKey].StringValue)
	if dedup := aws.ToString(e.MessageDeduplicationId); len(dedup) != 64 || dedup != msgkey.DeduplicationID(key) {
		t.Errorf("dedup id %q for a %d-byte key, want its sha256 hex", dedup, len(key))
	}
}

func TestHandleStandardQueue(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	if _, err := te.h.Handle(context.Background(), loadEvent(t)); err != nil {
		t.Fatal(err)
	}
	for i, e := range te.sqs.entries() {
		if e.MessageDeduplicationId != nil {
			t.Errorf("entry %d: dedup id on a standard queue", i)
		}
		wantGroup := []string{"tenant-1", "", ""}[i] // fair-queue tenant only where the item names one
		if aws.ToString(e.MessageGroupId) != wantGroup {
			t.Errorf("entry %d: group %q, want %q", i, aws.ToString(e.MessageGroupId), wantGroup)
		}
	}
}

// The scheduler may fire twice, or Lambda may retry: the same scheduled occurrence must
// produce the very same messages so that SQS (FIFO) and the consumer recognize the repeat.
func TestHandleRepeatIsByteIdentical(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		te := newTestEnv(t, testConfig(fifo), nil)
		ev := loadEvent(t)
		if _, err := te.h.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		ev.ExecutionID = "another-execution" // a retry has its own execution id, the same scheduled time
		if _, err := te.h.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if len(te.sqs.calls) != 2 {
			t.Fatalf("calls = %d, want 2", len(te.sqs.calls))
		}
		first, second := te.sqs.calls[0], te.sqs.calls[1]
		if !reflect.DeepEqual(first, second) {
			a, _ := json.Marshal(first.Entries)
			b, _ := json.Marshal(second.Entries)
			t.Errorf("fifo=%t: repeated run differs:\n%s\n%s", fifo, a, b)
		}
	}
}

// The key names the occurrence: the scheduled time in UTC to the minute. These are also the
// keys the dispatcher derived with its former default PERIOD=1m, so messages in flight across
// the deploy keep their keys.
func TestHandleOccurrenceKeys(t *testing.T) {
	keyAt := func(t *testing.T, scheduled string) (key, body string) {
		te := newTestEnv(t, testConfig(false), nil)
		if _, err := te.h.Handle(context.Background(), Event{ScheduledTime: scheduled, Items: []Item{{ID: "a"}}}); err != nil {
			t.Fatal(err)
		}
		e := te.sqs.entries()[0]
		return aws.ToString(e.MessageAttributes[attrKey].StringValue), aws.ToString(e.MessageBody)
	}
	cases := []struct{ scheduled, wantKey string }{
		{"2025-03-04T05:06:00Z", "nightly#2025-03-04T05:06:00Z#a"},
		{"2025-03-04T23:59:00Z", "nightly#2025-03-04T23:59:00Z#a"},
		// Scheduler's resolution is the minute: seconds never tell two occurrences apart.
		{"2025-03-04T05:06:07Z", "nightly#2025-03-04T05:06:00Z#a"},
		{"2025-03-04T05:06:59.999Z", "nightly#2025-03-04T05:06:00Z#a"},
		// Scheduler sends UTC, but an offset is the same instant: the same occurrence.
		{"2025-03-04T06:06:00+01:00", "nightly#2025-03-04T05:06:00Z#a"},
		{"2025-03-04T00:36:00+05:30", "nightly#2025-03-03T19:06:00Z#a"},
	}
	for _, c := range cases {
		t.Run(c.scheduled, func(t *testing.T) {
			key, body := keyAt(t, c.scheduled)
			if key != c.wantKey {
				t.Errorf("key = %q, want %q", key, c.wantKey)
			}
			// The body's "period" field keeps its name for compatibility; it holds the occurrence.
			var b messageBody
			if err := json.Unmarshal([]byte(body), &b); err != nil || b.IdempotencyKey != key || c.wantKey != "nightly#"+b.Occurrence+"#a" {
				t.Errorf("body %s (err %v): want idempotencyKey %q and period the occurrence", body, err, key)
			}
		})
	}
	a, _ := keyAt(t, "2025-03-04T05:06:59Z")
	if b, _ := keyAt(t, "2025-03-04T05:07:00Z"); a == b {
		t.Errorf("adjacent minutes share key %q", a)
	}
}

func TestHandleBatchesOfTen(t *testing.T) {
	te := newTestEnv(t, testConfig(true), nil)
	sum, err := te.h.Handle(context.Background(), eventWithItems(25))
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	seen := map[string]bool{}
	for _, c := range te.sqs.calls {
		sizes = append(sizes, len(c.Entries))
		for _, e := range c.Entries {
			seen[aws.ToString(e.MessageAttributes[attrKey].StringValue)] = true
		}
	}
	if !reflect.DeepEqual(sizes, []int{10, 10, 5}) || len(seen) != 25 || sum.Sent != 25 {
		t.Errorf("batch sizes %v, %d distinct keys, sent %d; want [10 10 5], 25, 25", sizes, len(seen), sum.Sent)
	}
	m := te.metrics(t)
	if m["Dispatched"] != 25.0 || m["SendFailed"] != 0.0 {
		t.Errorf("metrics Dispatched=%v SendFailed=%v, want 25 and 0", m["Dispatched"], m["SendFailed"])
	}
	if lines := te.logLines(t, "dispatched"); len(lines) != 1 || lines[0]["sent"] != 25.0 || lines[0]["occurrence"] != "2025-03-04T05:00:00Z" {
		t.Errorf("summary log = %v", lines)
	}
}

func TestHandleBatchesBoundedByBytes(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	ev := eventWithItems(10)
	big, _ := json.Marshal(strings.Repeat("p", 60*1024))
	for i := range ev.Items {
		ev.Items[i].Payload = big
	}
	if _, err := te.h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, c := range te.sqs.calls {
		sizes = append(sizes, len(c.Entries))
		total := 0
		for _, e := range c.Entries {
			total += len(aws.ToString(e.MessageBody))
		}
		if total > maxBatchBytes {
			t.Errorf("batch of %d bytes, limit %d", total, maxBatchBytes)
		}
	}
	if !reflect.DeepEqual(sizes, []int{4, 4, 2}) {
		t.Errorf("batch sizes %v, want [4 4 2] for 60 KiB messages", sizes)
	}
}

func TestHandleRetriesOnlyFailedEntries(t *testing.T) {
	te := newTestEnv(t, testConfig(true), nil)
	te.sqs.respond = func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		if call == 0 { // first batch: entries 2 and 7 fail on the service side
			return respondWith(in, map[string]types.BatchResultErrorEntry{"2": internalError(), "7": internalError()}), nil
		}
		return acceptAll(in), nil
	}
	sum, err := te.h.Handle(context.Background(), eventWithItems(25))
	if err != nil {
		t.Fatal(err)
	}
	if len(te.sqs.calls) != 4 {
		t.Fatalf("calls = %d, want 3 + 1 retry", len(te.sqs.calls))
	}
	retry := te.sqs.calls[3]
	var ids []string
	for _, e := range retry.Entries {
		ids = append(ids, aws.ToString(e.Id)+"="+aws.ToString(e.MessageAttributes[attrKey].StringValue))
	}
	want := []string{"2=nightly#2025-03-04T05:00:00Z#item-2", "7=nightly#2025-03-04T05:00:00Z#item-7"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("retried %v, want %v", ids, want)
	}
	if !reflect.DeepEqual(retry.Entries[0], te.sqs.calls[0].Entries[2]) {
		t.Errorf("retried entry differs from the original")
	}
	if sum.Sent != 25 || !reflect.DeepEqual(te.sleeps, []time.Duration{100 * time.Millisecond}) {
		t.Errorf("sent %d, waits %v; want 25 and [100ms]", sum.Sent, te.sleeps)
	}
	if m := te.metrics(t); m["Dispatched"] != 25.0 || m["SendFailed"] != 0.0 {
		t.Errorf("metrics = %v", m)
	}
}

func TestHandleEntryMissingFromResponseIsRetried(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	te.sqs.respond = func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		out := acceptAll(in)
		if call == 0 {
			out.Successful = out.Successful[1:] // SQS says nothing about entry 0
		}
		return out, nil
	}
	if _, err := te.h.Handle(context.Background(), eventWithItems(3)); err != nil {
		t.Fatal(err)
	}
	if len(te.sqs.calls) != 2 || len(te.sqs.calls[1].Entries) != 1 || aws.ToString(te.sqs.calls[1].Entries[0].Id) != "0" {
		t.Errorf("want one retry of entry 0, got %d calls", len(te.sqs.calls))
	}
}

func TestHandlePermanentFailure(t *testing.T) {
	cfg := testConfig(true)
	cfg.SendMaxAttempts = 3
	te := newTestEnv(t, cfg, nil)
	te.sqs.respond = func(_ int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return respondWith(in, map[string]types.BatchResultErrorEntry{"3": internalError(), "21": internalError()}), nil
	}
	sum, err := te.h.Handle(context.Background(), eventWithItems(25))
	var ue *UnsentError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsent) || ue.Unsent != 2 || ue.Total != 25 {
		t.Fatalf("err = %v, want UnsentError 2 of 25", err)
	}
	if !strings.Contains(err.Error(), "2 of 25 messages not sent after retries") || !strings.Contains(err.Error(), "InternalError") {
		t.Errorf("error message %q", err)
	}
	if sum.Sent != 23 || len(te.sqs.calls) != 3+2 {
		t.Errorf("sent %d in %d calls, want 23 in 3 + 2 retries", sum.Sent, len(te.sqs.calls))
	}
	if !reflect.DeepEqual(te.sleeps, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
		t.Errorf("waits %v, want [100ms 200ms]", te.sleeps)
	}
	if m := te.metrics(t); m["Dispatched"] != 23.0 || m["SendFailed"] != 2.0 {
		t.Errorf("metrics Dispatched=%v SendFailed=%v, want 23 and 2", m["Dispatched"], m["SendFailed"])
	}
	lost := te.logLines(t, "message not sent")
	if len(lost) != 2 || lost[0]["itemId"] != "item-3" || lost[1]["idempotencyKey"] != "nightly#2025-03-04T05:00:00Z#item-21" {
		t.Errorf("unsent log lines = %v", lost)
	}
}

func TestHandleSenderFaultFailsFast(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	te.sqs.respond = func(_ int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		return respondWith(in, map[string]types.BatchResultErrorEntry{"1": {
			Code: aws.String("InvalidMessageContents"), Message: aws.String("bad char"), SenderFault: true}}), nil
	}
	_, err := te.h.Handle(context.Background(), eventWithItems(3))
	var ue *UnsentError
	if !errors.As(err, &ue) || ue.Unsent != 1 || !strings.Contains(err.Error(), "InvalidMessageContents: bad char (sender fault: true)") {
		t.Fatalf("err = %v", err)
	}
	if len(te.sqs.calls) != 1 || len(te.sleeps) != 0 {
		t.Errorf("%d calls and waits %v: a sender fault must not be retried", len(te.sqs.calls), te.sleeps)
	}
}

func TestHandleCallErrors(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantCalls int
	}{
		{"server fault retried", &smithy.GenericAPIError{Code: "InternalFailure", Fault: smithy.FaultServer}, 5},
		{"throttling retried", &smithy.GenericAPIError{Code: "RequestThrottled", Fault: smithy.FaultClient}, 5},
		{"network error retried", errors.New("connection reset by peer"), 5},
		{"access denied fails fast", &smithy.GenericAPIError{Code: "AccessDenied", Fault: smithy.FaultClient}, 1},
		{"missing queue fails fast", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Fault: smithy.FaultClient}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			te := newTestEnv(t, testConfig(false), nil)
			te.sqs.respond = func(int, *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) { return nil, c.err }
			_, err := te.h.Handle(context.Background(), eventWithItems(2))
			var ue *UnsentError
			if !errors.As(err, &ue) || ue.Unsent != 2 || !errors.Is(ue.Last, c.err) {
				t.Fatalf("err = %v, want 2 unsent caused by %v", err, c.err)
			}
			if len(te.sqs.calls) != c.wantCalls {
				t.Errorf("calls = %d, want %d", len(te.sqs.calls), c.wantCalls)
			}
		})
	}
}

func TestHandleCallErrorThenSuccess(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	te.sqs.respond = func(call int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		if call < 2 {
			return nil, &smithy.GenericAPIError{Code: "ServiceUnavailable", Fault: smithy.FaultServer}
		}
		return acceptAll(in), nil
	}
	sum, err := te.h.Handle(context.Background(), eventWithItems(12))
	// attempt 1: two calls fail; attempt 2: all 12 again in two calls.
	if err != nil || sum.Sent != 12 || len(te.sqs.calls) != 4 {
		t.Fatalf("sent %d in %d calls, err %v", sum.Sent, len(te.sqs.calls), err)
	}
}

func TestHandleStopsWaitingWhenContextEnds(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	ctx, cancel := context.WithCancel(context.Background())
	te.sqs.respond = func(_ int, in *sqs.SendMessageBatchInput) (*sqs.SendMessageBatchOutput, error) {
		cancel() // the deadline arrives while the first call is in flight
		return respondWith(in, map[string]types.BatchResultErrorEntry{"0": internalError()}), nil
	}
	_, err := te.h.Handle(ctx, eventWithItems(2))
	var ue *UnsentError
	if !errors.As(err, &ue) || ue.Unsent != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want 1 unsent, wrapped context.Canceled", err)
	}
	if len(te.sqs.calls) != 1 {
		t.Errorf("calls = %d, want no retry after the context ended", len(te.sqs.calls))
	}
}

func TestBackoff(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
	for i, w := range want {
		if got := te.h.backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("ceiling after attempt %d = %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
	if got := te.h.backoff(200); got != 2*time.Second {
		t.Errorf("ceiling after attempt 200 = %s, want the cap", got)
	}
	// The real jitter stays within [0, ceiling].
	h := NewHandler(testConfig(false), nil, nil, nil, nil)
	for range 1000 {
		if d := h.backoff(3); d < 0 || d > 400*time.Millisecond {
			t.Fatalf("jittered wait %s outside [0, 400ms]", d)
		}
	}
}

func TestHandleEventErrors(t *testing.T) {
	cases := []struct {
		name string
		ev   Event
		msg  string
	}{
		{"missing scheduledTime", Event{Items: []Item{{ID: "a"}}}, `"scheduledTime" is missing`},
		{"unparsable scheduledTime", Event{ScheduledTime: "2025-03-04 05:06", Items: []Item{{ID: "a"}}},
			`"scheduledTime" "2025-03-04 05:06" is not an RFC 3339 time`},
		{"job mismatch", Event{ScheduledTime: "2025-03-04T05:06:07Z", Job: "other", Items: []Item{{ID: "a"}}},
			`"job" "other" does not match JOB_NAME "nightly"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			te := newTestEnv(t, testConfig(true), nil)
			_, err := te.h.Handle(context.Background(), c.ev)
			if !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want ErrInvalidEvent with %q", err, c.msg)
			}
			if len(te.sqs.calls) != 0 {
				t.Errorf("sent %d batches for an invalid event", len(te.sqs.calls))
			}
			if l := te.logLines(t, "dispatch rejected"); len(l) != 1 || !strings.Contains(l[0]["error"].(string), c.msg) {
				t.Errorf("log = %v", l)
			}
		})
	}
}

type listItems struct {
	items []Item
	err   error
	got   []Run
}

func (l *listItems) Items(_ context.Context, run Run) ([]Item, error) {
	l.got = append(l.got, run)
	return l.items, l.err
}

func TestHandleItemValidation(t *testing.T) {
	cases := []struct {
		name  string
		fifo  bool
		items []Item
		msg   string
	}{
		{"empty id", false, []Item{{ID: "a"}, {ID: ""}}, "1 of 2 items invalid: items[1]: empty id"},
		{"duplicate id", false, []Item{{ID: "a"}, {ID: "b"}, {ID: "a"}}, `items[2] (id "a"): duplicate of items[0]`},
		{"invalid group", true, []Item{{ID: "a", Group: "tenant 1"}}, `items[0] (id "a"): group: invalid SQS MessageGroupId "tenant 1"`},
		{"invalid group on standard", false, []Item{{ID: "a", Group: strings.Repeat("g", 129)}}, "129 characters, longer than 128"},
		{"key too long", false, []Item{{ID: strings.Repeat("i", 500)}}, "invalid idempotency key: value is 529 bytes, longer than the limit of 512"},
		{"character SQS rejects", false, []Item{{ID: "a\x00b"}}, `items[0] (id "a\x00b"): character U+0000 is not accepted by SQS`},
		{"invalid UTF-8 id", false, []Item{{ID: "a\xffb"}}, "character U+FFFD is not accepted by SQS"},
		{"payload not JSON", false, []Item{{ID: "a", Payload: json.RawMessage(`{"a":`)}}, `items[0] (id "a"): payload is not valid JSON`},
		{"message too large", false, []Item{{ID: "a", Payload: json.RawMessage(`"` + strings.Repeat("p", maxMessageBytes) + `"`)}},
			"larger than 262144"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			te := newTestEnv(t, testConfig(c.fifo), &listItems{items: c.items})
			_, err := te.h.Handle(context.Background(), Event{ScheduledTime: "2025-03-04T05:06:07Z"})
			if !errors.Is(err, ErrInvalidItems) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want ErrInvalidItems with %q", err, c.msg)
			}
			if len(te.sqs.calls) != 0 {
				t.Errorf("sent %d batches: nothing may go out when an item is invalid", len(te.sqs.calls))
			}
		})
	}
	t.Run("long lists are cut in the message", func(t *testing.T) {
		te := newTestEnv(t, testConfig(false), &listItems{items: make([]Item, 13)})
		_, err := te.h.Handle(context.Background(), Event{ScheduledTime: "2025-03-04T05:06:07Z"})
		if err == nil || !strings.Contains(err.Error(), "13 of 13 items invalid") || !strings.HasSuffix(err.Error(), "; and 3 more") ||
			strings.Contains(err.Error(), "items[10]") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestHandleCustomItemSource(t *testing.T) {
	src := &listItems{items: []Item{{ID: "from-db"}}}
	te := newTestEnv(t, testConfig(false), src)
	ev := loadEvent(t)
	if _, err := te.h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if len(src.got) != 1 || src.got[0].Occurrence != time.Date(2025, 3, 4, 5, 0, 0, 0, time.UTC) ||
		src.got[0].Job != "nightly" || src.got[0].Event.ExecutionID != ev.ExecutionID {
		t.Errorf("ItemSource got %+v", src.got)
	}
	if e := te.sqs.entries(); len(e) != 1 || aws.ToString(e[0].MessageAttributes[attrKey].StringValue) != "nightly#2025-03-04T05:00:00Z#from-db" {
		t.Errorf("entries = %+v, want the source's item only", e)
	}

	failing := &listItems{err: errors.New("db down")}
	te = newTestEnv(t, testConfig(false), failing)
	_, err := te.h.Handle(context.Background(), ev)
	if err == nil || !strings.Contains(err.Error(), "list work items for 2025-03-04T05:00:00Z: db down") {
		t.Errorf("err = %v", err)
	}
}

func TestHandleNoItems(t *testing.T) {
	te := newTestEnv(t, testConfig(false), nil)
	sum, err := te.h.Handle(context.Background(), Event{ScheduledTime: "2025-03-04T05:06:07Z"})
	if err != nil || sum.Items != 0 || len(te.sqs.calls) != 0 {
		t.Fatalf("sum %+v err %v calls %d", sum, err, len(te.sqs.calls))
	}
	if len(te.logLines(t, "no work items: nothing dispatched")) != 1 {
		t.Errorf("want a warning for an empty run: %s", te.logs)
	}
	if m := te.metrics(t); m["Dispatched"] != 0.0 || m["SendFailed"] != 0.0 {
		t.Errorf("metrics = %v, want zeros published", m)
	}
}

func TestBadSQSChar(t *testing.T) {
	for s, ok := range map[string]bool{"abc": true, "tab\tnl\ncr\r": true, "\uFFFD": true, "😀": true,
		"\x00": false, "\x1f": false, "\uFFFE": false, "\xff": false} {
		if _, got := badSQSChar(s); got != ok {
			t.Errorf("badSQSChar(%q) ok = %t, want %t", s, got, ok)
		}
	}
}
