package batch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestFIFOGroupFailureStopsOnlyThatGroup(t *testing.T) {
	event := []string{"A:a1", "B:b1", "A:a2", "C:c1", "B:b2", "A:a3", "C:c2", "B:b3", "A:a4"}
	tests := []struct {
		name        string
		concurrency int
		fail        []string
		wantCalls   map[string][]string // per group, in call order
		wantSkipped []string            // StatusSkippedGroupFailed
		wantFailed  []string            // response, event order
	}{
		{
			name: "middle of A fails", concurrency: 3, fail: []string{"a2"},
			wantCalls:   map[string][]string{"A": {"a1", "a2"}, "B": {"b1", "b2", "b3"}, "C": {"c1", "c2"}},
			wantSkipped: []string{"a3", "a4"},
			wantFailed:  []string{"a2", "a3", "a4"},
		},
		{
			name: "same, one group at a time", concurrency: 1, fail: []string{"a2"},
			wantCalls:   map[string][]string{"A": {"a1", "a2"}, "B": {"b1", "b2", "b3"}, "C": {"c1", "c2"}},
			wantSkipped: []string{"a3", "a4"},
			wantFailed:  []string{"a2", "a3", "a4"},
		},
		{
			name: "first of B fails", concurrency: 2, fail: []string{"b1"},
			wantCalls:   map[string][]string{"A": {"a1", "a2", "a3", "a4"}, "B": {"b1"}, "C": {"c1", "c2"}},
			wantSkipped: []string{"b2", "b3"},
			wantFailed:  []string{"b1", "b2", "b3"},
		},
		{
			name: "last of each group fails", concurrency: 3, fail: []string{"a4", "b3", "c2"},
			wantCalls:  map[string][]string{"A": {"a1", "a2", "a3", "a4"}, "B": {"b1", "b2", "b3"}, "C": {"c1", "c2"}},
			wantFailed: []string{"c2", "b3", "a4"},
		},
		{
			name: "all succeed", concurrency: 10,
			wantCalls: map[string][]string{"A": {"a1", "a2", "a3", "a4"}, "B": {"b1", "b2", "b3"}, "C": {"c1", "c2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: tt.concurrency})
			rec := newRecorder()
			ev := fifoEvent(event...)
			rep := p.Process(context.Background(), ev, rec.wrap(failIDs(tt.fail...)))
			checkAccounted(t, ev, rep)

			if !maps.EqualFunc(rec.byGroup, tt.wantCalls, slices.Equal) {
				t.Errorf("calls per group = %v, want %v", rec.byGroup, tt.wantCalls)
			}
			for _, res := range rep.Results {
				switch {
				case slices.Contains(tt.wantSkipped, res.MessageID):
					if res.Status != StatusSkippedGroupFailed || !errors.Is(res.Err, ErrGroupFailed) {
						t.Errorf("%s = %v (%v), want skipped_group_failed", res.MessageID, res.Status, res.Err)
					}
				case slices.Contains(tt.fail, res.MessageID):
					if res.Status != StatusFailed || !errors.Is(res.Err, errBoom) {
						t.Errorf("%s = %v (%v), want failed", res.MessageID, res.Status, res.Err)
					}
				case res.Status != StatusSucceeded:
					t.Errorf("%s = %v (%v), want succeeded", res.MessageID, res.Status, res.Err)
				}
			}
			var got []string
			for _, f := range rep.Response().BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if !slices.Equal(got, tt.wantFailed) {
				t.Errorf("batchItemFailures = %q, want %q", got, tt.wantFailed)
			}
		})
	}
}

// Groups run concurrently up to the bound, records inside a group never overlap. The first
// record of each of the first `bound` groups waits at a barrier sized to the bound: it is only
// passed if that many groups are in flight together.
func TestFIFOGroupsRunConcurrently(t *testing.T) {
	event := []string{"A:a1", "B:b1", "C:c1", "D:d1", "A:a2", "B:b2", "C:c2", "D:d2", "A:a3"}
	for _, bound := range []int{2, 4} {
		t.Run(fmt.Sprintf("bound %d", bound), func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: bound})
			gate := newBarrier(bound)
			var mu sync.Mutex
			perGroup := map[string]int{} // records of the group in flight
			active, maxActive := 0, 0    // groups with a record in flight
			overlapInGroup := false
			rec := newRecorder()
			h := rec.wrap(func(ctx context.Context, msg events.SQSMessage) error {
				g := msg.Attributes["MessageGroupId"]
				mu.Lock()
				if perGroup[g]++; perGroup[g] > 1 {
					overlapInGroup = true
				} else {
					active++
					maxActive = max(maxActive, active)
				}
				mu.Unlock()
				defer func() {
					mu.Lock()
					if perGroup[g]--; perGroup[g] == 0 {
						active--
					}
					mu.Unlock()
				}()
				// The first records of the first `bound` groups meet at the barrier.
				if strings.HasSuffix(msg.MessageId, "1") && strings.Contains("ABCD"[:bound], g) {
					return gate.wait()
				}
				return nil
			})
			ev := fifoEvent(event...)
			rep := p.Process(context.Background(), ev, h)
			checkAccounted(t, ev, rep)
			if n := rep.Count(StatusSucceeded); n != len(event) {
				t.Errorf("%d succeeded, want all %d (a barrier timed out?): %v", n, len(event), rep.Results)
			}
			if maxActive != bound {
				t.Errorf("at most %d groups in flight, want exactly the bound %d", maxActive, bound)
			}
			if overlapInGroup {
				t.Error("two records of one group ran at the same time")
			}
			want := map[string][]string{"A": {"a1", "a2", "a3"}, "B": {"b1", "b2"}, "C": {"c1", "c2"}, "D": {"d1", "d2"}}
			if !maps.EqualFunc(rec.byGroup, want, slices.Equal) {
				t.Errorf("order per group = %v, want %v", rec.byGroup, want)
			}
		})
	}
}
