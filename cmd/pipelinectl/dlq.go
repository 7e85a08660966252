package main

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

// recordTTLFlag adds --record-ttl to a dlq command's flags.
func recordTTLFlag(fs *flag.FlagSet, c *common) {
	fs.Var(days{&c.recordTTL, &c.recordTTLSet}, "record-ttl", "the consumer's record TTL (default: the pipeline's RecordTTL output)")
}

// checkRecordTTL refuses a --record-ttl that cannot be a record TTL, zero included: leaving
// the flag out is how to read the pipeline's output instead.
func checkRecordTTL(c *common) error {
	if c.recordTTLSet && c.recordTTL < time.Second {
		return usagef("--record-ttl %s: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (at least 1s), or leave it out to read the pipeline's RecordTTL output", c.recordTTL)
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

// wholeNumber is a flag.Value for a whole number of something ("messages a second").
type wholeNumber struct {
	n    *int
	what string
}

func (c wholeNumber) String() string {
	if c.n == nil {
		return ""
	}
	return strconv.Itoa(*c.n)
}

func (c wholeNumber) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number of %s, e.g. 50", c.what)
	}
	*c.n = n
	return nil
}

// outlivesRecord reports a message whose idempotency record may have expired, or may expire
// before a redriven copy is consumed. A record is written no earlier than the message was
// first sent, so it lives at least until first-sent + TTL: a message younger than the TTL
// less recordMargin still finds its record (a duplicate is acknowledged, not run again).
// An unknown TTL (0) checks nothing.
func outlivesRecord(m types.Message, ttl time.Duration, now time.Time) bool {
	return ttl > 0 && !now.Before(firstSent(m).Add(safeAge(ttl)))
}

// safeAge is the age up to which a message still finds its record: the TTL less the margin.
func safeAge(ttl time.Duration) time.Duration { return ttl - min(recordMargin, ttl/2) }

// printRecordTTL says which TTL the ages are checked against, or loudly that they are not.
func printRecordTTL(w io.Writer, t dlqTarget, pipeline string) {
	if t.recordTTL > 0 {
		fmt.Fprintf(w, "record TTL   %s (%s): a message first sent more than %s ago may have outlived its record\n",
			t.recordTTL, t.ttlFrom, safeAge(t.recordTTL))
		return
	}
	fmt.Fprintf(w, "record TTL   UNKNOWN (no output %s%s; give --record-ttl, the consumer's IDEMPOTENCY_RECORD_TTL): message ages are NOT checked, "+
		"and a message whose record expired runs its effect again when redriven\n", pipeline, outRecordTTL)
}

func dlqInspect(ctx context.Context, args []string, w streams, connect connector) error {
	fs, c := newFlags("dlq inspect", dlqUsage, w.out)
	sample := fs.Int("sample", 1, "messages shown per group")
	maxScan := fs.Int("max", defaultMaxScan, "messages scanned at most")
	hold := fs.Duration("hold", maxHold, "visibility timeout of the scan")
	includeInvalid := fs.Bool("include-invalid", false, "plan as redrive --include-invalid would")
	includeExpired := fs.Bool("include-expired", false, "plan as redrive --include-expired would")
	recordTTLFlag(fs, c)
	outputFlag(fs, c)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq inspect", pos); err != nil {
		return err
	}
	if err := checkRecordTTL(c); err != nil {
		return err
	}
	if err := c.checkOutput(); err != nil {
		return err
	}
	if *sample < 0 {
		return usagef("--sample %d: use 0 or more", *sample)
	}
	if *maxScan < 1 {
		return usagef("--max %d: use 1 or more", *maxScan)
	}
	if *hold < 2*time.Second || *hold > maxHold {
		return usagef("--hold %s: use between 2s and %s", *hold, maxHold)
	}
	cl, t, q, err := openDLQ(ctx, c, connect)
	if err != nil {
		return err
	}
	start := time.Now()
	msgs, err := peek(ctx, cl.sqs, q.url, *maxScan, *hold)
	held := time.Since(start)
	interrupted := ctx.Err() != nil
	if err != nil && !interrupted {
		return err
	}
	stdout := w.text(c)

	kind := "standard"
	if q.fifo {
		kind = "FIFO"
	}
	now := time.Now()
	p := &planner{fifo: q.fifo, includeInvalid: *includeInvalid, includeExpired: *includeExpired, ttl: t.recordTTL}
	decisions := p.judgeAll(msgs, now)
	rep := inspectReport{DLQ: q.url, Kind: kind, Source: t.sourceURL, Visible: q.visible, InFlight: q.inFlight, Delayed: q.delayed,
		Scanned: len(msgs), StoppedAtMax: len(msgs) >= *maxScan, Interrupted: interrupted, NotSeen: max(0, int(q.visible)-len(msgs))}
	if t.recordTTL > 0 {
		rep.RecordTTL = t.recordTTL.String()
	}
	fmt.Fprintf(stdout, "DLQ       %s (%s)\n", q.url, kind)
	if t.sourceURL != "" {
		fmt.Fprintf(stdout, "source    %s\n", t.sourceURL)
	}
	fmt.Fprintf(stdout, "messages  %d visible, %d in flight, %d delayed (SQS's approximate counts)\n", q.visible, q.inFlight, q.delayed)
	fmt.Fprintf(stdout, "scanned   %d in %s, all visible again", len(msgs), held.Round(10*time.Millisecond))
	switch {
	case interrupted:
		fmt.Fprint(stdout, " (interrupted)")
	case len(msgs) >= *maxScan:
		fmt.Fprintf(stdout, " (stopped at --max %d)", *maxScan)
	case q.fifo && int64(len(msgs)) < q.visible:
		fmt.Fprint(stdout, " (FIFO: a receive hands out no message behind one in flight in its group)")
	}
	fmt.Fprintln(stdout)
	if q.inFlight > 0 {
		fmt.Fprintf(stdout, "in flight %d before the scan: another reader holds them (an inspect or a redrive), or a receive whose response was lost; "+
			"they reappear when their visibility timeout ends\n", q.inFlight)
	}
	printRecordTTL(stdout, t, c.pipeline)
	for _, d := range decisions {
		rep.Messages = append(rep.Messages, messageReport(d, now, t.recordTTL))
	}
	for _, b := range p.blockedGroups() {
		rep.BlockedGroups = append(rep.BlockedGroups, blockedReport{Group: b.group, From: b.blocker, Why: b.why, Behind: b.behind})
	}
	if len(msgs) > 0 {
		printInspect(stdout, decisions, p, t, q, now, *sample)
	}
	if c.output == "json" {
		writeJSON(w.out, rep)
	}
	if interrupted {
		return &notDone{why: fmt.Sprintf("interrupted after scanning %d messages; all of them are visible again", len(msgs))}
	}
	return nil
}

// printInspect prints inspect's table by reason, the messages older than the record TTL,
// the FIFO groups and the samples.
func printInspect(stdout io.Writer, decisions []decision, p *planner, t dlqTarget, q queueInfo, now time.Time, sample int) {
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
		n := g.n
		for _, m := range g.msgs {
			if outlivesRecord(m, t.recordTTL, now) {
				outlived = append(outlived, m)
			}
		}
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
		fmt.Fprintf(tw, "%s\t%d\t%s (%s ago)\t%s\n", g.reason, len(g.msgs), g.oldest.UTC().Format(time.RFC3339), now.Sub(g.oldest).Round(time.Second), strings.Join(parts, "; "))
	}
	tw.Flush()
	if len(outlived) > 0 {
		fmt.Fprintf(stdout, "\nOlder than the record TTL %s (first sent more than %s ago), %d: if a message's effect completed before it was dead-lettered, "+
			"its record may have expired and a redrive runs the effect again:\n", t.recordTTL, safeAge(t.recordTTL), len(outlived))
		for _, m := range outlived {
			fmt.Fprintf(stdout, "  %s  first sent %s (%s ago)\n", aws.ToString(m.MessageId), firstSent(m).UTC().Format(time.RFC3339), now.Sub(firstSent(m)).Round(time.Second))
		}
	}
	if q.fifo {
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
	for _, g := range groups {
		for i, m := range g.msgs[:min(sample, len(g.msgs))] {
			fmt.Fprintf(stdout, "\n%s, sample %d of %d\n", g.reason, i+1, len(g.msgs))
			printMessage(stdout, m)
		}
	}
}

// printMessage shows a message's id, group, times, attributes and (truncated) body.
func printMessage(w io.Writer, m types.Message) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  id\t%s\n", aws.ToString(m.MessageId))
	if g := group(m); g != "" {
		fmt.Fprintf(tw, "  group\t%s\n", g)
	}
	fmt.Fprintf(tw, "  sent\t%s\n", sent(m).UTC().Format(time.RFC3339Nano))
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
func openDLQ(ctx context.Context, c *common, connect connector) (*clients, dlqTarget, queueInfo, error) {
	cl, err := connect(ctx, c)
	if err != nil {
		return nil, dlqTarget{}, queueInfo{}, err
	}
	t, err := c.dlq(ctx, cl)
	if err != nil {
		return nil, dlqTarget{}, queueInfo{}, err
	}
	q, err := getQueue(ctx, cl.sqs, t.dlqURL)
	return cl, t, q, err
}

func noArgs(cmd string, pos []string) error {
	if len(pos) > 0 {
		return usagef("%s takes no arguments, got %q", cmd, pos)
	}
	return nil
}

func queueKind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}
