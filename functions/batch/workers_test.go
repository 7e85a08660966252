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

// The goroutines that ran one call's records run the next call's: a call starts no new
// goroutine while enough workers are parked, so a worker keeps the stack it grew.
func TestWorkersOutliveACall(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 4})
	// All four records run at once: four workers.
	var gate sync.WaitGroup
	gate.Add(4)
	together := func(ctx context.Context, msg events.SQSMessage) error {
		gate.Done()
		gate.Wait()
		return nil
	}
	checkAccounted(t, stdEvent("a", "b", "c", "d"), p.Process(context.Background(), stdEvent("a", "b", "c", "d"), together))
	waitParked(t, p, 4)
	for range 3 {
		gate.Add(4)
		rep := p.Process(context.Background(), stdEvent("e", "f", "g", "h"), together)
		for _, r := range rep.Results {
			if r.Status != StatusSucceeded {
				t.Fatalf("record %s: %s %v", r.MessageID, r.Status, r.Err)
			}
		}
		// Still four: the call reused them (a new one would have parked as a fifth).
		waitParked(t, p, 4)
	}
}

// A handler still running after its call's hard stop keeps its worker; the next call does
// not wait for it but starts another, and the stuck one parks when its handler returns.
func TestWorkerStuckPastTheHardStopIsNotWaitedFor(t *testing.T) {
	p, _ := newTestProcessor(t, Options{Concurrency: 1, DeadlineMargin: 2 * time.Second})
	fire := make(chan time.Time)
	p.after = func(time.Duration) <-chan time.Time { return fire }
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	release := make(chan struct{})
	p.Process(ctx, stdEvent("stuck"), func(context.Context, events.SQSMessage) error {
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
	waitParked(t, p, 2) // and the stuck one, once its handler returned
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
