//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// TestDSTSpringForward: a daily 01:30 Europe/Berlin schedule across the spring-forward change.
// Sunday 2025-03-30 01:30 CET (before the 02:00 change) is 00:30Z; Monday 01:30 CEST is 23:30Z
// of the same UTC day. Both days' work must happen exactly once, and a double fire of Sunday's
// occurrence must be absorbed. Keys derived from the UTC day (the dispatcher's old PERIOD=24h)
// gave both days one set of keys, and the consumer dropped Monday's work as duplicates.
func TestDSTSpringForward(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	sunday := time.Date(2025, 3, 30, 1, 30, 0, 0, berlin)
	monday := time.Date(2025, 3, 31, 1, 30, 0, 0, berlin)
	if s, m := sunday.UTC().Format(time.RFC3339), monday.UTC().Format(time.RFC3339); s != "2025-03-30T00:30:00Z" || m != "2025-03-30T23:30:00Z" {
		t.Fatalf("fixture: the occurrences are %s and %s in UTC, want 00:30Z and 23:30Z of 2025-03-30", s, m)
	}
	for _, fifo := range []bool{false, true} {
		t.Run(kind(fifo), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "dst")
			p := w.pipeline(fifo)
			var items []map[string]any
			for i := range 20 {
				items = append(items, map[string]any{"id": fmt.Sprintf("report-%02d", i), "group": fmt.Sprintf("tenant-%d", i%3)})
			}
			want := append(dispatchKeys(t, w, p, sunday, items), dispatchKeys(t, w, p, monday, items)...)
			if n := len(slices.Compact(slices.Sorted(slices.Values(want)))); n != 2*len(items) {
				t.Fatalf("the contract gives %d distinct keys for 2 occurrences x %d items, want %d", n, len(items), 2*len(items))
			}

			// Sunday, Monday, and Sunday again from another execution environment at the same
			// moment as Monday (Scheduler delivering the Sunday occurrence twice, late).
			first := w.env(p.Dispatcher, nil)
			if err := w.dispatch(first, p, sunday, "exec-sunday", items); err != nil {
				t.Fatalf("dispatch Sunday: %v", err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			second := w.env(p.Dispatcher, nil)
			wg.Go(func() { errs[0] = w.dispatch(first, p, monday, "exec-monday", items) })
			wg.Go(func() { errs[1] = w.dispatch(second, p, sunday, "exec-sunday-again", items) })
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("dispatch %s: %v", []string{"Monday", "Sunday again"}[i], err)
				}
			}

			pl, stop := w.poll(p, 2)
			// Wait for the queue to drain rather than for the wanted effects: with merged keys
			// they never all happen, and the check below then names the lost keys.
			took := w.waitFor("an empty queue", w.patience(p.Queue), func() bool { return w.depth(p.Queue) == 0 })
			stop()
			w.quiesce()
			checkOnce(t, w.ledger, want)
			// The second Sunday firing is the only repeat the dispatcher sends: a FIFO queue
			// drops it (its MessageDeduplicationId is the key's), on a standard queue the
			// consumer absorbs it. Monday's messages taken for Sunday's would leave Monday's
			// keys without an effect (checkOnce). A record delivered again after its effect (its
			// invocation failed as a whole, or ran past the visibility timeout, as on a starved
			// machine) is a duplicate too: each beyond the firing's must be such a redelivery.
			out, wantDuplicates := w.ledger.Outcomes(), len(items)
			if fifo {
				wantDuplicates = 0
			}
			queued := int64(len(want) + wantDuplicates) // messages in the queue: one per key, and the repeats
			redelivered := max(pl.Stats.Received.Load()-queued, 0)
			if got := out[telemetry.OutcomeDuplicate]; got < wantDuplicates || int64(got-wantDuplicates) > redelivered {
				t.Errorf("%s: %d duplicates reached the consumer, want %d from the repeated firing, plus at most one per redelivered record (%d records delivered for %d queued: %d redelivered)",
					kind(fifo), got, wantDuplicates, pl.Stats.Received.Load(), queued, redelivered)
			}
			report(t, "Berlin 01:30 on 2025-03-30 (00:30Z) and 2025-03-31 (23:30Z the same UTC day), Sunday fired twice, %d items: %d effects for %d keys, %d duplicates absorbed by the consumer, %d records delivered, drained in %v",
				len(items), len(w.ledger.Effects()), len(want), out[telemetry.OutcomeDuplicate], pl.Stats.Received.Load(), took.Round(10*time.Millisecond))
		})
	}
}
