package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%02d", i)
	}
	return out
}

func TestStandardConcurrencyBound(t *testing.T) {
	tests := []struct {
		records, concurrency int
	}{
		{records: 20, concurrency: 4},
		{records: 10, concurrency: 1},
		{records: 3, concurrency: 10}, // fewer records than the bound
		{records: 100, concurrency: 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d records, bound %d", tt.records, tt.concurrency), func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: tt.concurrency})
			target := min(tt.records, tt.concurrency)
			// The first `target` handlers wait for each other, proving the bound is reached;
			// the counter proves it is never exceeded.
			gate := newBarrier(target)
			var inFlight, maxInFlight atomic.Int32
			rec := newRecorder()
			h := rec.wrap(func(ctx context.Context, msg events.SQSMessage) error {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
				}
				return gate.wait()
			})
			ev := stdEvent(ids(tt.records)...)
			rep := p.Process(context.Background(), ev, h)
			checkAccounted(t, ev, rep)
			if got := maxInFlight.Load(); got != int32(target) {
				t.Errorf("max in flight = %d, want exactly %d", got, target)
			}
			if n := rep.Count(StatusSucceeded); n != tt.records {
				t.Errorf("%d succeeded, want %d", n, tt.records)
			}
			for _, id := range ids(tt.records) {
				if rec.count[id] != 1 {
					t.Errorf("%s handled %d times, want 1", id, rec.count[id])
				}
			}
		})
	}
}

func TestStandardFailuresReportedOnce(t *testing.T) {
	all := ids(10)
	tests := []struct {
		name string
		fail []string
	}{
		{name: "none", fail: nil},
		{name: "every third", fail: []string{all[0], all[3], all[6], all[9]}},
		{name: "all", fail: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: 3})
			rec := newRecorder()
			ev := stdEvent(all...)
			rep := p.Process(context.Background(), ev, rec.wrap(failIDs(tt.fail...)))
			checkAccounted(t, ev, rep)
			var got []string
			for _, f := range rep.Response().BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if !slices.Equal(got, tt.fail) {
				t.Errorf("failures = %q, want %q", got, tt.fail)
			}
			for _, res := range rep.Results {
				failed := slices.Contains(tt.fail, res.MessageID)
				if failed && (res.Status != StatusFailed || !errors.Is(res.Err, errBoom)) {
					t.Errorf("%s: %v %v, want failed with the handler's error", res.MessageID, res.Status, res.Err)
				}
			}
			if rep.Count(StatusFailed) != len(tt.fail) || rep.Count(StatusSucceeded) != len(all)-len(tt.fail) {
				t.Errorf("counts: %d failed, %d succeeded", rep.Count(StatusFailed), rep.Count(StatusSucceeded))
			}
			if len(rec.seen()) != len(all) {
				t.Errorf("handler ran %d times, want %d", len(rec.seen()), len(all))
			}
		})
	}
}

// Completion order is forced to be the reverse of event order; results must not follow it.
func TestStandardResultsInEventOrder(t *testing.T) {
	const n = 8
	all := ids(n)
	done := make([]chan struct{}, n+1)
	for i := range done {
		done[i] = make(chan struct{})
	}
	close(done[n])
	var mu sync.Mutex
	var finished []string
	h := func(ctx context.Context, msg events.SQSMessage) error {
		i := slices.Index(all, msg.MessageId)
		select { // record i finishes only after record i+1
		case <-done[i+1]:
		case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
			return errors.New("next record never ran: records are not concurrent")
		}
		mu.Lock()
		finished = append(finished, msg.MessageId)
		mu.Unlock()
		close(done[i])
		if i%2 == 1 {
			return errBoom
		}
		return nil
	}
	p, _ := newTestProcessor(t, Options{Concurrency: n})
	ev := stdEvent(all...)
	rep := p.Process(context.Background(), ev, h)
	checkAccounted(t, ev, rep)
	if slices.Reverse(finished); !slices.Equal(finished, all) {
		t.Fatalf("completion order was not reversed: %q", finished)
	}
	for i, res := range rep.Results {
		if want := map[bool]Status{true: StatusFailed, false: StatusSucceeded}[i%2 == 1]; res.Status != want {
			t.Errorf("result %d (%s) = %v, want %v", i, res.MessageID, res.Status, want)
		}
	}
}

// Standard queues may carry MessageGroupId (fair queues); it must not serialise or skip.
func TestStandardIgnoresMessageGroups(t *testing.T) {
	ev := stdEvent("a1", "a2", "a3")
	for i := range ev.Records {
		ev.Records[i].Attributes["MessageGroupId"] = "tenant-a"
	}
	p, _ := newTestProcessor(t, Options{Concurrency: 3})
	gate := newBarrier(3)
	h := func(ctx context.Context, msg events.SQSMessage) error {
		if err := gate.wait(); err != nil {
			return err
		}
		return failIDs("a1")(ctx, msg)
	}
	rep := p.Process(context.Background(), ev, h)
	checkAccounted(t, ev, rep)
	want := map[string]Status{"a1": StatusFailed, "a2": StatusSucceeded, "a3": StatusSucceeded}
	if got := statusesByID(rep); !maps.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}
