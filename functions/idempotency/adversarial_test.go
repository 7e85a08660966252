package idempotency

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// Regression tests for defects found by adversarial testing, each against DynamoDB Local.

// Two requests of the composite layout whose (partition, sort) pair joins into the same
// string with a NUL separator, {tenant "a\x00b", key "c"} and {tenant "a", key "b\x00c"}, are
// two DynamoDB items and must stay two cache entries: otherwise the second is answered from
// the first's entry, as a duplicate whose effect never runs, or (with payload validation) as a
// payload mismatch that ends in the DLQ.
func TestCacheKeepsCompositeKeysApart(t *testing.T) {
	for _, validate := range []bool{false, true} {
		t.Run(fmt.Sprintf("ValidatePayload=%v", validate), func(t *testing.T) {
			e := newEnv(t, "sk")
			g := e.guard(t, Config{SortKeyAttr: "sk", CacheSize: 16, ValidatePayload: validate})
			reqs := []Request{
				{Tenant: "a\x00b", Key: "c", Payload: []byte("first")},
				{Tenant: "a", Key: "b\x00c", Payload: []byte("second")},
			}
			var calls atomic.Int64
			for _, req := range reqs {
				res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
				if err != nil || res.Outcome != OutcomeProcessed {
					t.Fatalf("%s: Run = %+v, %v; want processed (its own record)", describeKey(req.Key, req.Tenant), res, err)
				}
			}
			if calls.Load() != 2 {
				t.Errorf("handler ran %d times, want 2 (one effect per record)", calls.Load())
			}
			for _, req := range reqs {
				if r := e.record(t, map[string]string{"id": "default#" + req.Tenant, "sk": req.Key}); r == nil || r.status != StatusCompleted {
					t.Errorf("%s: record = %+v, want COMPLETED", describeKey(req.Key, req.Tenant), r)
				}
			}
			// Each is still its own duplicate, answered by its own cache entry.
			e.tr.snapshot()
			for _, req := range reqs {
				if res, err := g.Run(t.Context(), req, handler(&calls, nil, nil)); err != nil || res.Outcome != OutcomeDuplicate {
					t.Errorf("%s again: Run = %+v, %v; want duplicate", describeKey(req.Key, req.Tenant), res, err)
				}
			}
			if got := e.tr.snapshot(); len(got) != 0 {
				t.Errorf("repeats made DynamoDB calls %v, want none (cache hits)", got)
			}
		})
	}
}
