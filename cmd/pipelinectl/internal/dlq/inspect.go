package dlq

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// Limits of the dlq flags.
const (
	maxHold        = 30 * time.Second // the scan's visibility timeout, at most
	maxRate        = 500              // StartMessageMoveTask's MaxNumberOfMessagesPerSecond limit
	sampleBodyMax  = 256              // bytes of a sample's body shown
	taskPoll       = time.Second
	defaultTaskMax = 15 * time.Minute
	// recordMargin is how long before a record can expire a redrive stops relying on it:
	// the redriven copy must reach the consumer while the record still answers. Half the
	// TTL for a TTL under 2h.
	recordMargin = time.Hour
)

// outRecordTTL is the output naming a pipeline's record TTL: <Pipeline>RecordTTL.
const outRecordTTL = contract.OutRecordTTL

// recordTTL is --record-ttl: the consumer's record TTL, when given.
type recordTTL struct {
	d   time.Duration
	set bool
}

// recordTTLFlag adds --record-ttl to a dlq command's flags.
func recordTTLFlag(fs *flag.FlagSet) *recordTTL {
	r := &recordTTL{}
	fs.Var(days{&r.d, &r.set}, "record-ttl", "the consumer's record TTL (default: the pipeline's RecordTTL output)")
	return r
}

// checkRecordTTL refuses a --record-ttl that cannot be a record TTL, zero included: leaving
// the flag out is how to read the pipeline's output instead.
func checkRecordTTL(r *recordTTL) error {
	if r.set && r.d < time.Second {
		return cli.Usagef("--record-ttl %s: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (at least 1s), or leave it out to read the pipeline's RecordTTL output", r.d)
	}
	return nil
}

// days is a flag.Value for a duration as the docs and runbooks write one: in days (25d,
// 1.5d) or in Go's units (600h, 90m).
type days struct {
	d   *time.Duration
	set *bool
}

func (v days) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v days) Set(s string) error {
	d, err := time.ParseDuration(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var f float64
		if f, err = strconv.ParseFloat(n, 64); err == nil {
			d = time.Duration(f * float64(24*time.Hour))
		}
	}
	if err != nil {
		return errors.New("want a duration such as 25d or 600h")
	}
	*v.d, *v.set = d, true
	return nil
}

// outlivesRecord reports a message whose idempotency record may have expired, or may expire
// before a redriven copy is consumed. A record is written no earlier than the message was
// first sent, so it lives at least until first-sent + TTL: a message younger than the TTL
// less recordMargin still finds its record (a duplicate is acknowledged, not run again).
// An unknown TTL (0) checks nothing.
func outlivesRecord(m types.Message, ttl time.Duration, now time.Time) bool {
	return ttl > 0 && !now.Before(FirstSent(m).Add(safeAge(ttl)))
}

// safeAge is the age up to which a message still finds its record: the TTL less the margin.
func safeAge(ttl time.Duration) time.Duration { return ttl - min(recordMargin, ttl/2) }

// printRecordTTL says which TTL the ages are checked against, or loudly that they are not.
func printRecordTTL(w io.Writer, t target, pipeline string) {
	if t.RecordTTL > 0 {
		fmt.Fprintf(w, "record TTL   %s (%s): a message first sent more than %s ago may have outlived its record\n",
			t.RecordTTL, t.TTLFrom, safeAge(t.RecordTTL))
		return
	}
	fmt.Fprintf(w, "record TTL   UNKNOWN (no output %s%s; give --record-ttl, the consumer's IDEMPOTENCY_RECORD_TTL): message ages are NOT checked, "+
		"and a message whose record expired runs its effect again when redriven\n", pipeline, outRecordTTL)
}

// Inspect is `pipelinectl dlq inspect ARGS`.
func Inspect(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	o, c, err := parseInspect(args, w)
	if err != nil {
		return err
	}
	cl, t, q, err := openDLQ(ctx, c, o.ttl, connect)
	if err != nil {
		return err
	}
	start := time.Now()
	lost := &lostReceives{}
	msgs, err := Peek(withLostReceives(ctx, lost), cl.SQS, q.URL, o.maxScan, o.hold)
	held := time.Since(start)
	interrupted := ctx.Err() != nil
	// A receive that failed for good ends the scan as Ctrl-C does: what was scanned is
	// reported, then what stays hidden and until when (notDone).
	failed := scanFailure(err)
	if interrupted {
		failed = nil
	}
	var hidden *hiddenError
	errors.As(err, &hidden)
	stdout := w.Text(c)

	kind := queueKind(q.FIFO)
	now := time.Now()
	p := &planner{fifo: q.FIFO, includeInvalid: o.includeInvalid, includeExpired: o.includeExpired, ttl: t.RecordTTL}
	decisions := p.judgeAll(msgs, now)
	rep := InspectReport{DLQ: q.URL, Kind: kind, Source: t.SourceURL, Visible: q.Visible, InFlight: q.InFlight, Delayed: q.Delayed,
		Scanned: len(msgs), StoppedAtMax: len(msgs) >= o.maxScan, Interrupted: interrupted, NotSeen: max(0, int(q.Visible)-len(msgs))}
	if t.RecordTTL > 0 {
		rep.RecordTTL = t.RecordTTL.String()
	}
	fmt.Fprintf(stdout, "DLQ       %s (%s)\n", q.URL, kind)
	if t.SourceURL != "" {
		fmt.Fprintf(stdout, "source    %s\n", t.SourceURL)
	}
	fmt.Fprintf(stdout, "messages  %d visible, %d in flight, %d delayed (SQS's approximate counts)\n", q.Visible, q.InFlight, q.Delayed)
	printScanned(stdout, len(msgs), held, hidden, scanStop(interrupted, failed != nil, len(msgs), o.maxScan, q))
	if q.InFlight > 0 {
		fmt.Fprintf(stdout, "in flight %d before the scan: another reader holds them (an inspect or a redrive), or a receive whose response was lost; "+
			"they reappear when their visibility timeout ends\n", q.InFlight)
	}
	printRecordTTL(stdout, t, c.Pipeline)
	rep.addPlan(decisions, p, now, t.RecordTTL)
	if len(msgs) > 0 {
		printInspect(stdout, decisions, p, t, q, now, o.sample)
	}
	if c.Output == "json" {
		cli.WriteJSON(w.Out, rep)
	}
	if interrupted || failed != nil || hidden != nil {
		return inspectNotDone(len(msgs), interrupted, failed, hidden, lost)
	}
	return nil
}

// addPlan adds the plan to rep: what redrive would do with each message, and the FIFO groups
// it would leave blocked.
func (rep *InspectReport) addPlan(decisions []decision, p *planner, now time.Time, ttl time.Duration) {
	for _, d := range decisions {
		rep.Messages = append(rep.Messages, messageReport(d, now, ttl))
	}
	for _, b := range p.blockedGroups() {
		rep.BlockedGroups = append(rep.BlockedGroups, blockedReport{Group: b.group, From: b.blocker, Why: b.why, Behind: b.behind})
	}
}

// inspectOptions are dlq inspect's flags.
type inspectOptions struct {
	sample, maxScan                int
	hold                           time.Duration
	includeInvalid, includeExpired bool
	ttl                            *recordTTL
}

// parseInspect reads and checks dlq inspect's flags.
func parseInspect(args []string, w cli.Streams) (inspectOptions, *cli.Common, error) {
	var o inspectOptions
	fs, c := cli.NewFlags("dlq inspect", InspectUsage, w.Out)
	fs.IntVar(&o.sample, "sample", 1, "messages shown per group")
	fs.IntVar(&o.maxScan, "max", defaultMaxScan, "messages scanned at most")
	fs.DurationVar(&o.hold, "hold", maxHold, "visibility timeout of the scan")
	fs.BoolVar(&o.includeInvalid, "include-invalid", false, "plan as redrive --include-invalid would")
	fs.BoolVar(&o.includeExpired, "include-expired", false, "plan as redrive --include-expired would")
	o.ttl = recordTTLFlag(fs)
	cli.OutputFlag(fs, c)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return o, nil, err
	}
	if err := checkRecordTTL(o.ttl); err != nil {
		return o, nil, err
	}
	if err := c.CheckOutput(); err != nil {
		return o, nil, err
	}
	switch {
	case o.sample < 0:
		return o, nil, cli.Usagef("--sample %d: use 0 or more", o.sample)
	case o.maxScan < 1:
		return o, nil, cli.Usagef("--max %d: use 1 or more", o.maxScan)
	case o.hold < 2*time.Second || o.hold > maxHold:
		return o, nil, cli.Usagef("--hold %s: use between 2s and %s", o.hold, maxHold)
	}
	return o, c, nil
}

// scanStop is why a scan of n messages stopped where it did, for the scanned line; "" when
// it saw every message.
func scanStop(interrupted, failed bool, n, maxScan int, q cli.QueueInfo) string {
	switch {
	case interrupted:
		return " (interrupted)"
	case failed:
		return " (a receive failed)"
	case n >= maxScan:
		return fmt.Sprintf(" (stopped at --max %d)", maxScan)
	case q.FIFO && int64(n) < q.Visible:
		return " (FIFO: a receive hands out no message behind one in flight in its group)"
	}
	return ""
}

// printScanned is inspect's scanned line: how many, how long, whether they are all visible
// again, and why the scan stopped where it did (stopped, "" when it saw every message).
func printScanned(stdout io.Writer, n int, held time.Duration, hidden *hiddenError, stopped string) {
	visible := "all visible again"
	if hidden != nil {
		visible = fmt.Sprintf("%d of them still hidden", hidden.count())
	}
	fmt.Fprintf(stdout, "scanned   %d in %s, %s%s\n", n, held.Round(10*time.Millisecond), visible, stopped)
}

// inspectNotDone says how a scan ended before its end (Ctrl-C, or failed, a receive that
// failed for good) or with messages it could not give back: how many it scanned, what stays
// hidden and until when, and when to inspect again.
func inspectNotDone(scanned int, interrupted bool, failed error, hidden *hiddenError, lost *lostReceives) error {
	why := fmt.Sprintf("scanned %d messages", scanned) // and could not give some back
	switch {
	case interrupted:
		why = fmt.Sprintf("interrupted after scanning %d messages", scanned)
	case failed != nil:
		why = fmt.Sprintf("a receive failed after scanning %d messages: %s", scanned, cli.InWords(failed))
	}
	if hidden == nil {
		why += "; all of them are visible again"
	} else {
		why += "; " + hidden.Error()
	}
	lost.mu.Lock()
	defer lost.mu.Unlock()
	if lost.n > 0 {
		why += fmt.Sprintf("; %d %s no whole answer, each may hide up to 10 messages until %s: inspect again after that",
			lost.n, map[bool]string{true: "receive got", false: "receives got"}[lost.n == 1], clock(lost.until))
	}
	return &cli.NotDone{Why: why}
}

// printInspect prints inspect's table by reason, the messages older than the record TTL,
// the FIFO groups and the samples.
func printInspect(stdout io.Writer, decisions []decision, p *planner, t target, q cli.QueueInfo, now time.Time, sample int) {
	var msgs []types.Message
	for _, d := range decisions {
		msgs = append(msgs, d.m)
	}
	groups := verdictsByReason(decisions)
	var outlived []types.Message
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tCOUNT\tOLDEST\tREDRIVE")
	for _, g := range groups {
		for _, m := range g.msgs {
			if outlivesRecord(m, t.RecordTTL, now) {
				outlived = append(outlived, m)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s (%s ago)\t%s\n", g.reason, len(g.msgs), g.oldest.UTC().Format(time.RFC3339), now.Sub(g.oldest).Round(time.Second), g.redrive())
	}
	tw.Flush()
	if len(outlived) > 0 {
		fmt.Fprintf(stdout, "\nOlder than the record TTL %s (first sent more than %s ago), %d: if a message's effect completed before it was dead-lettered, "+
			"its record may have expired and a redrive runs the effect again:\n", t.RecordTTL, safeAge(t.RecordTTL), len(outlived))
		for _, m := range outlived {
			fmt.Fprintf(stdout, "  %s  first sent %s (%s ago)\n", aws.ToString(m.MessageId), FirstSent(m).UTC().Format(time.RFC3339), now.Sub(FirstSent(m)).Round(time.Second))
		}
	}
	if q.FIFO {
		printFIFOGroups(stdout, msgs, p)
	}
	for _, g := range groups {
		for i, m := range g.msgs[:min(sample, len(g.msgs))] {
			fmt.Fprintf(stdout, "\n%s, sample %d of %d\n", g.reason, i+1, len(g.msgs))
			printMessage(stdout, m)
		}
	}
}

// redrive is what a redrive does with g's messages, for inspect's REDRIVE column.
func (g reasonVerdicts) redrive() string {
	n := g.n
	var parts []string
	switch {
	case n[vBad] == len(g.msgs):
		parts = append(parts, "stays (bad input; --include-invalid moves it)")
	case n[vExpired] == len(g.msgs):
		parts = append(parts, "stays (older than the record TTL; --include-expired moves it)")
	case n[vMove] == len(g.msgs):
		parts = append(parts, "moves")
	default:
		if n[vMove] > 0 {
			parts = append(parts, fmt.Sprintf("%d move", n[vMove]))
		}
		if n[vBad] > 0 {
			parts = append(parts, fmt.Sprintf("%d stay: bad input (--include-invalid moves them)", n[vBad]))
		}
		if n[vExpired] > 0 {
			parts = append(parts, fmt.Sprintf("%d stay: older than the record TTL (--include-expired moves them)", n[vExpired]))
		}
	}
	if n[vBehind] > 0 {
		if n[vBehind] == len(g.msgs) {
			parts = []string{"stays"}
		}
		parts = append(parts, fmt.Sprintf("%d stay: behind a message that stays in their FIFO group", n[vBehind]))
	}
	return strings.Join(parts, "; ")
}

// printFIFOGroups names the FIFO groups scanned, with how many messages each, and the groups
// a redrive would leave blocked from a message on.
func printFIFOGroups(stdout io.Writer, msgs []types.Message, p *planner) {
	counts := map[string]int{}
	for _, m := range msgs {
		counts[group(m)]++
	}
	var parts []string
	for _, g := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", g, counts[g]))
	}
	fmt.Fprintf(stdout, "\nFIFO groups scanned: %s\n", strings.Join(parts, ", "))
	for _, b := range p.blockedGroups() {
		fmt.Fprintf(stdout, "FIFO group %s stays from message %s on (%s): %d scanned behind it stay too, and any not scanned\n", b.group, b.blocker, b.why, b.behind)
	}
}

// printMessage shows a message's id, group, times, attributes and (truncated) body.
func printMessage(w io.Writer, m types.Message) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  id\t%s\n", aws.ToString(m.MessageId))
	if g := group(m); g != "" {
		fmt.Fprintf(tw, "  group\t%s\n", g)
	}
	fmt.Fprintf(tw, "  sent\t%s\n", Sent(m).UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(tw, "  receives\t%s\n", sysAttr(m, types.MessageSystemAttributeNameApproximateReceiveCount))
	if src := sysAttr(m, types.MessageSystemAttributeNameDeadLetterQueueSourceArn); src != "" {
		fmt.Fprintf(tw, "  source\t%s\n", src)
	}
	for _, name := range slices.Sorted(maps.Keys(m.MessageAttributes)) {
		a := m.MessageAttributes[name]
		v := aws.ToString(a.StringValue)
		if a.BinaryValue != nil {
			v = fmt.Sprintf("(%d bytes)", len(a.BinaryValue))
		}
		fmt.Fprintf(tw, "  attr %s\t%s\n", name, v)
	}
	body := aws.ToString(m.Body)
	if len(body) > sampleBodyMax {
		cut := strings.ToValidUTF8(body[:sampleBodyMax], "")
		body = fmt.Sprintf("%s... (%d bytes in all)", cut, len(body))
	} else if !utf8.ValidString(body) {
		body = fmt.Sprintf("%q", body)
	}
	fmt.Fprintf(tw, "  body\t%s\n", body)
	tw.Flush()
}

// openDLQ connects and finds the dead-letter queue the flags name.
func openDLQ(ctx context.Context, c *cli.Common, ttl *recordTTL, connect cli.Connector) (*cli.Clients, target, cli.QueueInfo, error) {
	cl, err := connect(ctx, c)
	if err != nil {
		return nil, target{}, cli.QueueInfo{}, err
	}
	t, err := resolveTarget(ctx, c, cl, ttl)
	if err != nil {
		return nil, target{}, cli.QueueInfo{}, err
	}
	q, err := cli.GetQueue(ctx, cl.SQS, t.URL)
	return cl, t, q, err
}

// queueKind is "FIFO" or "standard", as the summaries say it.
func queueKind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// target is the dead-letter queue a dlq command works on.
type target struct {
	URL       string
	SourceURL string // the pipeline's queue, "" when unknown
	// RecordTTL is how long the consumer keeps completed records (--record-ttl, else the
	// pipeline's RecordTTL output); 0 when unknown. TTLFrom says where it came from.
	RecordTTL time.Duration
	TTLFrom   string
}

// resolveTarget finds the dead-letter queue the flags name (--queue-url, else the
// pipeline's output), and its pipeline's record TTL (--record-ttl, else the output).
func resolveTarget(ctx context.Context, c *cli.Common, cl *cli.Clients, ttl *recordTTL) (target, error) {
	outputs, from, err := c.StackOutputs(ctx, cl)
	if err != nil {
		return target{}, err
	}
	var t target
	switch {
	case c.QueueURL() != "":
		t.URL = c.QueueURL()
		if outputs != nil && c.Pipeline != "" {
			t.SourceURL = outputs[c.Pipeline+cli.OutQueueURL]
		}
	case outputs != nil:
		if t.URL, err = c.PipelineDLQ(outputs, from); err != nil {
			return target{}, err
		}
		// Without it, redrive falls back to the DLQ's redrive-allow policy (or --to).
		t.SourceURL = outputs[c.Pipeline+cli.OutQueueURL]
	}
	if t.URL == "" {
		return target{}, cli.Usagef("which dead-letter queue? Give --stack or --outputs with --pipeline, or --queue-url")
	}
	switch v, ok := outputs[c.Pipeline+outRecordTTL]; {
	case ttl.d > 0:
		t.RecordTTL, t.TTLFrom = ttl.d, "--record-ttl"
	case ok && c.Pipeline != "":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return target{}, fmt.Errorf("%s: output %s%s is %q, not a duration; give --record-ttl", from, c.Pipeline, outRecordTTL, v)
		}
		t.RecordTTL, t.TTLFrom = d, fmt.Sprintf("output %s%s of %s", c.Pipeline, outRecordTTL, from)
	}
	return t, nil
}
