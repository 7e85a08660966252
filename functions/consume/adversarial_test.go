package consume

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Regression tests for defects found by adversarial testing, each against DynamoDB Local.

// With a composite key and the Guard's cache on, two messages whose tenant and key differ only
// in where a NUL falls ({tenant "a\u0000b", key "c"} and {tenant "a", key "b\u0000c"}) are two
// records: both effects run. Both are valid input (msgkey accepts any non-blank UTF-8).
// BATCH_CONCURRENCY=1 runs them one after the other, so the second sees the first's cache entry.
func TestCompositeKeysStayApartInCache(t *testing.T) {
	for _, validate := range []string{"false", "true"} {
		t.Run("IDEMPOTENCY_VALIDATE_PAYLOAD="+validate, func(t *testing.T) {
			hs := newHarness(t, map[string]string{
				"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant",
				"IDEMPOTENCY_CACHE_SIZE": "100", "IDEMPOTENCY_VALIDATE_PAYLOAD": validate, "BATCH_CONCURRENCY": "1",
			}, nil)
			ev := events.SQSEvent{Records: []events.SQSMessage{
				record("m1", `{"idempotencyKey":"c","tenant":"a\u0000b"}`),
				record("m2", `{"idempotencyKey":"b\u0000c","tenant":"a"}`),
			}}
			failed, recs, effects, metrics := hs.invoke(ev)
			if len(failed) != 0 || !sameSet(effects, []string{"c", "b\x00c"}) {
				t.Errorf("failed %v, effects %q; want no failure and both effects", failed, effects)
			}
			for _, id := range []string{"m1", "m2"} {
				if r := recs[id]; r["outcome"] != telemetry.OutcomeProcessed {
					t.Errorf("%s: line %v, want processed", id, r)
				}
			}
			if metrics["Processed"] != 2 || metrics["Duplicate"] != 0 || metrics["Failed"] != 0 {
				t.Errorf("metrics = %v", metrics)
			}
			// Redelivered, each is its own duplicate.
			failed, recs, effects, metrics = hs.invoke(ev)
			if len(failed) != 0 || len(effects) != 0 || metrics["Duplicate"] != 2 {
				t.Errorf("redelivery: failed %v effects %q metrics %v", failed, effects, metrics)
			}
			for _, id := range []string{"m1", "m2"} {
				if r := recs[id]; r["outcome"] != telemetry.OutcomeDuplicate {
					t.Errorf("redelivery of %s: line %v, want duplicate", id, r)
				}
			}
		})
	}
}

// invokeLines runs one invocation and returns its failures and every stdout line by kind: the
// EMF line and the other lines by message. It resets the output.
func (hs *harness) invokeLines(ev events.SQSEvent) (failed int, emf map[string]any, byMsg map[string][]map[string]any) {
	t := hs.t
	t.Helper()
	resp, err := hs.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned an error for a batch: %v", err)
	}
	byMsg = map[string][]map[string]any{}
	for _, l := range hs.out.lines(t) {
		if l["_aws"] != nil {
			emf = l
			continue
		}
		msg, _ := l["message"].(string)
		byMsg[msg] = append(byMsg[msg], l)
	}
	hs.out.reset()
	return len(resp.BatchItemFailures), emf, byMsg
}

// An effect whose result is over DynamoDB's item limit, with the Guard storing results: the
// effect runs once, the record is COMPLETED without the result, the drop is logged and counted
// (ResultDropped) once, and the redelivery is a duplicate that says its result was dropped.
func TestOversizeResultIsDroppedAndCounted(t *testing.T) {
	hs := newHarness(t, nil, nil)
	cfg, err := LoadConfig(lookupFrom(hs.env))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Idempotency.StoreResult = true // a consumer with its own Effect and main sets this
	log := telemetry.NewLogger(hs.out, cfg.LogLevel)
	apply := LogEffect(log)
	const size = 410 * 1024
	effect := func(ctx context.Context, msg Message) ([]byte, error) {
		_, err := apply(ctx, msg)
		return []byte(strings.Repeat("r", size)), err
	}
	if hs.h, err = NewHandler(cfg, srv.Client(idempotency.WithoutSDKRetries), effect, log, hs.out); err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{record("big-1", `{"idempotencyKey":"big"}`)}}

	failed, emf, lines := hs.invokeLines(ev)
	if failed != 0 || len(lines["effect applied"]) != 1 {
		t.Fatalf("first delivery: %d failed, %d effects; want none failed, one effect", failed, len(lines["effect applied"]))
	}
	if out := lines["record outcome"]; len(out) != 1 || out[0]["outcome"] != telemetry.OutcomeProcessed || out[0]["resultDropped"] != true {
		t.Errorf("record lines %v, want one processed with resultDropped", out)
	}
	drop := lines["result not stored"]
	if len(drop) != 1 || drop[0]["level"] != "WARN" || drop[0]["resultBytes"] != float64(size) || drop[0]["idempotencyKey"] != "big" ||
		!strings.Contains(drop[0]["reason"].(string), "COMPLETED without it") {
		t.Errorf("drop lines %v, want one WARN line with the size and the reason", drop)
	}
	if emf["ResultDropped"] != 1.0 || emf["Processed"] != 1.0 {
		t.Errorf("EMF %v, want ResultDropped 1, Processed 1", emf)
	}
	out, err := srv.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(hs.table),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "consumer#big"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := out.Item[idempotency.AttrStatus].(*types.AttributeValueMemberS); st == nil || st.Value != idempotency.StatusCompleted ||
		out.Item[idempotency.AttrData] != nil || out.Item[idempotency.AttrResultDropped] == nil {
		t.Errorf("record %v, want COMPLETED, no data, %s set", out.Item[idempotency.AttrStatus], idempotency.AttrResultDropped)
	}

	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	failed, emf, lines = hs.invokeLines(ev)
	if failed != 0 || len(lines["effect applied"]) != 0 || len(lines["result not stored"]) != 0 {
		t.Errorf("redelivery: %d failed, lines %v; want no failure, no effect, no new drop", failed, lines)
	}
	if out := lines["record outcome"]; len(out) != 1 || out[0]["outcome"] != telemetry.OutcomeDuplicate || out[0]["resultDropped"] != true {
		t.Errorf("redelivery lines %v, want one duplicate with resultDropped", out)
	}
	if emf["ResultDropped"] != 0.0 || emf["Duplicate"] != 1.0 {
		t.Errorf("redelivery EMF %v, want ResultDropped 0 (registered, nothing new), Duplicate 1", emf)
	}
}

// Without StoreResult nothing can be dropped, and the counter is not published at all.
func TestResultDroppedOnlyPublishedWithStoreResult(t *testing.T) {
	hs := newHarness(t, nil, nil)
	_, emf, _ := hs.invokeLines(events.SQSEvent{})
	if _, ok := emf[telemetry.MetricResultDropped]; ok || emf["Processed"] != 0.0 {
		t.Errorf("EMF %v: want the consumer counters without %s", emf, telemetry.MetricResultDropped)
	}
}
