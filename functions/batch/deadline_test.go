package batch

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// The guard reads the processor's clock; a handler moves it to "deadline minus less than the
// margin" to make every record after it too late, with no real waiting.
func TestDeadlineGuardSkipsUnstartedRecords(t *testing.T) {
	const margin = 2 * time.Second
	tests := []struct {
		name      string
		event     events.SQSEvent
		tripAfter string // handling this record moves the clock past the guard
		wantCalls []string
		want      map[string]Status
	}{
		{
			name:      "standard",
			event:     stdEvent("m1", "m2", "m3", "m4", "m5"),
			tripAfter: "m2",
			wantCalls: []string{"m1", "m2"},
			want: map[string]Status{"m1": StatusSucceeded, "m2": StatusSucceeded,
				"m3": StatusSkippedDeadline, "m4": StatusSkippedDeadline, "m5": StatusSkippedDeadline},
		},
		{
			name:      "fifo: rest of the running group and groups not started",
			event:     fifoEvent("A:a1", "B:b1", "A:a2", "A:a3", "B:b2"),
			tripAfter: "a2",
			wantCalls: []string{"a1", "a2"},
			want: map[string]Status{"a1": StatusSucceeded, "a2": StatusSucceeded, "a3": StatusSkippedDeadline,
				"b1": StatusSkippedDeadline, "b2": StatusSkippedDeadline},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: 1, DeadlineMargin: margin})
			deadline := time.Now().Add(time.Hour)
			clock := newFakeClock(deadline.Add(-time.Minute))
			p.now = clock.now
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()

			rec := newRecorder()
			h := rec.wrap(func(ctx context.Context, msg events.SQSMessage) error {
				if msg.MessageId == tt.tripAfter {
					clock.set(deadline.Add(-margin + time.Millisecond))
				}
				return nil
			})
			rep := p.Process(ctx, tt.event, h)
			checkAccounted(t, tt.event, rep)
			if got := rec.seen(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("handler saw %q, want %q", got, tt.wantCalls)
			}
			if got := statusesByID(rep); !maps.Equal(got, tt.want) {
				t.Errorf("statuses %v, want %v", got, tt.want)
			}
			for _, res := range rep.Results {
				if res.Status == StatusSkippedDeadline && !errors.Is(res.Err, ErrSkippedDeadline) {
					t.Errorf("%s: err %v is not ErrSkippedDeadline", res.MessageID, res.Err)
				}
			}
		})
	}
}

// Real clock, no fakes: a deadline already inside the margin starts nothing.
func TestDeadlineInsideMarginStartsNothing(t *testing.T) {
	for name, ev := range map[string]events.SQSEvent{
		"standard": stdEvent("m1", "m2", "m3"),
		"fifo":     fifoEvent("A:a1", "B:b1", "A:a2"),
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{DeadlineMargin: time.Minute})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rec := newRecorder()
			rep := p.Process(ctx, ev, rec.wrap(nil))
			checkAccounted(t, ev, rep)
			if n := len(rec.seen()); n != 0 {
				t.Errorf("handler ran %d times, want 0", n)
			}
			if n := rep.Count(StatusSkippedDeadline); n != len(ev.Records) {
				t.Errorf("%d skipped, want %d", n, len(ev.Records))
			}
		})
	}
}

func TestCancelledContextStartsNothing(t *testing.T) {
	p, _ := newTestProcessor(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := fifoEvent("A:a1", "B:b1")
	rec := newRecorder()
	rep := p.Process(ctx, ev, rec.wrap(nil))
	checkAccounted(t, ev, rep)
	if len(rec.seen()) != 0 {
		t.Errorf("handler ran for %q", rec.seen())
	}
	for _, res := range rep.Results {
		if res.Status != StatusSkippedDeadline || !errors.Is(res.Err, ErrSkippedDeadline) ||
			!errors.Is(res.Err, context.Canceled) {
			t.Errorf("%s = %v (%v), want skipped_deadline wrapping context.Canceled", res.MessageID, res.Status, res.Err)
		}
	}
}

func TestNoDeadlineRunsEverything(t *testing.T) {
	p, _ := newTestProcessor(t, Options{})
	ev := stdEvent(ids(25)...)
	rep := p.Process(context.Background(), ev, func(ctx context.Context, _ events.SQSMessage) error {
		if _, ok := ctx.Deadline(); ok {
			return errors.New("handler context has a deadline the invocation did not have")
		}
		return nil
	})
	checkAccounted(t, ev, rep)
	if rep.Count(StatusSucceeded) != 25 {
		t.Errorf("%d succeeded, want 25", rep.Count(StatusSucceeded))
	}
}

func TestHandlerContextEndsMarginBeforeDeadline(t *testing.T) {
	const margin = 3 * time.Second
	p, _ := newTestProcessor(t, Options{DeadlineMargin: margin})
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ev := stdEvent("m1", "m2")
	rep := p.Process(ctx, ev, func(ctx context.Context, _ events.SQSMessage) error {
		got, ok := ctx.Deadline()
		if !ok || !got.Equal(deadline.Add(-margin)) {
			return errors.New("handler deadline " + got.String() + ", want invocation deadline minus margin")
		}
		return nil
	})
	checkAccounted(t, ev, rep)
	for _, res := range rep.Results {
		if res.Err != nil {
			t.Error(res.Err)
		}
	}
}

// The guard admits the record (its clock says there is time) but the handler's real context
// has already expired: a well-behaved handler stops, and the record is a plain failure.
func TestInFlightHandlerSeesItsContextExpire(t *testing.T) {
	p, _ := newTestProcessor(t, Options{DeadlineMargin: 2 * time.Minute})
	deadline := time.Now().Add(time.Minute) // handler context: deadline - 2m, already past
	p.now = newFakeClock(deadline.Add(-time.Hour)).now
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ev := fifoEvent("A:a1", "A:a2", "B:b1")
	rec := newRecorder()
	rep := p.Process(ctx, ev, rec.wrap(func(ctx context.Context, _ events.SQSMessage) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	checkAccounted(t, ev, rep)
	want := map[string]Status{"a1": StatusFailed, "a2": StatusSkippedGroupFailed, "b1": StatusFailed}
	if got := statusesByID(rep); !maps.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if !errors.Is(rep.Results[0].Err, context.DeadlineExceeded) {
		t.Errorf("a1 err = %v, want DeadlineExceeded", rep.Results[0].Err)
	}
}

// A handler that ignores its context is abandoned at the hard stop so Process still answers
// Lambda; the running record fails, the unstarted ones are skipped.
func TestHardStopAbandonsHandlerIgnoringContext(t *testing.T) {
	const margin = 2 * time.Second
	tests := []struct {
		name  string
		event events.SQSEvent
		want  map[string]Status
	}{
		{name: "standard", event: stdEvent("m1", "m2", "m3"),
			want: map[string]Status{"m1": StatusFailed, "m2": StatusSkippedDeadline, "m3": StatusSkippedDeadline}},
		{name: "fifo", event: fifoEvent("A:m1", "A:m2", "B:m3"),
			want: map[string]Status{"m1": StatusFailed, "m2": StatusSkippedDeadline, "m3": StatusSkippedDeadline}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: 1, DeadlineMargin: margin})
			deadline := time.Now().Add(time.Hour)
			now := deadline.Add(-10 * time.Second)
			p.now = newFakeClock(now).now
			fire := make(chan time.Time)
			var gotWait time.Duration
			p.after = func(d time.Duration) <-chan time.Time { gotWait = d; return fire }
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()

			release, handlerDone := make(chan struct{}), make(chan error, 1)
			rep := p.Process(ctx, tt.event, func(ctx context.Context, msg events.SQSMessage) error {
				if msg.MessageId != "m1" {
					return nil
				}
				close(fire) // the hard stop fires while this handler is running
				select {    // and it ignores ctx
				case <-release:
				case <-time.After(10 * time.Second): // hang guard: Process never returned
				}
				handlerDone <- ctx.Err()
				return nil
			})
			close(release)
			if err := <-handlerDone; !errors.Is(err, context.Canceled) {
				t.Errorf("abandoned handler's ctx err = %v, want Canceled by the hard stop", err)
			}

			checkAccounted(t, tt.event, rep)
			if got := statusesByID(rep); !maps.Equal(got, tt.want) {
				t.Errorf("statuses %v, want %v", got, tt.want)
			}
			if !errors.Is(rep.Results[0].Err, ErrStillRunning) {
				t.Errorf("m1 err = %v, want ErrStillRunning", rep.Results[0].Err)
			}
			// The hard stop is half the margin before the deadline.
			if want := deadline.Add(-margin / 2).Sub(now); gotWait != want {
				t.Errorf("hard stop after %s, want %s", gotWait, want)
			}
		})
	}
}
