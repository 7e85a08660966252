package main

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
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
				if r := recs[id]; r["outcome"] != OutcomeProcessed {
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
				if r := recs[id]; r["outcome"] != OutcomeDuplicate {
					t.Errorf("redelivery of %s: line %v, want duplicate", id, r)
				}
			}
		})
	}
}
