package backfill

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/internal/awscron"
)

// maxBackfill bounds one backfill: a larger gap is several runs, each reviewed.
const maxBackfill = 1000

// Usage is `pipelinectl help backfill`.
const Usage = `pipelinectl backfill: run the occurrences of a pipeline's schedule that were missed.

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

// Summary is what a backfill did or would do (--output json prints it).
type Summary struct {
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

// Run is `pipelinectl backfill ARGS`: it reads the pipeline's schedule, lists the
// occurrences in the range, and on --yes invokes the dispatcher once for each.
func Run(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	o, c, err := parse(args, w)
	if err != nil {
		return err
	}
	out := w.Text(c)
	sch, err := readSchedule(ctx, c, connect)
	if err != nil {
		return err
	}
	occs, ambiguous := occurrences(sch.cron, sch.loc, o.from, o.to)
	if len(occs) > maxBackfill {
		return cli.Usagef("%d occurrences from %s to %s: at most %d a run; split the range", len(occs), o.fromText, o.toText, maxBackfill)
	}
	s := &Summary{DryRun: !o.yes, Schedule: sch.name, Expression: sch.ScheduleExpression, Timezone: sch.loc.String(), Dispatcher: sch.dispatcher,
		Occurrences: []string{}, Dispatched: []string{}, Ambiguous: ambiguous}
	for _, t := range occs {
		s.Occurrences = append(s.Occurrences, t.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(out, "schedule     %s: %s in %s (%s)\n", sch.name, sch.ScheduleExpression, sch.loc, cmp.Or(sch.State, "state unknown"))
	fmt.Fprintf(out, "dispatcher   %s\n", sch.dispatcher)
	fmt.Fprintf(out, "occurrences  %d in [%s, %s)\n", len(occs), o.from.UTC().Format(time.RFC3339), o.to.UTC().Format(time.RFC3339))
	for _, t := range occs {
		fmt.Fprintf(out, "  %s  (%s)\n", t.UTC().Format(time.RFC3339), t.In(sch.loc).Format("2006-01-02 15:04 MST"))
	}
	for _, a := range s.Ambiguous {
		fmt.Fprintf(out, "  NOT dispatched: %s occurs twice (daylight saving ends); Scheduler ran it once, at an instant it does not document: "+
			"the dispatcher's log says which; invoke it by hand if neither ran\n", a)
	}
	fmt.Fprintln(out, "An occurrence that already ran is dispatched again as duplicates: its messages carry the same keys, and the consumer runs nothing twice.")
	if !o.yes {
		fmt.Fprintln(out, "Dry run: nothing dispatched. Run again with --yes to invoke the dispatcher once per occurrence.")
		s.Status, s.Done = "dry run", true
		return s.finish(w, c, nil)
	}
	s.Resume = cli.ResumeCommand(w.Argv, true)
	err = dispatch(ctx, sch, occs, o.rate, out, s)
	switch {
	case len(s.Dispatched) == len(occs):
		s.Status, s.Done = "done", true
	case ctx.Err() != nil:
		s.Status = "not done: interrupted"
	default:
		s.Status = fmt.Sprintf("not done: %d of %d occurrences failed", len(s.Failed), len(occs))
	}
	return s.finish(w, c, err)
}

// options are backfill's own flags.
type options struct {
	from, to         time.Time
	fromText, toText string
	yes              bool
	rate             int
}

// parse reads and checks backfill's flags.
func parse(args []string, w cli.Streams) (options, *cli.Common, error) {
	o := options{rate: 1}
	fs, c := cli.NewFlags("backfill", Usage, w.Out)
	fs.StringVar(&o.fromText, "from", "", "first instant (RFC 3339), inclusive")
	fs.StringVar(&o.toText, "to", "", "last instant (RFC 3339), exclusive")
	fs.BoolVar(&o.yes, "yes", false, "invoke (default: dry run)")
	fs.Var(cli.NewWholeNumber(&o.rate, "invocations a second"), "rate", "invocations per second at most")
	cli.OutputFlag(fs, c)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return o, nil, err
	}
	if err := c.CheckOutput(); err != nil {
		return o, nil, err
	}
	var err error
	if o.from, err = time.Parse(time.RFC3339, o.fromText); err != nil {
		return o, nil, cli.Usagef("--from %q: give an RFC 3339 time, e.g. 2026-11-25T00:00:00Z", o.fromText)
	}
	if o.to, err = time.Parse(time.RFC3339, o.toText); err != nil {
		return o, nil, cli.Usagef("--to %q: give an RFC 3339 time, e.g. 2026-11-25T03:00:00Z", o.toText)
	}
	if !o.from.Before(o.to) {
		return o, nil, cli.Usagef("--from %s is not before --to %s", o.fromText, o.toText)
	}
	if o.to.After(time.Now().Add(time.Minute)) {
		return o, nil, cli.Usagef("--to %s is in the future: backfill runs what was missed; the schedule runs what is to come", o.toText)
	}
	if o.rate < 1 || o.rate > 100 {
		return o, nil, cli.Usagef("--rate %d: use 1 to 100 invocations per second", o.rate)
	}
	if c.Stack == "" && c.Outputs == "" {
		return o, nil, cli.Usagef("backfill needs the pipeline's outputs: give --stack or --outputs, with --pipeline")
	}
	return o, c, nil
}

// pipelineSchedule is a pipeline's schedule as backfill reads it, with its dispatcher and
// the REST client that invokes it.
type pipelineSchedule struct {
	schedule
	name, dispatcher string
	cron             *awscron.Cron
	loc              *time.Location
	rest             *cli.RESTClient
}

// readSchedule finds the pipeline's dispatcher and schedule in the outputs and reads the
// schedule (GetSchedule), refusing one a backfill cannot run: not a cron, or an input
// without the scheduled time that keys the dispatcher's messages.
func readSchedule(ctx context.Context, c *cli.Common, connect cli.Connector) (*pipelineSchedule, error) {
	cl, err := connect(ctx, c)
	if err != nil {
		return nil, err
	}
	outputs, src, err := c.StackOutputs(ctx, cl)
	if err != nil {
		return nil, err
	}
	if _, err := c.PipelineDLQ(outputs, src); err != nil {
		return nil, err
	}
	fn, name, groupName := outputs[c.Pipeline+cli.OutDispatcher], outputs[c.Pipeline+cli.OutSchedule], outputs[c.Pipeline+cli.OutScheduleGroup]
	if fn == "" || name == "" {
		return nil, fmt.Errorf("%s has no outputs %s%s and %s%s: the pipeline has no dispatcher, or its stack predates them (deploy it again)",
			src, c.Pipeline, cli.OutDispatcher, c.Pipeline, cli.OutSchedule)
	}
	q := url.Values{}
	if groupName != "" {
		q.Set("groupName", groupName)
	}
	_, body, err := cl.REST.Call(ctx, "scheduler", "GetSchedule", http.MethodGet, "/schedules/"+url.PathEscape(name)+"?"+q.Encode(), nil, nil)
	if err != nil {
		return nil, err
	}
	p := &pipelineSchedule{name: name, dispatcher: fn, rest: cl.REST}
	if err := json.Unmarshal(body, &p.schedule); err != nil {
		return nil, fmt.Errorf("scheduler GetSchedule %s: %w", name, err)
	}
	expr, ok := strings.CutPrefix(p.ScheduleExpression, "cron(")
	if !ok {
		return nil, fmt.Errorf("schedule %s runs on %q: only a cron schedule has occurrences to backfill", name, p.ScheduleExpression)
	}
	if p.cron, err = awscron.Parse(strings.TrimSuffix(expr, ")")); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", name, err)
	}
	if p.loc, err = time.LoadLocation(cmp.Or(p.ScheduleExpressionTimezone, "UTC")); err != nil {
		return nil, fmt.Errorf("schedule %s: time zone %q: %w", name, p.ScheduleExpressionTimezone, err)
	}
	if !strings.Contains(p.Target.Input, "<aws.scheduler.scheduled-time>") {
		return nil, fmt.Errorf("schedule %s: its input does not carry <aws.scheduler.scheduled-time>: the dispatcher would key the messages by the wall clock, and a backfill could run them twice", name)
	}
	return p, nil
}

// occurrences are the instants of cron in loc within [from, to), and the local times in
// it that occur twice (daylight saving ends), which a backfill leaves alone: Scheduler ran
// them once, at an instant it does not document.
func occurrences(cron *awscron.Cron, loc *time.Location, from, to time.Time) (occs []time.Time, ambiguous []string) {
	// The civil dates around [from, to), then the instants within it; a repeated local
	// time (fall back) is where the two choices differ.
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	dFrom, dTo := day(from.In(loc)).AddDate(0, 0, -1), day(to.In(loc)).AddDate(0, 0, 2)
	first := cron.Occurrences(loc, dFrom, dTo, awscron.FirstInstant)
	second := cron.Occurrences(loc, dFrom, dTo, awscron.SecondInstant)
	secondSet := map[int64]bool{}
	for _, t := range second {
		secondSet[t.Unix()] = true
	}
	for _, t := range first {
		if t.Before(from) || !t.Before(to) {
			continue
		}
		if !secondSet[t.Unix()] {
			ambiguous = append(ambiguous, t.In(loc).Format("2006-01-02 15:04 MST")+" ("+t.UTC().Format(time.RFC3339)+" or an hour later)")
			continue
		}
		occs = append(occs, t)
	}
	return occs, ambiguous
}

// dispatch invokes the dispatcher once per occurrence, at most rate a second, with the
// event Scheduler would have sent, and records each in s. It stops between invocations on
// Ctrl-C; the one under way runs to its end, so that s says whether it dispatched.
func dispatch(ctx context.Context, sch *pipelineSchedule, occs []time.Time, rate int, out io.Writer, s *Summary) error {
	execID := fmt.Sprintf("pipelinectl-backfill-%d", time.Now().UnixNano())
	interval := time.Second / time.Duration(rate)
	var errs []error
	for i, t := range occs {
		if ctx.Err() != nil {
			break
		}
		if i > 0 && !cli.Pause(ctx, interval) {
			break
		}
		event := strings.NewReplacer(
			"<aws.scheduler.scheduled-time>", t.UTC().Format(time.RFC3339),
			"<aws.scheduler.execution-id>", fmt.Sprintf("%s-%d", execID, i),
			"<aws.scheduler.attempt-number>", "1",
			"<aws.scheduler.schedule-arn>", sch.Target.Arn,
		).Replace(sch.Target.Input)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		hdr, resp, err := sch.rest.Call(cctx, "lambda", "Invoke", http.MethodPost, "/2015-03-31/functions/"+url.PathEscape(sch.dispatcher)+"/invocations",
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
		fmt.Fprintf(out, "dispatched   %s: %s\n", occ, cli.Truncate(strings.TrimSpace(string(resp)), 200))
	}
	return errors.Join(errs...)
}

func (s *Summary) finish(w cli.Streams, c *cli.Common, err error) error {
	if s.Done {
		s.Resume = ""
	}
	if c.Output == "json" {
		cli.WriteJSON(w.Out, s)
	} else if !s.DryRun {
		fmt.Fprintf(w.Out, "dispatched   %d of %d occurrences\n", len(s.Dispatched), len(s.Occurrences))
		if s.Done {
			fmt.Fprintln(w.Out, "done         every occurrence was dispatched (exit 0)")
		} else {
			fmt.Fprintf(w.Out, "NOT DONE     %s (exit %d)\nresume with  %s\n             (rerunning dispatches again what was dispatched: duplicates the consumer acknowledges)\n",
				s.Status, cli.ExitNotDone, s.Resume)
		}
	}
	if s.Done {
		return nil
	}
	why := s.Status
	if err != nil {
		why += ": " + err.Error()
	}
	return &cli.NotDone{Why: why}
}
