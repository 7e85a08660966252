package batch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

const attrMessageGroupID = "MessageGroupId"

// Process runs h over the records of event and reports each record's outcome in event order.
// It returns once every started handler has returned, or, when ctx has a deadline, at the
// latest DeadlineMargin/2 before it (see the package documentation). It never fails as a
// whole: every problem is a failed record.
func (p *Processor) Process(ctx context.Context, event events.SQSEvent, h Handler) Report {
	recs := event.Records
	results := make([]Result, len(recs))
	if len(recs) == 0 {
		return Report{Results: results}
	}
	fifo := false
	for i, rec := range recs {
		results[i] = Result{MessageID: rec.MessageId, GroupID: rec.Attributes[attrMessageGroupID]}
		fifo = fifo || strings.HasSuffix(rec.EventSourceARN, ".fifo")
	}

	units, dupOf := p.plan(recs, results, fifo)
	if h == nil {
		for _, unit := range units {
			for _, i := range unit {
				results[i].Status, results[i].Err = StatusFailed, ErrNilHandler
			}
		}
	} else {
		r := newRun(ctx, p, recs, results, h, fifo)
		r.execute(units)
	}
	for i, first := range dupOf {
		if first >= 0 {
			results[i].Status, results[i].Err = results[first].Status, results[first].Err
		}
	}
	report := Report{Results: results}
	p.logOutcome(ctx, recs, report, fifo)
	return report
}

// plan splits the records into units, each a list of record indexes run one after another by
// one worker: a single record on a standard queue, a whole message group on a FIFO queue (in
// first-appearance order, so early groups start first). Repeated message ids are left out of
// every unit and marked in dupOf with the index of their first occurrence (-1 otherwise).
func (p *Processor) plan(recs []events.SQSMessage, results []Result, fifo bool) (units [][]int, dupOf []int) {
	dupOf = make([]int, len(recs))
	first := make(map[string]int, len(recs))
	groupUnit := map[string]int{}
	ungrouped := 0
	for i, rec := range recs {
		dupOf[i] = -1
		if id := rec.MessageId; id != "" {
			if j, seen := first[id]; seen {
				dupOf[i] = j
				results[i].Duplicate = true
				continue
			}
			first[id] = i
		}
		if !fifo {
			units = append(units, []int{i})
			continue
		}
		g, ok := rec.Attributes[attrMessageGroupID]
		if !ok || g == "" {
			ungrouped++
			g = "" // all records without a group share one ordered unit
		}
		u, ok := groupUnit[g]
		if !ok {
			u = len(units)
			groupUnit[g] = u
			units = append(units, nil)
		}
		units[u] = append(units[u], i)
	}
	if ungrouped > 0 {
		p.log.Warn("FIFO records without MessageGroupId run as one ordered group",
			"count", ungrouped, "eventSourceARN", recs[0].EventSourceARN)
	}
	return units, dupOf
}

type slotState uint8

const (
	slotPending slotState = iota
	slotRunning
	slotDone
)

// run is the state of one Process call. Workers write results under mu; once closed is set
// (the hard stop), Process owns the results and late workers only drop what they have.
type run struct {
	p       *Processor
	recs    []events.SQSMessage
	h       Handler
	fifo    bool
	parent  context.Context
	hctx    context.Context // handlers' context: parent deadline minus margin
	cancel  context.CancelFunc
	dl      time.Time
	hasDL   bool
	mu      sync.Mutex
	closed  bool
	state   []slotState
	results []Result
}

func newRun(ctx context.Context, p *Processor, recs []events.SQSMessage, results []Result, h Handler, fifo bool) *run {
	r := &run{p: p, recs: recs, h: h, fifo: fifo, parent: ctx, results: results,
		state: make([]slotState, len(recs))}
	r.dl, r.hasDL = ctx.Deadline()
	if r.hasDL {
		r.hctx, r.cancel = context.WithDeadline(ctx, r.dl.Add(-p.margin))
	} else {
		r.hctx, r.cancel = context.WithCancel(ctx)
	}
	return r
}

func (r *run) execute(units [][]int) {
	defer r.cancel()
	queue := make(chan []int, len(units))
	for _, u := range units {
		queue <- u
	}
	close(queue)

	var wg sync.WaitGroup
	for range min(r.p.concurrency, len(units)) {
		wg.Add(1)
		r.p.workers.Go(func() {
			defer wg.Done()
			for unit := range queue {
				if !r.runUnit(unit) {
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var hardStop <-chan time.Time
	if r.hasDL {
		hardStop = r.p.after(r.dl.Add(-r.p.margin / 2).Sub(r.p.now()))
	}
	select {
	case <-done:
	case <-hardStop:
		r.close()
	}
}

// runUnit runs the records of one unit in order. It returns false once the run is closed.
func (r *run) runUnit(unit []int) bool {
	for k, i := range unit {
		if err := r.tooLate(); err != nil {
			return r.skip(unit[k:], StatusSkippedDeadline, err)
		}
		base, ok := r.start(i)
		if !ok {
			return false
		}
		res := r.call(i, base)
		if !r.finish(i, res) {
			return false
		}
		if res.Status != StatusSucceeded && r.fifo && k+1 < len(unit) {
			err := fmt.Errorf("%w (message %s: %s)", ErrGroupFailed, r.recs[i].MessageId, res.Status)
			return r.skip(unit[k+1:], StatusSkippedGroupFailed, err)
		}
	}
	return true
}

// tooLate is the deadline guard, checked before each record starts.
func (r *run) tooLate() error {
	if err := r.parent.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrSkippedDeadline, err)
	}
	if r.hasDL {
		if left := r.dl.Sub(r.p.now()); left < r.p.margin {
			return fmt.Errorf("%w: %s left, margin %s", ErrSkippedDeadline, left.Round(time.Millisecond), r.p.margin)
		}
	}
	return nil
}

// call runs the handler for record i, turning a panic into that record's failure. res starts
// as a copy of the record's identity fields: the shared slot may be written by close meanwhile.
func (r *run) call(i int, base Result) (res Result) {
	res = base
	defer func() {
		if v := recover(); v != nil {
			res.Status, res.Err = StatusPanicked, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	res.Status, res.Err = StatusSucceeded, nil
	if err := r.h(r.hctx, r.recs[i]); err != nil {
		res.Status, res.Err = StatusFailed, err
	}
	return res
}

func (r *run) start(i int) (Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Result{}, false
	}
	r.state[i] = slotRunning
	return r.results[i], true
}

func (r *run) finish(i int, res Result) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.results[i], r.state[i] = res, slotDone
	return true
}

func (r *run) skip(idx []int, s Status, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	for _, i := range idx {
		r.results[i].Status, r.results[i].Err, r.state[i] = s, err, slotDone
	}
	return true
}

// close is the hard stop: records still running are failed, records not started skipped, and
// from now on workers leave the results alone.
func (r *run) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.cancel()
	for i, st := range r.state {
		switch st {
		case slotRunning:
			r.results[i].Status, r.results[i].Err = StatusFailed, ErrStillRunning
		case slotPending:
			r.results[i].Status, r.results[i].Err = StatusSkippedDeadline,
				fmt.Errorf("%w: stopped waiting for running handlers", ErrSkippedDeadline)
		}
	}
}

// logOutcome logs every record that did not succeed, in event order, plus a debug summary.
func (p *Processor) logOutcome(ctx context.Context, recs []events.SQSMessage, rep Report, fifo bool) {
	for i, res := range rep.Results {
		if res.Status == StatusSucceeded {
			continue
		}
		attrs := []slog.Attr{
			slog.String(telemetry.AttrMessageID, res.MessageID),
			slog.String(telemetry.AttrGroupID, res.GroupID),
			receiveCount(recs[i]),
			slog.String(telemetry.AttrStatus, res.Status.String()),
			slog.String(telemetry.AttrReason, errText(res.Err)),
		}
		if res.Duplicate {
			attrs = append(attrs, slog.Bool("duplicate", true))
		}
		level := slog.LevelWarn
		if pe, ok := res.Err.(*PanicError); ok && !res.Duplicate {
			level = slog.LevelError
			attrs = append(attrs, slog.String("stack", string(pe.Stack)))
		}
		p.log.LogAttrs(ctx, level, "batch record not processed", attrs...)
	}
	p.log.LogAttrs(ctx, slog.LevelDebug, "batch processed",
		slog.Int("records", len(rep.Results)),
		slog.Bool("fifo", fifo),
		slog.Int("succeeded", rep.Count(StatusSucceeded)),
		slog.Int("failed", rep.Count(StatusFailed)),
		slog.Int("panicked", rep.Count(StatusPanicked)),
		slog.Int("skippedGroupFailed", rep.Count(StatusSkippedGroupFailed)),
		slog.Int("skippedDeadline", rep.Count(StatusSkippedDeadline)))
}

func receiveCount(rec events.SQSMessage) slog.Attr {
	raw := rec.Attributes["ApproximateReceiveCount"]
	if n, err := strconv.Atoi(raw); err == nil {
		return slog.Int(telemetry.AttrReceiveCount, n)
	}
	return slog.String(telemetry.AttrReceiveCount, raw)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
