package batch

import "sync/atomic"

// workers runs tasks on goroutines that outlive a Process call. A record's handler goes deep
// (the SDK's middleware stack, signing, the HTTP client), and a new goroutine grows its
// stack to that depth by copying, again on every record; a worker parked between calls keeps
// the stack it grew until a garbage collection finds it idle and shrinks it (with the
// consumer's GOGC=400, collections are rare next to invocations). Under Lambda's CPU share of
// a small function the copying was a measured share of each record (docs/profiles).
//
// A worker parks only when it finished its task and fewer than max workers are parked, else
// it exits; a handler still running past a run's hard stop keeps its goroutine, and the next
// call starts another. So no call ever waits for a worker, and at most max (the Processor's
// concurrency) goroutines stay parked. Goroutine-level state a handler leaves behind (pprof
// labels, a locked OS thread) carries over to the worker's next task.
type workers struct {
	tasks   chan func() // unbuffered: a send succeeds only while a worker waits for a task
	max     int32
	idle    atomic.Int32
	started atomic.Int32 // goroutines ever started (for tests)
}

func newWorkers(max int) *workers { return &workers{tasks: make(chan func()), max: int32(max)} }

// Go runs f on a parked worker, or on a new one when none is parked.
func (w *workers) Go(f func()) {
	select {
	case w.tasks <- f:
	default:
		w.started.Add(1)
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		f = nil // nothing of the last call stays reachable from a parked worker (TestParkedWorkersHoldNoRecords)
		if w.idle.Add(1) > w.max {
			w.idle.Add(-1)
			return
		}
		f = <-w.tasks
		w.idle.Add(-1)
	}
}

// parked reports how many workers wait for a task (for tests).
func (w *workers) parked() int { return int(w.idle.Load()) }
