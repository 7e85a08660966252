package batch

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// waitParked waits (generously: a busy machine) until n workers are parked, and fails with
// the count it saw otherwise.
func waitParked(t *testing.T, p *Processor, n int) {
	t.Helper()
	start := time.Now()
	for p.workers.parked() != n {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d workers parked after %v, want %d", p.workers.parked(), time.Since(start).Round(time.Millisecond), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The goroutines that ran one call's records run the next call's: three more calls of four
// records at once start (next to) no new goroutine, where a goroutine per worker and call
// would start twelve. A worker that has just counted itself parked may not wait for a task
// yet, so a call can still start one: the bound allows for that, never for one per call.
func TestWorkersOutliveACall(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 4})
	var gate sync.WaitGroup
	together := func(ctx context.Context, msg events.SQSMessage) error {
		gate.Done()
		gate.Wait() // all four run at once: four workers
		return nil
	}
	for range 4 {
		gate.Add(4)
		rep := p.Process(context.Background(), stdEvent("a", "b", "c", "d"), together)
		for _, r := range rep.Results {
			if r.Status != StatusSucceeded {
				t.Fatalf("record %s: %s %v", r.MessageID, r.Status, r.Err)
			}
		}
		waitParked(t, p, 4)
	}
	if n := p.workers.started.Load(); n > 4+3 {
		t.Errorf("%d goroutines started over 4 calls of 4 records; want 4 (and at most one more per later call), not one per record", n)
	}
	t.Logf("%d goroutines started over 4 calls of 4 records at once", p.workers.started.Load())
}

// At most Concurrency workers stay parked: one that finishes beyond that exits.
func TestParkedWorkersAreCapped(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 2})
	var gate sync.WaitGroup
	gate.Add(4)
	together := func(context.Context, events.SQSMessage) error { gate.Done(); gate.Wait(); return nil }
	// Two concurrent calls of two records each: four workers at once, two parked after.
	var calls sync.WaitGroup
	for range 2 {
		calls.Go(func() { p.Process(context.Background(), stdEvent("a", "b"), together) })
	}
	calls.Wait()
	// Four started and all four finished; the two beyond the cap counted themselves parked
	// only for an instant before exiting, so the count settles at 2.
	waitParked(t, p, 2)
	if n := p.workers.started.Load(); n != 4 {
		t.Errorf("%d goroutines started, want 4 (four records at once)", n)
	}
}

// A handler still running after its call's hard stop keeps its worker; the next call does
// not wait for it but starts another, and the stuck one exits when its handler returns (one
// is parked already, the cap with Concurrency 1).
func TestWorkerStuckPastTheHardStopIsNotWaitedFor(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 1, DeadlineMargin: 2 * time.Second})
	fire := make(chan time.Time)
	p.after = func(time.Duration) <-chan time.Time { return fire }
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	release, returned := make(chan struct{}), make(chan struct{})
	p.Process(ctx, stdEvent("stuck"), func(context.Context, events.SQSMessage) error {
		defer close(returned)
		close(fire) // the hard stop, while this handler ignores its context
		<-release
		return nil
	})
	p.after = func(time.Duration) <-chan time.Time { return nil }
	done := make(chan Report, 1)
	go func() {
		done <- p.Process(context.Background(), stdEvent("next"), func(context.Context, events.SQSMessage) error { return nil })
	}()
	select {
	case rep := <-done:
		if rep.Results[0].Status != StatusSucceeded {
			t.Errorf("next: %s %v", rep.Results[0].Status, rep.Results[0].Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next call waited for the worker stuck in the previous call's handler")
	}
	waitParked(t, p, 1) // the new worker
	close(release)
	<-returned
	waitParked(t, p, 1) // the stuck one exits beyond the cap: still one parked
	if started := p.workers.started.Load(); started != 2 {
		t.Errorf("%d goroutines started, want 2 (the stuck worker and the next call's)", started)
	}
}

// A parked worker holds nothing of the call it ran: the event's records (up to 6 MB of
// bodies) can be collected once Process returns.
func TestParkedWorkersHoldNoRecords(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 2})
	collected := make(chan struct{})
	func() {
		ev := stdEvent("a", "b")
		runtime.AddCleanup(&ev.Records[0], func(ch chan struct{}) { close(ch) }, collected)
		p.Process(context.Background(), ev, func(context.Context, events.SQSMessage) error { return nil })
	}()
	waitParked(t, p, 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the event's records were not collected after Process returned: a parked worker still holds them")
		}
	}
}
