package main

import (
	"encoding/json"
	"testing"
)

// The figures are only as good as the work: every contender gets the duplicates the report
// claims, each repeating a key completed in an earlier event (never one in flight).
func TestEventSetDuplicatesRepeatEarlierEvents(t *testing.T) {
	for _, batch := range []int{10, 100} {
		set, err := newEventSet(batch, 200, 2000, 10, 1)
		if err != nil {
			t.Fatal(err)
		}
		if set.Duplicates != 200 || set.TimedCount != 2000 || set.UniqueKeys != 200+1800 {
			t.Errorf("batch %d: %d duplicates, %d timed, %d keys; want 200, 2000, 2000", batch, set.Duplicates, set.TimedCount, set.UniqueKeys)
		}
		seen := map[string]int{} // key -> event index of its first record
		bodies := map[string]string{}
		repeated := map[string]bool{}
		messageIDs := map[string]bool{}
		timed := 0
		for i, ev := range append(set.Warmup[:len(set.Warmup):len(set.Warmup)], set.Timed...) {
			if len(ev.Records) > batch {
				t.Fatalf("batch %d: event %d has %d records", batch, i, len(ev.Records))
			}
			for _, r := range ev.Records {
				if messageIDs[r.MessageId] {
					t.Fatalf("message id %s twice", r.MessageId)
				}
				messageIDs[r.MessageId] = true
				var body struct {
					IdempotencyKey string `json:"idempotencyKey"`
				}
				if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.IdempotencyKey == "" {
					t.Fatalf("body %q: %v", r.Body, err)
				}
				k := body.IdempotencyKey
				first, ok := seen[k]
				switch {
				case !ok:
					seen[k], bodies[k] = i, r.Body
				case first >= i:
					t.Fatalf("batch %d: key %s repeated inside event %d", batch, k, i)
				case repeated[k]:
					t.Fatalf("batch %d: key %s repeated twice", batch, k)
				case bodies[k] != r.Body:
					t.Fatalf("batch %d: duplicate of %s has another body", batch, k)
				default:
					repeated[k] = true
				}
			}
			if i >= len(set.Warmup) {
				timed += len(ev.Records)
			}
		}
		if len(repeated) != set.Duplicates || len(seen) != set.UniqueKeys || timed != set.TimedCount {
			t.Errorf("batch %d: %d repeated keys, %d keys, %d timed records; set says %d, %d, %d",
				batch, len(repeated), len(seen), timed, set.Duplicates, set.UniqueKeys, set.TimedCount)
		}
	}
}

func TestSplitCallsPerNewAndDuplicate(t *testing.T) {
	set := &eventSet{UniqueKeys: 4, Duplicates: 1}
	p := &countingProxy{byItem: map[string][]string{
		"a": {"PutItem", "UpdateItem"},
		"b": {"PutItem", "UpdateItem"},
		"c": {"PutItem", "UpdateItem"},
		"d": {"PutItem", "UpdateItem", "PutItem (condition failed)", "GetItem"},
	}, other: map[string]int{}}
	cc := p.split(set)
	if cc.Irregular != "" || formatOps(cc.PerNew) != "PutItem×1, UpdateItem×1" ||
		formatOps(cc.PerDup) != "GetItem×1, PutItem (condition failed)×1" {
		t.Errorf("got new %v, dup %v, irregular %q", cc.PerNew, cc.PerDup, cc.Irregular)
	}
	// A retry on one item breaks the clean split: it must be reported, not averaged away.
	p.byItem["a"] = append(p.byItem["a"], "UpdateItem")
	if cc := p.split(set); cc.Irregular == "" {
		t.Errorf("an extra call on one item was not reported as irregular: %+v", cc)
	}
}

// The effect counts come from the functions' output lines: ours logs one line per effect run,
// rawfn one line per invocation with its count; other lines count nothing.
func TestEffectLines(t *testing.T) {
	for _, c := range []struct {
		count func([]byte) int
		line  string
		want  int
	}{
		{oursEffects, `{"level":"INFO","message":"effect applied","idempotencyKey":"k"}`, 1},
		{oursEffects, `{"level":"INFO","message":"record outcome","outcome":"processed"}`, 0},
		{rawfnEffects, `{"rawEffects":7}`, 7},
		{rawfnEffects, `{"rawEffects":0}`, 0},
		{rawfnEffects, `{"message":"effect applied"}`, 0},
		{rawfnEffects, `not json`, 0},
	} {
		if got := c.count([]byte(c.line)); got != c.want {
			t.Errorf("count(%s) = %d, want %d", c.line, got, c.want)
		}
	}
}

func TestProcessedEffects(t *testing.T) {
	for line, want := range map[string]int{
		`{"level":"INFO","message":"record outcome","outcome":"processed","attempt":1}`: 1,
		`{"level":"INFO","message":"record outcome","outcome":"duplicate","attempt":1}`: 0,
		`{"level":"INFO","message":"effect applied"}`:                                   0,
	} {
		if got := processedEffects([]byte(line)); got != want {
			t.Errorf("processedEffects(%s) = %d, want %d", line, got, want)
		}
	}
}
