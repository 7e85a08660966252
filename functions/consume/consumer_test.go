package consume

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func TestBadInputFailsOnlyItsRecord(t *testing.T) {
	hs := newHarness(t, nil, nil)
	ev := loadEvent(t, "standard_bad_input.json")
	oversize := record("oversize", `{"idempotencyKey":"order-7","pad":"`+strings.Repeat("x", 256*1024)+`"}`)
	oversize.Body = oversize.Body[:256*1024+1] // exactly one byte over MAX_BODY_BYTES
	ev.Records = append(ev.Records, oversize, record("valid-2", `{"idempotencyKey":"order-8"}`))

	failed, recs, effects, metrics := hs.invoke(ev)

	want := map[string]struct {
		code   msgkey.Code
		reason string
	}{
		"not-json":        {msgkey.CodeBodyNotJSON, "message body is not JSON: invalid character 'o'"},
		"missing-key":     {msgkey.CodeValueMissing, `body field "idempotencyKey" is missing`},
		"wrong-type":      {msgkey.CodeValueWrongType, `body field "idempotencyKey" is a JSON number, want a string`},
		"empty-body":      {msgkey.CodeEmptyBody, "message body is empty"},
		"attributes-only": {msgkey.CodeValueMissing, `body field "idempotencyKey" is missing`},
		"oversize":        {msgkey.CodeBodyTooLarge, "message body is 262145 bytes, larger than the limit of 262144"},
	}
	var wantFailed []string
	for id, w := range want {
		wantFailed = append(wantFailed, id)
		r := recs[id]
		if r == nil {
			t.Errorf("%s: no record line", id)
			continue
		}
		if r["outcome"] != telemetry.OutcomeInvalidInput || r["reasonCode"] != string(w.code) || !strings.HasPrefix(r["reason"].(string), w.reason) || r["level"] != "WARN" {
			t.Errorf("%s: line %v, want outcome invalid_input, code %s, reason %q", id, r, w.code, w.reason)
		}
	}
	if recs["not-json"]["receiveCount"] != 3.0 {
		t.Errorf("receive count not logged: %v", recs["not-json"])
	}
	if !reflect.DeepEqual(failed, sortedCopy(wantFailed)) {
		t.Errorf("failed = %v, want %v", failed, sortedCopy(wantFailed))
	}
	for _, id := range []string{"valid-1", "valid-2"} {
		if recs[id]["outcome"] != telemetry.OutcomeProcessed {
			t.Errorf("%s: %v, want processed", id, recs[id])
		}
	}
	if !sameSet(effects, []string{"order-1", "order-8"}) {
		t.Errorf("effects = %v, want order-1 and order-8 once each", effects)
	}
	if metrics["InvalidInput"] != 6 || metrics["Processed"] != 2 || metrics["Failed"] != 6 || metrics["Duplicate"] != 0 {
		t.Errorf("metrics = %v", metrics)
	}
}

func TestBadInputAttributeSource(t *testing.T) {
	hs := newHarness(t, map[string]string{"IDEMPOTENCY_KEY_SOURCE": "attribute:IdempotencyKey"}, nil)
	failed, recs, effects, metrics := hs.invoke(loadEvent(t, "attribute_source.json"))
	if !reflect.DeepEqual(failed, []string{"attr-binary", "attr-unknown-only"}) {
		t.Errorf("failed = %v", failed)
	}
	if r := recs["attr-unknown-only"]; r["reason"] != `message attribute "IdempotencyKey" is missing` {
		t.Errorf("unknown attributes only: %v", r)
	}
	if r := recs["attr-binary"]; r["reason"] != `message attribute "IdempotencyKey" has data type "Binary", want String` {
		t.Errorf("binary attribute: %v", r)
	}
	if !reflect.DeepEqual(effects, []string{"order-10"}) || recs["attr-valid"]["idempotencyKey"] != "order-10" {
		t.Errorf("effects = %v, valid line %v", effects, recs["attr-valid"])
	}
	if metrics["InvalidInput"] != 2 || metrics["Processed"] != 1 || metrics["Failed"] != 2 {
		t.Errorf("metrics = %v", metrics)
	}
}

func TestRedeliveredBatchIsAbsorbed(t *testing.T) {
	hs := newHarness(t, nil, nil)
	var ev events.SQSEvent
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		ev.Records = append(ev.Records, record("m-"+k, `{"idempotencyKey":"`+k+`"}`))
	}
	failed, _, effects, metrics := hs.invoke(ev)
	if len(failed) != 0 || !sameSet(effects, []string{"k1", "k2", "k3", "k4"}) || metrics["Processed"] != 4 {
		t.Fatalf("first delivery: failed %v effects %v metrics %v", failed, effects, metrics)
	}
	// The same batch again (a lost delete, a visibility timeout, or the dispatcher sending twice).
	for i := range ev.Records {
		ev.Records[i].Attributes["ApproximateReceiveCount"] = "2"
	}
	failed, recs, effects, metrics := hs.invoke(ev)
	if len(failed) != 0 || len(effects) != 0 {
		t.Fatalf("redelivery: failed %v, effects %v; want all acknowledged and no effect", failed, effects)
	}
	if metrics["Duplicate"] != 4 || metrics["Processed"] != 0 || metrics["Failed"] != 0 {
		t.Errorf("redelivery metrics = %v", metrics)
	}
	if r := recs["m-k3"]; r["outcome"] != telemetry.OutcomeDuplicate || r["receiveCount"] != 2.0 || r["idempotencyKey"] != "k3" || r["attempt"] != 1.0 {
		t.Errorf("duplicate line = %v", r)
	}
}

// Two messages with one key in one batch run concurrently: the effect happens once, and the
// loser is either a duplicate or fails as in-flight-elsewhere and is absorbed on redelivery.
func TestSameKeyTwiceInOneBatch(t *testing.T) {
	hs := newHarness(t, nil, nil)
	ev := events.SQSEvent{Records: []events.SQSMessage{record("x1", `{"idempotencyKey":"same"}`), record("x2", `{"idempotencyKey":"same"}`)}}
	failed, recs, effects, metrics := hs.invoke(ev)
	if len(effects) != 1 || metrics["Processed"] != 1 || metrics["Duplicate"]+metrics["InFlightElsewhere"] != 1 {
		t.Fatalf("effects %v metrics %v", effects, metrics)
	}
	if len(failed) == 1 {
		if recs[failed[0]]["outcome"] != telemetry.OutcomeInFlightElsewhere || metrics["Failed"] != 1 {
			t.Fatalf("failed %v: %v", failed, recs[failed[0]])
		}
		_, _, effects, metrics = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record(failed[0], `{"idempotencyKey":"same"}`)}})
		if len(effects) != 0 || metrics["Duplicate"] != 1 {
			t.Errorf("redelivery: effects %v metrics %v", effects, metrics)
		}
	}
}

// failOn wraps LogEffect with an effect that fails for the keys in bad (while bad[key] is true).
func failOn(bad map[string]*atomic.Bool) func(log *slog.Logger) Effect {
	return func(log *slog.Logger) Effect {
		apply := LogEffect(log)
		return func(ctx context.Context, msg Message) ([]byte, error) {
			if b := bad[msg.Key]; b != nil && b.Load() {
				return nil, errors.New("downstream said no")
			}
			return apply(ctx, msg)
		}
	}
}

func TestFIFOGroupFailureStopsOnlyThatGroup(t *testing.T) {
	var a2Fails atomic.Bool
	a2Fails.Store(true)
	hs := newHarness(t, nil, failOn(map[string]*atomic.Bool{"A-2": &a2Fails}))
	ev := loadEvent(t, "fifo_groups.json")

	failed, recs, effects, metrics := hs.invoke(ev)
	if !reflect.DeepEqual(failed, []string{"a2", "a3"}) {
		t.Errorf("failed = %v, want a2 and a3", failed)
	}
	if !sameSet(effects, []string{"A-1", "B-1", "B-2", "C-1"}) {
		t.Errorf("effects = %v, want A-1, B-1, B-2, C-1 (A-3 must not run after A-2 failed)", effects)
	}
	if r := recs["a2"]; r["outcome"] != telemetry.OutcomeEffectFailed || !strings.Contains(r["reason"].(string), "downstream said no") || r["groupId"] != "A" {
		t.Errorf("a2 line = %v", r)
	}
	if r := recs["a3"]; r["outcome"] != telemetry.OutcomeSkippedGroupFailed || r["groupId"] != "A" {
		t.Errorf("a3 line = %v", r)
	}
	if metrics["Processed"] != 4 || metrics["Failed"] != 2 {
		t.Errorf("metrics = %v", metrics)
	}

	// SQS redelivers the whole batch's failures in order; A-1 stays done.
	a2Fails.Store(false)
	var again events.SQSEvent
	for _, r := range ev.Records {
		if r.MessageId == "a1" || r.MessageId == "a2" || r.MessageId == "a3" {
			r.Attributes["ApproximateReceiveCount"] = "2"
			again.Records = append(again.Records, r)
		}
	}
	failed, recs, effects, _ = hs.invoke(again)
	if len(failed) != 0 || !reflect.DeepEqual(effects, []string{"A-2", "A-3"}) || recs["a1"]["outcome"] != telemetry.OutcomeDuplicate {
		t.Errorf("redelivery: failed %v effects %v a1 %v", failed, effects, recs["a1"])
	}
	if recs["a2"]["attempt"] != 2.0 {
		t.Errorf("a2 should be attempt 2 after a released failure: %v", recs["a2"])
	}
}

func TestPayloadMismatchFailsWithTypedError(t *testing.T) {
	hs := newHarness(t, nil, nil)
	if failed, _, _, _ := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("p1", `{"idempotencyKey":"pay-1","amount":5}`)}}); len(failed) != 0 {
		t.Fatalf("first message failed: %v", failed)
	}
	reused := record("p2", `{"idempotencyKey":"pay-1","amount":500}`)

	err := hs.h.Record(context.Background(), reused)
	var pm *idempotency.PayloadMismatchError
	if !errors.As(err, &pm) || !errors.Is(err, idempotency.ErrPayloadMismatch) || pm.Key != "pay-1" || pm.Status != idempotency.StatusCompleted {
		t.Fatalf("Record = %v, want *PayloadMismatchError for pay-1", err)
	}
	hs.out.reset()
	if err := hs.h.metrics.Flush(io.Discard); err != nil { // what the direct Record call counted
		t.Fatal(err)
	}

	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{reused}})
	if !reflect.DeepEqual(failed, []string{"p2"}) || len(effects) != 0 {
		t.Errorf("failed %v effects %v; want p2 failed, no effect", failed, effects)
	}
	if r := recs["p2"]; r["outcome"] != telemetry.OutcomePayloadMismatch || r["level"] != "ERROR" || !strings.Contains(r["reason"].(string), "different payload") {
		t.Errorf("line = %v", r)
	}
	// A key reused for other content is bad input: InvalidInput counts it, for an alarm on
	// producers sending what can never succeed.
	if metrics["Failed"] != 1 || metrics["InvalidInput"] != 1 || metrics["Duplicate"] != 0 || metrics["Processed"] != 0 {
		t.Errorf("metrics = %v, want Failed 1 and InvalidInput 1", metrics)
	}
}

func TestBadInputRecordReturnsInputError(t *testing.T) {
	hs := newHarness(t, nil, nil)
	err := hs.h.Record(context.Background(), record("b", `{"idempotencyKey":[1]}`))
	var ie *msgkey.InputError
	if !errors.As(err, &ie) || ie.Code != msgkey.CodeValueWrongType {
		t.Fatalf("Record = %v, want *msgkey.InputError value_wrong_type", err)
	}
}

// otherOwner holds key's lock from "another instance" (a Guard on the same table) until release
// is closed, and reports when it holds it.
func otherOwner(t *testing.T, hs *harness, ctx context.Context, key, body string) (held <-chan struct{}, release chan struct{}, done <-chan error) {
	t.Helper()
	g, err := idempotency.New(srv.Client(idempotency.WithoutSDKRetries), idempotency.Config{
		TableName: hs.table, KeyPrefix: "consumer", ValidatePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	h, r, d := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := g.Run(ctx, idempotency.Request{Key: key, Payload: []byte(body)}, func(context.Context) ([]byte, error) {
			close(h)
			<-r
			return nil, nil
		})
		d <- err
	}()
	return h, r, d
}

func TestInFlightElsewhereFailsTheRecord(t *testing.T) {
	hs := newHarness(t, nil, nil)
	body := `{"idempotencyKey":"busy"}`
	held, release, done := otherOwner(t, hs, context.Background(), "busy", body)
	<-held
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("busy-1", body), record("free-1", `{"idempotencyKey":"free"}`)}})
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("other owner: %v", err)
	}
	if !reflect.DeepEqual(failed, []string{"busy-1"}) || !reflect.DeepEqual(effects, []string{"free"}) {
		t.Errorf("failed %v effects %v", failed, effects)
	}
	if r := recs["busy-1"]; r["outcome"] != telemetry.OutcomeInFlightElsewhere || r["level"] != "WARN" {
		t.Errorf("line = %v", r)
	}
	if metrics["InFlightElsewhere"] != 1 || metrics["Failed"] != 1 || metrics["Processed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
	// Once the other owner completed, the redelivery is a duplicate.
	_, recs, effects, _ = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("busy-1", body)}})
	if recs["busy-1"]["outcome"] != telemetry.OutcomeDuplicate || len(effects) != 0 {
		t.Errorf("redelivery: %v, effects %v", recs["busy-1"], effects)
	}
}

// An owner that crashed (its lock ran out with the invocation deadline) is taken over by the
// next delivery, which is counted as LockTakenOver.
func TestLockTakenOverIsCounted(t *testing.T) {
	hs := newHarness(t, nil, nil)
	body := `{"idempotencyKey":"crashed"}`
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	held, release, done := otherOwner(t, hs, ctx, "crashed", body)
	<-held
	defer func() { close(release); <-done }()
	<-ctx.Done()
	time.Sleep(100 * time.Millisecond) // the lock ends at the deadline, in milliseconds

	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("c-2", body)}})
	if len(failed) != 0 || !reflect.DeepEqual(effects, []string{"crashed"}) {
		t.Fatalf("failed %v effects %v", failed, effects)
	}
	if r := recs["c-2"]; r["outcome"] != telemetry.OutcomeProcessed || r["tookOver"] != true || r["attempt"] != 2.0 {
		t.Errorf("line = %v", r)
	}
	if metrics["LockTakenOver"] != 1 || metrics["Processed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
}

func TestCompositeKeyTenants(t *testing.T) {
	// The group: a FIFO queue's message group, or a fair queue's tenant (a standard queue
	// whose messages carry MessageGroupId), the same rule on both.
	for _, queue := range []string{"fifo", "fair"} {
		t.Run("group, "+queue, func(t *testing.T) { tenantFromGroup(t, queue == "fifo") })
	}
	t.Run("body field", func(t *testing.T) {
		hs := newHarness(t, map[string]string{"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant"}, nil)
		failed, recs, effects, _ := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
			record("a", `{"idempotencyKey":"k","tenant":"acme"}`), record("b", `{"idempotencyKey":"k","tenant":"globex"}`),
			record("c", `{"idempotencyKey":"k"}`)}})
		if !reflect.DeepEqual(failed, []string{"c"}) || !sameSet(effects, []string{"k", "k"}) {
			t.Errorf("failed %v effects %v", failed, effects)
		}
		if r := recs["c"]; r["reason"] != `body field "tenant" is missing` || r["idempotencyKey"] != "k" {
			t.Errorf("c line = %v", r)
		}
	})
}

func TestEffectFailureIsRetriedOnRedelivery(t *testing.T) {
	var fails atomic.Bool
	fails.Store(true)
	hs := newHarness(t, nil, failOn(map[string]*atomic.Bool{"flaky": &fails}))
	rec := record("f1", `{"idempotencyKey":"flaky"}`)
	failed, recs, _, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{rec}})
	if !reflect.DeepEqual(failed, []string{"f1"}) || recs["f1"]["outcome"] != telemetry.OutcomeEffectFailed || metrics["Failed"] != 1 || metrics["Processed"] != 0 {
		t.Fatalf("failed %v line %v metrics %v", failed, recs["f1"], metrics)
	}
	fails.Store(false)
	failed, recs, effects, _ := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{rec}})
	if len(failed) != 0 || !reflect.DeepEqual(effects, []string{"flaky"}) || recs["f1"]["attempt"] != 2.0 {
		t.Errorf("redelivery: failed %v effects %v line %v", failed, effects, recs["f1"])
	}
}

func TestPanickingEffectFailsItsRecord(t *testing.T) {
	hs := newHarness(t, nil, func(log *slog.Logger) Effect {
		apply := LogEffect(log)
		return func(ctx context.Context, msg Message) ([]byte, error) {
			if msg.Key == "boom" {
				panic("effect bug")
			}
			return apply(ctx, msg)
		}
	})
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
		record("p", `{"idempotencyKey":"boom"}`), record("ok", `{"idempotencyKey":"fine"}`)}})
	if !reflect.DeepEqual(failed, []string{"p"}) || !reflect.DeepEqual(effects, []string{"fine"}) {
		t.Errorf("failed %v effects %v", failed, effects)
	}
	if r := recs["p"]; r["outcome"] != telemetry.OutcomePanicked || !strings.Contains(r["reason"].(string), "effect bug") {
		t.Errorf("line = %v", r)
	}
	if metrics["Failed"] != 1 {
		t.Errorf("metrics = %v", metrics)
	}
}

func TestEmptyEventFlushesZeros(t *testing.T) {
	hs := newHarness(t, nil, nil)
	failed, _, _, metrics := hs.invoke(events.SQSEvent{})
	if len(failed) != 0 || len(metrics) != 7 {
		t.Errorf("failed %v metrics %v", failed, metrics)
	}
	for name, v := range metrics {
		if v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func sameSet(got, want []string) bool { return reflect.DeepEqual(sortedCopy(got), sortedCopy(want)) }

// tenantFromGroup: IDEMPOTENCY_TENANT_SOURCE=group on a FIFO queue's records, or a fair
// queue's (standard, with MessageGroupId): one effect per tenant for one key, a duplicate
// within a tenant, and a record without a group is bad input.
func tenantFromGroup(t *testing.T, fifoQueue bool) {
	hs := newHarness(t, map[string]string{"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "group"}, nil)
	fifo := func(id, group string) events.SQSMessage {
		r := record(id, `{"idempotencyKey":"same-key"}`)
		if fifoQueue {
			r.EventSourceARN += ".fifo"
		}
		if group != "" {
			r.Attributes["MessageGroupId"] = group
		}
		return r
	}
	failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
		fifo("t1", "tenant-1"), fifo("t2", "tenant-2"), fifo("no-group", "")}})
	if !reflect.DeepEqual(failed, []string{"no-group"}) || len(effects) != 2 {
		t.Errorf("failed %v effects %v: one effect per tenant, the group-less record failed", failed, effects)
	}
	if recs["t2"]["tenant"] != "tenant-2" {
		t.Errorf("t2 line = %v", recs["t2"])
	}
	if r := recs["no-group"]; r["outcome"] != telemetry.OutcomeInvalidInput || !strings.Contains(r["reason"].(string), "MessageGroupId is missing") {
		t.Errorf("no-group line = %v", r)
	}
	if metrics["InvalidInput"] != 1 || metrics["Processed"] != 2 {
		t.Errorf("metrics = %v", metrics)
	}
	// A later delivery of the key in the same tenant is a duplicate. (In one batch of a
	// standard queue the two would run at once, and one would wait for the other's lock.)
	failed, recs, effects, _ = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{fifo("t1-again", "tenant-1")}})
	if len(failed) != 0 || len(effects) != 0 || recs["t1-again"]["outcome"] != telemetry.OutcomeDuplicate {
		t.Errorf("t1-again: failed %v, effects %v, line %v; want a duplicate", failed, effects, recs["t1-again"])
	}
}
