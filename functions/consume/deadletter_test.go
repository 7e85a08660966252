package consume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

const (
	dlqURL     = "https://sqs.us-east-1.amazonaws.com/123456789012/q-dlq"
	dlqFIFOURL = "https://sqs.us-east-1.amazonaws.com/123456789012/q-dlq.fifo"
)

// fakeSQS records every SendMessage input; err, when set, is returned instead of a result.
type fakeSQS struct {
	mu  sync.Mutex
	ins []*sqs.SendMessageInput
	err error
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ins = append(f.ins, in)
	if f.err != nil {
		return nil, f.err
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(fmt.Sprintf("dlq-%d", len(f.ins)))}, nil
}

func (f *fakeSQS) sent() []*sqs.SendMessageInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), f.ins...)
}

// sendOne sends rec through an SQSDeadLetter on url and returns the one input SQS got.
func sendOne(t *testing.T, url string, rec events.SQSMessage, code, reason string) *sqs.SendMessageInput {
	t.Helper()
	f := &fakeSQS{}
	if err := (SQSDeadLetter{API: f, URL: url}).Send(context.Background(), rec, code, reason); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := f.sent()
	if len(sent) != 1 {
		t.Fatalf("%d SendMessage calls, want 1", len(sent))
	}
	return sent[0]
}

func strAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func TestSQSDeadLetterStandardQueue(t *testing.T) {
	rec := record("m-1", `{"orderId":"o-1"}`)
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{
		"Trace":  {DataType: "String", StringValue: aws.String("t-1")},
		"Amount": {DataType: "Number", StringValue: aws.String("5")},
		"Blob":   {DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
	}
	in := sendOne(t, dlqURL, rec, "value_missing", `body field "idempotencyKey" is missing`)

	if aws.ToString(in.QueueUrl) != dlqURL || aws.ToString(in.MessageBody) != `{"orderId":"o-1"}` {
		t.Errorf("queue %q body %q", aws.ToString(in.QueueUrl), aws.ToString(in.MessageBody))
	}
	if in.MessageGroupId != nil || in.MessageDeduplicationId != nil || in.DelaySeconds != 0 {
		t.Errorf("standard queue got group %v, dedup %v, delay %d", in.MessageGroupId, in.MessageDeduplicationId, in.DelaySeconds)
	}
	want := map[string]sqstypes.MessageAttributeValue{
		"Trace":            strAttr("t-1"),
		"Amount":           {DataType: aws.String("Number"), StringValue: aws.String("5")},
		"Blob":             {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		"DeadLetterReason": strAttr(`value_missing: body field "idempotencyKey" is missing`),
		"SourceMessageId":  strAttr("m-1"),
	}
	if !reflect.DeepEqual(in.MessageAttributes, want) {
		t.Errorf("attributes:\n got %s\nwant %s", attrString(in.MessageAttributes), attrString(want))
	}
}

func TestSQSDeadLetterFIFOQueue(t *testing.T) {
	rec := record("m-2", "not json")
	rec.Attributes["MessageGroupId"] = "g-7"
	in := sendOne(t, dlqFIFOURL, rec, "body_not_json", "message body is not JSON")
	if aws.ToString(in.MessageGroupId) != "g-7" || aws.ToString(in.MessageDeduplicationId) != "m-2" {
		t.Errorf("group %v dedup %v, want g-7 and the message id m-2", in.MessageGroupId, in.MessageDeduplicationId)
	}
	if aws.ToString(in.QueueUrl) != dlqFIFOURL || aws.ToString(in.MessageBody) != "not json" {
		t.Errorf("queue %q body %q", aws.ToString(in.QueueUrl), aws.ToString(in.MessageBody))
	}

	// A standard source feeding a FIFO dead-letter queue: SQS requires a group anyway.
	in = sendOne(t, dlqFIFOURL, record("m-3", "x"), "body_not_json", "message body is not JSON")
	if aws.ToString(in.MessageGroupId) != "dead-letter" || aws.ToString(in.MessageDeduplicationId) != "m-3" {
		t.Errorf("no source group: group %v dedup %v, want dead-letter and m-3", in.MessageGroupId, in.MessageDeduplicationId)
	}
}

// SQS accepts at most 10 message attributes: a record that has them all keeps them, unchanged,
// and gets none of ours.
func TestSQSDeadLetterKeepsTenAttributes(t *testing.T) {
	rec := record("m-4", "x")
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
	want := map[string]sqstypes.MessageAttributeValue{}
	for i := range 10 {
		name, v := fmt.Sprintf("A%d", i), fmt.Sprintf("v%d", i)
		rec.MessageAttributes[name] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(v)}
		want[name] = strAttr(v)
	}
	in := sendOne(t, dlqURL, rec, "body_not_json", "message body is not JSON")
	if !reflect.DeepEqual(in.MessageAttributes, want) {
		t.Errorf("attributes:\n got %s\nwant the record's 10", attrString(in.MessageAttributes))
	}
}

func TestSQSDeadLetterTruncatesLongReason(t *testing.T) {
	for _, n := range []int{1024, 1025, 5000} {
		in := sendOne(t, dlqURL, record("m-5", "x"), "payload_mismatch", strings.Repeat("r", n))
		got := aws.ToString(in.MessageAttributes["DeadLetterReason"].StringValue)
		if want := "payload_mismatch: " + strings.Repeat("r", min(n, 1024)); got != want {
			t.Errorf("reason of %d bytes: attribute of %d bytes, want %d", n, len(got), len(want))
		}
	}
}

func TestSQSDeadLetterWrapsAPIError(t *testing.T) {
	apiErr := errors.New("api error AWS.SimpleQueueService.NonExistentQueue")
	f := &fakeSQS{err: apiErr}
	err := SQSDeadLetter{API: f, URL: dlqURL}.Send(context.Background(), record("m-6", "x"), "body_not_json", "r")
	if !errors.Is(err, apiErr) || err.Error() != "dead-letter message m-6: "+apiErr.Error() {
		t.Errorf("err = %v, want the API error wrapped with the message id", err)
	}
}

func attrString(m map[string]sqstypes.MessageAttributeValue) string {
	var b strings.Builder
	for k, v := range m {
		fmt.Fprintf(&b, "%s=%s:%q/%v ", k, aws.ToString(v.DataType), aws.ToString(v.StringValue), v.BinaryValue)
	}
	return b.String()
}

// fakeDeadLetter records what the Handler dead-letters; err, when set, fails every Send.
type fakeDeadLetter struct {
	mu   sync.Mutex
	got  []deadLettered
	err  error
	seen map[string]int // message id -> Send calls, failed ones included
}

type deadLettered struct {
	rec          events.SQSMessage
	code, reason string
}

func (f *fakeDeadLetter) Send(_ context.Context, rec events.SQSMessage, code, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[string]int{}
	}
	f.seen[rec.MessageId]++
	if f.err != nil {
		return f.err
	}
	f.got = append(f.got, deadLettered{rec: rec, code: code, reason: reason})
	return nil
}

// byID returns the dead-lettered records by message id.
func (f *fakeDeadLetter) byID() map[string]deadLettered {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]deadLettered{}
	for _, d := range f.got {
		m[d.rec.MessageId] = d
	}
	return m
}

func TestHandlerDeadLettersBadInput(t *testing.T) {
	hs := newHarness(t, nil, nil)
	dl := &fakeDeadLetter{}
	hs.h.WithDeadLetter(dl)
	notJSON, missing := record("not-json", "order-2 please"), record("missing-key", `{"orderId":"order-3"}`)
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
		notJSON, missing, record("good", `{"idempotencyKey":"order-1"}`)}})

	if len(failed) != 0 {
		t.Errorf("failed = %v, want none: the bad records are in the DLQ", failed)
	}
	got := dl.byID()
	if len(dl.got) != 2 {
		t.Errorf("dead-lettered %d records, want 2: %v", len(dl.got), dl.got)
	}
	for id, w := range map[string]struct {
		rec          events.SQSMessage
		code, reason string
	}{
		"not-json":    {notJSON, string(msgkey.CodeBodyNotJSON), "bad input (body:idempotencyKey): message body is not JSON"},
		"missing-key": {missing, string(msgkey.CodeValueMissing), `bad input (body:idempotencyKey): body field "idempotencyKey" is missing`},
	} {
		d, ok := got[id]
		if !ok || d.code != w.code || !strings.HasPrefix(d.reason, w.reason) || !reflect.DeepEqual(d.rec, w.rec) {
			t.Errorf("%s: dead-lettered %v (ok %v), want code %s, reason %q and the record unchanged", id, d, ok, w.code, w.reason)
		}
		if r := recs[id]; r["deadLettered"] != true || r["outcome"] != telemetry.OutcomeInvalidInput || r["reasonCode"] != w.code || r["deadLetterError"] != nil {
			t.Errorf("%s: line %v, want deadLettered=true, outcome invalid_input", id, r)
		}
	}
	if !reflect.DeepEqual(effects, []string{"order-1"}) || recs["good"]["outcome"] != telemetry.OutcomeProcessed || recs["good"]["deadLettered"] != nil {
		t.Errorf("effects %v, good line %v", effects, recs["good"])
	}
	if metrics["DeadLettered"] != 2 || metrics["InvalidInput"] != 2 || metrics["Failed"] != 0 || metrics["Processed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
}

func TestHandlerDeadLetterFailureFailsTheRecord(t *testing.T) {
	hs := newHarness(t, nil, nil)
	dl := &fakeDeadLetter{err: errors.New("dead-letter message x: throttled")}
	hs.h.WithDeadLetter(dl)
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
		record("not-json", "order-2 please"), record("missing-key", `{"orderId":"order-3"}`), record("good", `{"idempotencyKey":"order-1"}`)}})

	if !reflect.DeepEqual(failed, []string{"missing-key", "not-json"}) {
		t.Errorf("failed = %v, want both bad records left to the redrive policy", failed)
	}
	if dl.seen["not-json"] != 1 || dl.seen["missing-key"] != 1 || len(dl.seen) != 2 {
		t.Errorf("Send calls = %v, want one per bad record", dl.seen)
	}
	for _, id := range []string{"not-json", "missing-key"} {
		if r := recs[id]; r["deadLetterError"] != "dead-letter message x: throttled" || r["deadLettered"] != nil || r["outcome"] != telemetry.OutcomeInvalidInput {
			t.Errorf("%s: line %v, want deadLetterError and no deadLettered", id, r)
		}
	}
	if !reflect.DeepEqual(effects, []string{"order-1"}) {
		t.Errorf("effects = %v", effects)
	}
	if metrics["DeadLettered"] != 0 || metrics["InvalidInput"] != 2 || metrics["Failed"] != 2 || metrics["Processed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
}

// On a FIFO queue a bad record used to block its group (the records behind it failed unrun
// until the redrive policy dead-lettered them all); dead-lettered at once, it does not.
func TestHandlerDeadLetterUnblocksFIFOGroup(t *testing.T) {
	fifo := func(id, group, body string) events.SQSMessage {
		r := record(id, body)
		r.EventSourceARN += ".fifo"
		r.Attributes["MessageGroupId"] = group
		return r
	}
	ev := func() events.SQSEvent {
		return events.SQSEvent{Records: []events.SQSMessage{
			fifo("g1", "g", `{"idempotencyKey":"G-1"}`), fifo("bad", "g", `{"idempotencyKey":7}`),
			fifo("g2", "g", `{"idempotencyKey":"G-2"}`), fifo("h1", "h", `{"idempotencyKey":"H-1"}`)}}
	}

	t.Run("without a dead-letter queue", func(t *testing.T) {
		hs := newHarness(t, nil, nil)
		failed, recs, effects, _ := hs.invoke(ev())
		if !reflect.DeepEqual(failed, []string{"bad", "g2"}) || !sameSet(effects, []string{"G-1", "H-1"}) {
			t.Errorf("failed %v effects %v, want bad and g2 failed, G-2 not run", failed, effects)
		}
		if recs["bad"]["outcome"] != telemetry.OutcomeInvalidInput || recs["g2"]["outcome"] != telemetry.OutcomeSkippedGroupFailed {
			t.Errorf("lines: bad %v, g2 %v", recs["bad"], recs["g2"])
		}
	})
	t.Run("with a dead-letter queue", func(t *testing.T) {
		hs := newHarness(t, nil, nil)
		dl := &fakeDeadLetter{}
		hs.h.WithDeadLetter(dl)
		failed, recs, effects, metrics := hs.invoke(ev())
		if len(failed) != 0 {
			t.Errorf("failed = %v, want none", failed)
		}
		var group []string
		for _, k := range effects {
			if strings.HasPrefix(k, "G-") {
				group = append(group, k)
			}
		}
		if !reflect.DeepEqual(group, []string{"G-1", "G-2"}) || !sameSet(effects, []string{"G-1", "G-2", "H-1"}) {
			t.Errorf("effects = %v, want G-1 then G-2 (and H-1)", effects)
		}
		if d := dl.byID()["bad"]; len(dl.got) != 1 || d.code != string(msgkey.CodeValueWrongType) || d.rec.Attributes["MessageGroupId"] != "g" {
			t.Errorf("dead-lettered %v, want only bad (value_wrong_type, group g)", dl.got)
		}
		if recs["bad"]["deadLettered"] != true || recs["g2"]["outcome"] != telemetry.OutcomeProcessed {
			t.Errorf("lines: bad %v, g2 %v", recs["bad"], recs["g2"])
		}
		if metrics["DeadLettered"] != 1 || metrics["Processed"] != 3 || metrics["Failed"] != 0 {
			t.Errorf("metrics = %v", metrics)
		}
	})
}

func TestHandlerDeadLettersPayloadMismatch(t *testing.T) {
	hs := newHarness(t, nil, nil) // IDEMPOTENCY_VALIDATE_PAYLOAD defaults to true
	dl := &fakeDeadLetter{}
	hs.h.WithDeadLetter(dl)
	if failed, _, _, _ := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("p1", `{"idempotencyKey":"pay-1","amount":5}`)}}); len(failed) != 0 || len(dl.got) != 0 {
		t.Fatalf("first message: failed %v, dead-lettered %v", failed, dl.got)
	}
	reused := record("p2", `{"idempotencyKey":"pay-1","amount":500}`)
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{reused}})

	if len(failed) != 0 || len(effects) != 0 {
		t.Errorf("failed %v effects %v; want p2 acknowledged, no effect", failed, effects)
	}
	d := dl.byID()["p2"]
	if len(dl.got) != 1 || d.code != telemetry.OutcomePayloadMismatch || !strings.Contains(d.reason, "different payload") || !reflect.DeepEqual(d.rec, reused) {
		t.Errorf("dead-lettered %v, want p2 with code payload_mismatch", dl.got)
	}
	if r := recs["p2"]; r["outcome"] != telemetry.OutcomePayloadMismatch || r["deadLettered"] != true || r["idempotencyKey"] != "pay-1" {
		t.Errorf("line = %v", r)
	}
	if metrics["DeadLettered"] != 1 || metrics["InvalidInput"] != 1 || metrics["Failed"] != 0 || metrics["Processed"] != 0 || metrics["Duplicate"] != 0 {
		t.Errorf("metrics = %v, want DeadLettered 1 and InvalidInput 1", metrics)
	}
}

func TestSQSDeadLetterNineAttributesGetsTheReason(t *testing.T) {
	rec := record("m-9", "x")
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for i := range 9 {
		rec.MessageAttributes[fmt.Sprintf("A%d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("v")}
	}
	for range 50 {
		in := sendOne(t, dlqURL, rec, "body_not_json", "message body is not JSON")
		if _, ok := in.MessageAttributes[contract.AttrDeadLetterReason]; !ok || len(in.MessageAttributes) != 10 {
			t.Fatalf("attributes %s: want the 9 plus DeadLetterReason", attrString(in.MessageAttributes))
		}
	}
}

func TestSQSDeadLetterReplacesEarlierDeadLetterAttributes(t *testing.T) {
	rec := record("m-new", "x")
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{
		contract.AttrDeadLetterReason: {DataType: "String", StringValue: aws.String("value_missing: an earlier failure")},
		contract.AttrSourceMessageID:  {DataType: "String", StringValue: aws.String("m-old")},
		"Tenant":                      {DataType: "String", StringValue: aws.String("t1")},
	}
	in := sendOne(t, dlqURL, rec, "body_not_json", "message body is not JSON")
	if got := aws.ToString(in.MessageAttributes[contract.AttrDeadLetterReason].StringValue); got != "body_not_json: message body is not JSON" {
		t.Errorf("%s = %q, want this failure's reason", contract.AttrDeadLetterReason, got)
	}
	if got := aws.ToString(in.MessageAttributes[contract.AttrSourceMessageID].StringValue); got != "m-new" {
		t.Errorf("%s = %q, want this record's id", contract.AttrSourceMessageID, got)
	}
	if got := aws.ToString(in.MessageAttributes["Tenant"].StringValue); got != "t1" || len(in.MessageAttributes) != 3 {
		t.Errorf("attributes %s: want Tenant kept and ours replaced", attrString(in.MessageAttributes))
	}
}

func TestSQSDeadLetterOneFreeSlotCarriesTheSourceID(t *testing.T) {
	rec := record("m-9", "x")
	rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
	for i := range 9 {
		rec.MessageAttributes[fmt.Sprintf("A%d", i)] = events.SQSMessageAttribute{DataType: "String", StringValue: aws.String("v")}
	}
	in := sendOne(t, dlqURL, rec, "body_not_json", "message body is not JSON")
	if got := aws.ToString(in.MessageAttributes[contract.AttrDeadLetterReason].StringValue); got != "body_not_json: message body is not JSON (source message m-9)" {
		t.Errorf("%s = %q", contract.AttrDeadLetterReason, got)
	}
}

// An effect that finds its message can never succeed wraps ErrInvalidInput: the record goes
// to the DLQ at once, as other bad input does, and the key is released, so the same key
// fixed and sent again runs the effect.
func TestEffectInvalidInputIsDeadLettered(t *testing.T) {
	var runs int
	hs := newHarness(t, nil, func(*slog.Logger) Effect {
		return func(_ context.Context, msg Message) ([]byte, error) {
			runs++
			if strings.Contains(msg.Body, "bad-amount") {
				return nil, fmt.Errorf("order %s: amount %q: %w", msg.Key, "ten", ErrInvalidInput)
			}
			return nil, nil
		}
	})
	dl := &fakeDeadLetter{}
	hs.h.WithDeadLetter(dl)
	bad := record("bad", `{"idempotencyKey":"order-7","amount":"bad-amount"}`)
	failed, recs, _, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{bad, record("good", `{"idempotencyKey":"order-8"}`)}})
	if len(failed) != 0 {
		t.Errorf("failed = %v, want none: the bad record is in the DLQ", failed)
	}
	d, ok := dl.byID()["bad"]
	if !ok || d.code != telemetry.OutcomeInvalidInput || !strings.Contains(d.reason, `order order-7: amount "ten": invalid input`) {
		t.Errorf("dead-lettered %+v (ok %v), want code invalid_input and the effect's error as reason", d, ok)
	}
	if r := recs["bad"]; r["outcome"] != telemetry.OutcomeInvalidInput || r["deadLettered"] != true {
		t.Errorf("line %v, want outcome invalid_input, deadLettered", r)
	}
	if metrics["InvalidInput"] != 1 || metrics["DeadLettered"] != 1 || metrics["Failed"] != 0 || metrics["Processed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
	// Fixed and sent again under the same key (other content is a payload mismatch, so the
	// producer sends the corrected order as a new key or with validation off; here the same
	// body is redriven after the effect's rule was fixed).
	runs = 0
	hs.h.WithDeadLetter(&fakeDeadLetter{})
	failed, _, _, _ = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("bad-again", `{"idempotencyKey":"order-7","amount":"bad-amount"}`)}})
	if runs != 1 || len(failed) != 0 {
		t.Errorf("redelivery ran the effect %d times (failed %v), want 1: the key was released", runs, failed)
	}
}

// A record from a fair queue (a standard queue whose messages carry their tenant as
// MessageGroupId) keeps its group in a standard DLQ, so a redrive brings it back whole; it
// gets no deduplication id, which a standard queue refuses.
func TestSQSDeadLetterFairQueueKeepsTheTenant(t *testing.T) {
	rec := record("m-3", "not json")
	rec.Attributes = map[string]string{"MessageGroupId": "tenant-1"}
	in := sendOne(t, dlqURL, rec, "body_invalid", "not JSON")
	if aws.ToString(in.MessageGroupId) != "tenant-1" || in.MessageDeduplicationId != nil {
		t.Errorf("fair queue record to a standard DLQ: group %v, dedup %v; want tenant-1 and none", aws.ToString(in.MessageGroupId), in.MessageDeduplicationId)
	}
}
