package batch

import "sync/atomic"

// workers runs tasks on goroutines that outlive a Process call. A record's handler goes deep
// (the SDK's middleware stack, signing, the HTTP client), and a new goroutine grows its
// stack to that depth by copying, again on every record; a worker parked between calls keeps
// the stack it grew. Under Lambda's CPU share of a small function the copying is a measured
// share of each record (docs/benchmarks.md, section 6).
//
// A worker parks only when it finished its task; a handler still running past a run's hard
// stop keeps its goroutine, and the next call starts another. So no call ever waits for a
// worker, and the parked workers number at most the most tasks any call ran at once.
type workers struct {
	tasks chan func() // unbuffered: a send succeeds only while a worker waits for a task
	idle  atomic.Int32
}

func newWorkers() *workers { return &workers{tasks: make(chan func())} }

// Go runs f on a parked worker, or on a new one when none is parked.
func (w *workers) Go(f func()) {
	select {
	case w.tasks <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	for {
		f()
		f = nil // nothing of the last call stays reachable from a parked worker (TestParkedWorkersHoldNoRecords)
		w.idle.Add(1)
		f = <-w.tasks
		w.idle.Add(-1)
	}
}

// parked reports how many workers wait for a task (for tests).
func (w *workers) parked() int { return int(w.idle.Load()) }
