package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/awscron"
)

// Output names of a pipeline's dispatcher (constructs/pipeline.Outputs).
const (
	outDispatcher    = "DispatcherFunctionName"
	outSchedule      = "ScheduleName"
	outScheduleGroup = "ScheduleGroupName"
	// maxBackfill bounds one backfill: a larger gap is several runs, each reviewed.
	maxBackfill = 1000
)

const backfillUsage = `pipelinectl backfill: run the occurrences of a pipeline's schedule that were missed.

  EventBridge Scheduler never replays a firing it missed (a disabled schedule, an outage, a
  schedule deployed late). backfill reads the schedule (cron, time zone, input) with
  GetSchedule, lists its occurrences in [--from, --to), and invokes the dispatcher once per
  occurrence with the event Scheduler would have sent: the scheduled time of the occurrence,
  an execution id "pipelinectl-backfill-...". The dispatcher derives every message's key from
  the occurrence, so an occurrence that did run is dispatched again as duplicates the
  consumer acknowledges without running anything twice: backfilling too much is safe, and a
  backfill can be rerun.

  Dry run unless --yes: it lists the occurrences and changes nothing. A local time that a
  daylight-saving change repeats is not dispatched (Scheduler runs it once, at an instant it
  does not document): it is named, for you to check the dispatcher's log. Ctrl-C stops
  between invocations; the summary says which occurrences were dispatched and the command
  that resumes. Exit 0 when every occurrence was dispatched, 3 when some were not.

  --from TIME   first instant, RFC 3339 (2026-11-25T00:00:00Z), inclusive
  --to TIME     last instant, RFC 3339, exclusive
  --yes         invoke (default: dry run)
  --rate N      invocations per second at most (default 1)
  --output json the summary as one JSON document on stdout
  (at most 1000 occurrences a run)
`

// schedule is what GetSchedule says of a schedule (the fields backfill reads).
type schedule struct {
	Name                       string
	GroupName                  string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	State                      string
	Target                     struct{ Arn, Input string }
}

type backfillSummary struct {
	Status      string   `json:"status"`
	Done        bool     `json:"done"`
	DryRun      bool     `json:"dryRun"`
	Schedule    string   `json:"schedule"`
	Expression  string   `json:"expression"`
	Timezone    string   `json:"timezone"`
	Dispatcher  string   `json:"dispatcher"`
	Occurrences []string `json:"occurrences"`
	Dispatched  []string `json:"dispatched"`
	Failed      []string `json:"failed,omitempty"`
	Ambiguous   []string `json:"ambiguous,omitempty"`
	Resume      string   `json:"resume,omitempty"`
}

func backfill(ctx context.Context, args []string, w streams, connect connector) error {
	fs, c := newFlags("backfill", backfillUsage, w.out)
	fromFlag := fs.String("from", "", "first instant (RFC 3339), inclusive")
	toFlag := fs.String("to", "", "last instant (RFC 3339), exclusive")
	yes := fs.Bool("yes", false, "invoke (default: dry run)")
	rate := new(int)
	*rate = 1
	fs.Var(wholeNumber{rate, "invocations a second"}, "rate", "invocations per second at most")
	outputFlag(fs, c)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("backfill", pos); err != nil {
		return err
	}
	if err := c.checkOutput(); err != nil {
		return err
	}
	from, err := time.Parse(time.RFC3339, *fromFlag)
	if err != nil {
		return usagef("--from %q: give an RFC 3339 time, e.g. 2026-11-25T00:00:00Z", *fromFlag)
	}
	to, err := time.Parse(time.RFC3339, *toFlag)
	if err != nil {
		return usagef("--to %q: give an RFC 3339 time, e.g. 2026-11-25T03:00:00Z", *toFlag)
	}
	if !from.Before(to) {
		return usagef("--from %s is not before --to %s", *fromFlag, *toFlag)
	}
	if to.After(time.Now().Add(time.Minute)) {
		return usagef("--to %s is in the future: backfill runs what was missed; the schedule runs what is to come", *toFlag)
	}
	if *rate < 1 || *rate > 100 {
		return usagef("--rate %d: use 1 to 100 invocations per second", *rate)
	}
	if c.stack == "" && c.outputs == "" {
		return usagef("backfill needs the pipeline's outputs: give --stack or --outputs, with --pipeline")
	}
	out := w.text(c)
	cl, err := connect(ctx, c)
	if err != nil {
		return err
	}
	outputs, src, err := c.stackOutputs(ctx, cl)
	if err != nil {
		return err
	}
	if _, err := c.pipelineDLQ(outputs, src); err != nil {
		return err
	}
	fn, name, groupName := outputs[c.pipeline+outDispatcher], outputs[c.pipeline+outSchedule], outputs[c.pipeline+outScheduleGroup]
	if fn == "" || name == "" {
		return fmt.Errorf("%s has no outputs %s%s and %s%s: the pipeline has no dispatcher, or its stack predates them (deploy it again)",
			src, c.pipeline, outDispatcher, c.pipeline, outSchedule)
	}
	q := url.Values{}
	if groupName != "" {
		q.Set("groupName", groupName)
	}
	_, body, err := cl.rest.call(ctx, "scheduler", "GetSchedule", http.MethodGet, "/schedules/"+url.PathEscape(name)+"?"+q.Encode(), nil, nil)
	if err != nil {
		return err
	}
	var sch schedule
	if err := json.Unmarshal(body, &sch); err != nil {
		return fmt.Errorf("scheduler GetSchedule %s: %w", name, err)
	}
	expr, ok := strings.CutPrefix(sch.ScheduleExpression, "cron(")
	if !ok {
		return fmt.Errorf("schedule %s runs on %q: only a cron schedule has occurrences to backfill", name, sch.ScheduleExpression)
	}
	cron, err := awscron.Parse(strings.TrimSuffix(expr, ")"))
	if err != nil {
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	loc, err := time.LoadLocation(cmp.Or(sch.ScheduleExpressionTimezone, "UTC"))
	if err != nil {
		return fmt.Errorf("schedule %s: time zone %q: %w", name, sch.ScheduleExpressionTimezone, err)
	}
	if !strings.Contains(sch.Target.Input, "<aws.scheduler.scheduled-time>") {
		return fmt.Errorf("schedule %s: its input does not carry <aws.scheduler.scheduled-time>: the dispatcher would key the messages by the wall clock, and a backfill could run them twice", name)
	}
	// The civil dates around [from, to), then the instants within it; a repeated local
	// time (fall back) is where the two choices differ.
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	dFrom, dTo := day(from.In(loc)).AddDate(0, 0, -1), day(to.In(loc)).AddDate(0, 0, 2)
	first := cron.Occurrences(loc, dFrom, dTo, awscron.FirstInstant)
	second := cron.Occurrences(loc, dFrom, dTo, awscron.SecondInstant)
	inRange := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	s := &backfillSummary{DryRun: !*yes, Schedule: name, Expression: sch.ScheduleExpression, Timezone: loc.String(), Dispatcher: fn,
		Occurrences: []string{}, Dispatched: []string{}}
	var occs []time.Time
	secondSet := map[int64]bool{}
	for _, t := range second {
		secondSet[t.Unix()] = true
	}
	for _, t := range first {
		if !inRange(t) {
			continue
		}
		if !secondSet[t.Unix()] {
			s.Ambiguous = append(s.Ambiguous, t.In(loc).Format("2006-01-02 15:04 MST")+" ("+t.UTC().Format(time.RFC3339)+" or an hour later)")
			continue
		}
		occs = append(occs, t)
		s.Occurrences = append(s.Occurrences, t.UTC().Format(time.RFC3339))
	}
	if len(occs) > maxBackfill {
		return usagef("%d occurrences from %s to %s: at most %d a run; split the range", len(occs), *fromFlag, *toFlag, maxBackfill)
	}
	fmt.Fprintf(out, "schedule     %s: %s in %s (%s)\n", name, sch.ScheduleExpression, loc, cmp.Or(sch.State, "state unknown"))
	fmt.Fprintf(out, "dispatcher   %s\n", fn)
	fmt.Fprintf(out, "occurrences  %d in [%s, %s)\n", len(occs), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	for _, t := range occs {
		fmt.Fprintf(out, "  %s  (%s)\n", t.UTC().Format(time.RFC3339), t.In(loc).Format("2006-01-02 15:04 MST"))
	}
	for _, a := range s.Ambiguous {
		fmt.Fprintf(out, "  NOT dispatched: %s occurs twice (daylight saving ends); Scheduler ran it once, at an instant it does not document: "+
			"the dispatcher's log says which; invoke it by hand if neither ran\n", a)
	}
	fmt.Fprintln(out, "An occurrence that already ran is dispatched again as duplicates: its messages carry the same keys, and the consumer runs nothing twice.")
	if !*yes {
		fmt.Fprintln(out, "Dry run: nothing dispatched. Run again with --yes to invoke the dispatcher once per occurrence.")
		s.Status, s.Done = "dry run", true
		return s.finish(w, c, nil)
	}

	s.Resume = resumeCommand(w.argv, true)
	execID := fmt.Sprintf("pipelinectl-backfill-%d", time.Now().UnixNano())
	interval := time.Second / time.Duration(*rate)
	var errs []error
	for i, t := range occs {
		if ctx.Err() != nil {
			break
		}
		if i > 0 && !pause(ctx, interval) {
			break
		}
		event := strings.NewReplacer(
			"<aws.scheduler.scheduled-time>", t.UTC().Format(time.RFC3339),
			"<aws.scheduler.execution-id>", fmt.Sprintf("%s-%d", execID, i),
			"<aws.scheduler.attempt-number>", "1",
			"<aws.scheduler.schedule-arn>", sch.Target.Arn,
		).Replace(sch.Target.Input)
		// Each invocation runs to its end, also on Ctrl-C: the summary must say whether
		// it dispatched.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		hdr, resp, err := cl.rest.call(cctx, "lambda", "Invoke", http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(fn)+"/invocations",
			http.Header{"X-Amz-Invocation-Type": {"RequestResponse"}, "Content-Type": {"application/json"}}, []byte(event))
		cancel()
		occ := t.UTC().Format(time.RFC3339)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("occurrence %s: %w", occ, err))
		case hdr.Get("X-Amz-Function-Error") != "":
			err = fmt.Errorf("occurrence %s: the dispatcher failed (%s): %s", occ, hdr.Get("X-Amz-Function-Error"), strings.TrimSpace(string(resp)))
			errs = append(errs, err)
		}
		if err != nil {
			s.Failed = append(s.Failed, occ)
			fmt.Fprintf(out, "FAILED       %s: %v\n", occ, err)
			continue
		}
		s.Dispatched = append(s.Dispatched, occ)
		fmt.Fprintf(out, "dispatched   %s: %s\n", occ, truncate(strings.TrimSpace(string(resp)), 200))
	}
	switch {
	case len(s.Dispatched) == len(occs):
		s.Status, s.Done = "done", true
	case ctx.Err() != nil:
		s.Status = "not done: interrupted"
	default:
		s.Status = fmt.Sprintf("not done: %d of %d occurrences failed", len(s.Failed), len(occs))
	}
	return s.finish(w, c, errors.Join(errs...))
}

func (s *backfillSummary) finish(w streams, c *common, err error) error {
	if s.Done {
		s.Resume = ""
	}
	if c.output == "json" {
		writeJSON(w.out, s)
	} else if !s.DryRun {
		fmt.Fprintf(w.out, "dispatched   %d of %d occurrences\n", len(s.Dispatched), len(s.Occurrences))
		if s.Done {
			fmt.Fprintln(w.out, "done         every occurrence was dispatched (exit 0)")
		} else {
			fmt.Fprintf(w.out, "NOT DONE     %s (exit %d)\nresume with  %s\n             (rerunning dispatches again what was dispatched: duplicates the consumer acknowledges)\n",
				s.Status, exitNotDone, s.Resume)
		}
	}
	if s.Done {
		return nil
	}
	why := s.Status
	if err != nil {
		why += ": " + err.Error()
	}
	return &notDone{why: why}
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
