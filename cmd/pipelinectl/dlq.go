package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Limits of the dlq flags.
const (
	maxHold        = 30 * time.Second // the scan's visibility timeout, at most
	maxRate        = 500              // StartMessageMoveTask's MaxNumberOfMessagesPerSecond limit
	sampleBodyMax  = 256              // bytes of a sample's body shown
	redriveHold    = 2 * time.Minute  // visibility timeout of messages the receive path moves
	taskPoll       = time.Second
	defaultTaskMax = 15 * time.Minute
	// recordMargin is how long before a record can expire a redrive stops relying on it:
	// the redriven copy must reach the consumer while the record still answers. Half the
	// TTL for a TTL under 2h.
	recordMargin = time.Hour
)

// recordTTLFlag adds --record-ttl to a dlq command's flags.
func recordTTLFlag(fs *flag.FlagSet, c *common) {
	fs.DurationVar(&c.recordTTL, "record-ttl", 0, "the consumer's record TTL (default: the pipeline's RecordTTL output)")
}

// checkRecordTTL refuses a --record-ttl that cannot be a record TTL.
func checkRecordTTL(c *common) error {
	if c.recordTTL < 0 || (c.recordTTL > 0 && c.recordTTL < time.Second) {
		return usagef("--record-ttl %s: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 600h (at least 1s)", c.recordTTL)
	}
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

func dlqInspect(ctx context.Context, args []string, stdout io.Writer, connect connector) error {
	fs, c := newFlags("dlq inspect", dlqUsage, stdout)
	sample := fs.Int("sample", 1, "messages shown per group")
	max := fs.Int("max", defaultMaxScan, "messages scanned at most")
	hold := fs.Duration("hold", maxHold, "visibility timeout of the scan")
	recordTTLFlag(fs, c)
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
	if *sample < 0 {
		return usagef("--sample %d: use 0 or more", *sample)
	}
	if *max < 1 {
		return usagef("--max %d: use 1 or more", *max)
	}
	if *hold < 2*time.Second || *hold > maxHold {
		return usagef("--hold %s: use between 2s and %s", *hold, maxHold)
	}
	cl, t, q, err := openDLQ(ctx, c, connect)
	if err != nil {
		return err
	}
	start := time.Now()
	msgs, err := peek(ctx, cl.sqs, q.url, *max, *hold)
	held := time.Since(start)
	if err != nil {
		return err
	}

	kind := "standard"
	if q.fifo {
		kind = "FIFO"
	}
	fmt.Fprintf(stdout, "DLQ       %s (%s)\n", q.url, kind)
	if t.sourceURL != "" {
		fmt.Fprintf(stdout, "source    %s\n", t.sourceURL)
	}
	fmt.Fprintf(stdout, "messages  %d visible, %d in flight, %d delayed (SQS's approximate counts)\n", q.visible, q.inFlight, q.delayed)
	fmt.Fprintf(stdout, "scanned   %d in %s, all visible again", len(msgs), held.Round(10*time.Millisecond))
	switch {
	case len(msgs) >= *max:
		fmt.Fprintf(stdout, " (stopped at --max %d)", *max)
	case q.fifo && int64(len(msgs)) < q.visible:
		fmt.Fprint(stdout, " (FIFO: a receive hands out no message behind one in flight in its group)")
	}
	fmt.Fprintln(stdout)
	printRecordTTL(stdout, t, c.pipeline)
	if len(msgs) == 0 {
		return nil
	}
	now := time.Now()
	groups := byReason(msgs)
	var outlived []types.Message
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tCOUNT\tOLDEST\tREDRIVE")
	for _, g := range groups {
		old := 0
		for _, m := range g.msgs {
			if outlivesRecord(m, t.recordTTL, now) {
				old++
				outlived = append(outlived, m)
			}
		}
		what := "moves"
		switch {
		case g.reason != reasonRedrivePolicy:
			what = "stays (bad input; --include-invalid moves it)"
		case old == len(g.msgs):
			what = "stays (older than the record TTL; --include-expired moves it)"
		case old > 0:
			what = fmt.Sprintf("moves; %d stay: older than the record TTL (--include-expired moves them)", old)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s (%s ago)\t%s\n", g.reason, len(g.msgs), g.oldest.UTC().Format(time.RFC3339), now.Sub(g.oldest).Round(time.Second), what)
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
	}
	for _, g := range groups {
		for i, m := range g.msgs[:min(*sample, len(g.msgs))] {
			fmt.Fprintf(stdout, "\n%s, sample %d of %d\n", g.reason, i+1, len(g.msgs))
			printMessage(stdout, m)
		}
	}
	return nil
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

func dlqRedrive(ctx context.Context, args []string, stdout io.Writer, connect connector) error {
	fs, c := newFlags("dlq redrive", dlqUsage, stdout)
	yes := fs.Bool("yes", false, "move (default: dry run)")
	rate := fs.Int("rate", 0, "messages per second at most")
	includeInvalid := fs.Bool("include-invalid", false, "move bad input too")
	includeExpired := fs.Bool("include-expired", false, "move messages older than the record TTL too")
	recordTTLFlag(fs, c)
	to := fs.String("to", "", "destination queue URL")
	max := fs.Int("max", defaultMaxScan, "messages the dry run scans at most")
	wait := fs.Duration("wait", defaultTaskMax, "how long to wait for a move task")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq redrive", pos); err != nil {
		return err
	}
	if *rate < 0 || *rate > maxRate {
		return usagef("--rate %d: use 1 to %d messages per second, or leave it out", *rate, maxRate)
	}
	if *max < 1 {
		return usagef("--max %d: use 1 or more", *max)
	}
	if *wait <= 0 {
		return usagef("--wait %s: use a positive duration", *wait)
	}
	if err := checkRecordTTL(c); err != nil {
		return err
	}
	cl, t, dlq, err := openDLQ(ctx, c, connect)
	if err != nil {
		return err
	}
	destURL := or(*to, t.sourceURL)
	if destURL == "" {
		if len(dlq.sourceArns) != 1 {
			return usagef("no destination: the outputs name no source queue and the DLQ's redrive-allow policy names %d source queues (%s); give --to QUEUE_URL",
				len(dlq.sourceArns), or(dlq.redrivePermission, "none"))
		}
		if destURL, err = urlOfArn(ctx, cl.sqs, dlq.sourceArns[0]); err != nil {
			return err
		}
	}
	dest, err := getQueue(ctx, cl.sqs, destURL)
	if err != nil {
		return err
	}
	switch {
	case dest.arn == dlq.arn:
		return usagef("the destination %s is the DLQ itself", destURL)
	case dest.fifo != dlq.fifo:
		return usagef("the DLQ %s is %s but the destination %s is %s: redrive to a queue of the same type", dlq.url, queueKind(dlq.fifo), dest.url, queueKind(dest.fifo))
	}

	// The plan: scan, then let everything go again before anything moves.
	msgs, err := peek(ctx, cl.sqs, dlq.url, *max, maxHold)
	if err != nil {
		return err
	}
	now := time.Now()
	var moves, bad, old int
	var outlived []types.Message
	for _, m := range msgs {
		isOld := outlivesRecord(m, t.recordTTL, now)
		if isOld {
			outlived = append(outlived, m)
		}
		switch {
		case badInput(m) && !*includeInvalid:
			bad++
		case isOld && !*includeExpired:
			old++
		default:
			moves++
		}
	}
	stays := bad + old
	// A move task moves everything, unseen messages too: it may run only when nothing is
	// to stay, and the scan saw every message or nothing would be kept anyway.
	sawAll := len(msgs) < *max && int64(len(msgs)) >= dlq.visible
	keepsNothing := *includeInvalid && (*includeExpired || t.recordTTL == 0)
	useTask := stays == 0 && (sawAll || keepsNothing)
	method := "SQS message move task"
	if !useTask {
		method = "receive, send, delete (messages to leave behind)"
	} else if dlq.fifo {
		method = "SQS message move task (else receive, send, delete in group order)"
	}
	fmt.Fprintf(stdout, "DLQ          %s (%s): %d visible, %d in flight\n", dlq.url, queueKind(dlq.fifo), dlq.visible, dlq.inFlight)
	fmt.Fprintf(stdout, "destination  %s\n", dest.url)
	printRecordTTL(stdout, t, c.pipeline)
	fmt.Fprintf(stdout, "scanned      %d: %d to move, %d to leave (%d bad input, %d older than the record TTL)\n", len(msgs), moves, stays, bad, old)
	for _, g := range byReason(msgs) {
		if g.reason != reasonRedrivePolicy && !*includeInvalid {
			fmt.Fprintf(stdout, "  %-22s %d stay\n", g.reason, len(g.msgs))
			continue
		}
		old := 0
		for _, m := range g.msgs {
			if outlivesRecord(m, t.recordTTL, now) && !*includeExpired {
				old++
			}
		}
		switch {
		case old == 0:
			fmt.Fprintf(stdout, "  %-22s %d move\n", g.reason, len(g.msgs))
		case old == len(g.msgs):
			fmt.Fprintf(stdout, "  %-22s %d stay (older than the record TTL)\n", g.reason, old)
		default:
			fmt.Fprintf(stdout, "  %-22s %d move, %d stay (older than the record TTL)\n", g.reason, len(g.msgs)-old, old)
		}
	}
	for _, m := range outlived {
		verb := "stays"
		if *includeExpired {
			verb = "WARNING: moves (--include-expired); its effect runs again if it had completed"
		}
		fmt.Fprintf(stdout, "  older than the record TTL: %s first sent %s (%s ago): %s\n", aws.ToString(m.MessageId),
			firstSent(m).UTC().Format(time.RFC3339), now.Sub(firstSent(m)).Round(time.Second), verb)
	}
	if len(msgs) == 0 && dlq.visible == 0 {
		fmt.Fprintln(stdout, "the DLQ is empty: nothing to move")
		return nil
	}
	fmt.Fprintf(stdout, "method       %s\n", method)
	if !*yes {
		fmt.Fprintf(stdout, "Dry run: nothing moved. Run again with --yes to move them.\n")
		return nil
	}

	var moved int64
	var moveErr error
	if useTask {
		moved, moveErr = moveTask(ctx, cl.sqs, dlq, dest, *rate, *wait, stdout)
		if moveErr != nil && dlq.fifo && errors.Is(moveErr, errTaskUnsupported) {
			fmt.Fprintf(stdout, "move task not supported for this FIFO queue (%v): receive, send, delete in group order\n", errors.Unwrap(moveErr))
			moveErr = nil
			useTask = false
		}
	}
	if useTask && moveErr == nil && dlq.fifo {
		// A server may finish a FIFO move task without moving everything (ElasticMQ moves
		// nothing): what is left goes the receive way, after what the task moved.
		if rest, err := getQueue(ctx, cl.sqs, dlq.url); err == nil && rest.visible > 0 {
			fmt.Fprintf(stdout, "the move task left %d messages: receive, send, delete in group order\n", rest.visible)
			useTask = false
		}
	}
	var stayed, expired int
	if !useTask {
		r := &receiveMover{api: cl.sqs, dlq: dlq, dest: dest, includeInvalid: *includeInvalid, includeExpired: *includeExpired,
			recordTTL: t.recordTTL, rate: *rate, out: stdout}
		moveErr = r.run(ctx)
		moved, stayed, expired = moved+int64(r.moved), len(r.skipped), r.expired
	}
	after, err := getQueue(ctx, cl.sqs, dlq.url)
	if err != nil {
		return errors.Join(moveErr, err)
	}
	fmt.Fprintf(stdout, "moved %d; left in the DLQ: %d visible, %d in flight", moved, after.visible, after.inFlight)
	if stayed > 0 {
		fmt.Fprintf(stdout, " (%d bad input kept: --include-invalid moves them)", stayed)
	}
	if expired > 0 {
		fmt.Fprintf(stdout, " (%d older than the record TTL kept: --include-expired moves them, and runs their effects again if they had completed)", expired)
	}
	fmt.Fprintln(stdout)
	return moveErr
}

func queueKind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// or returns the first non-empty string.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errTaskUnsupported wraps the server's refusal of a FIFO move task.
var errTaskUnsupported = errors.New("move task unsupported")

// moveTask runs StartMessageMoveTask from dlq to dest and waits for it, printing progress.
func moveTask(ctx context.Context, api *sqs.Client, dlq, dest queueInfo, rate int, wait time.Duration, out io.Writer) (int64, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.arn), DestinationArn: aws.String(dest.arn)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	started, err := api.StartMessageMoveTask(ctx, in)
	if err != nil {
		if dlq.fifo {
			return 0, fmt.Errorf("%w: %w", errTaskUnsupported, err)
		}
		return 0, fmt.Errorf("start message move task: %w", err)
	}
	fmt.Fprintf(out, "move task started: %s\n", aws.ToString(started.TaskHandle))
	deadline := time.Now().Add(wait)
	last := int64(-1)
	for {
		list, err := api.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.arn), MaxResults: aws.Int32(1)})
		if err != nil {
			return max(last, 0), fmt.Errorf("move task %s: %w", aws.ToString(started.TaskHandle), err)
		}
		if len(list.Results) == 0 {
			return max(last, 0), fmt.Errorf("move task %s: ListMessageMoveTasks shows no task", aws.ToString(started.TaskHandle))
		}
		e := list.Results[0]
		status := aws.ToString(e.Status)
		if e.ApproximateNumberOfMessagesMoved != last || status != "RUNNING" {
			last = e.ApproximateNumberOfMessagesMoved
			of := ""
			if n := e.ApproximateNumberOfMessagesToMove; n != nil && *n >= last {
				of = fmt.Sprintf(" of ~%d", *n)
			}
			fmt.Fprintf(out, "move task %s: %d moved%s\n", status, last, of)
		}
		switch status {
		case "RUNNING", "CANCELLING":
		case "COMPLETED":
			return last, nil
		default:
			return last, fmt.Errorf("move task %s: %s", status, or(aws.ToString(e.FailureReason), "no reason given"))
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("move task %s still %s after --wait %s: it goes on; see aws sqs list-message-move-tasks --source-arn %s",
				aws.ToString(started.TaskHandle), status, wait, dlq.arn)
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("interrupted; the move task goes on: aws sqs list-message-move-tasks --source-arn %s", dlq.arn)
		case <-time.After(taskPoll):
		}
	}
}

// receiveMover moves messages one by one: receive, send to dest, delete only after the send
// succeeded. In a FIFO queue a receive hands out each group's messages in order, so sending
// them in the order received keeps the order; a group whose message stays (bad input, or a
// failed send) stays whole from that message on. A FIFO copy carries the original group id
// and a deduplication id derived from the message id, so a copy sent again after a failed
// delete is dropped by SQS within its 5-minute deduplication window.
type receiveMover struct {
	api            *sqs.Client
	dlq, dest      queueInfo
	includeInvalid bool
	includeExpired bool
	recordTTL      time.Duration // 0: unknown, ages not checked
	rate           int
	out            io.Writer

	moved   int
	skipped map[string]bool // bad input kept
	expired int             // messages older than the record TTL kept
	seenOld map[string]bool
	held    []types.Message
}

func (r *receiveMover) run(ctx context.Context) (err error) {
	r.skipped = map[string]bool{}
	r.seenOld = map[string]bool{}
	blocked := map[string]bool{} // FIFO groups that stay from a message on
	defer func() {
		err = errors.Join(err, makeVisible(ctx, r.api, r.dlq.url, r.held))
	}()
	var interval time.Duration
	if r.rate > 0 {
		interval = time.Second / time.Duration(r.rate)
	}
	next := time.Now()
	lastReport := time.Now()
	var errs []error
	for {
		msgs, err := receive(ctx, r.api, r.dlq.url, redriveHold)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if len(msgs) == 0 {
			return errors.Join(errs...)
		}
		for _, m := range msgs {
			id := aws.ToString(m.MessageId)
			g := group(m)
			if blocked[g] && r.dlq.fifo {
				r.held = append(r.held, m)
				continue
			}
			if badInput(m) && !r.includeInvalid {
				r.skipped[id] = true
				r.held = append(r.held, m)
				if r.dlq.fifo {
					blocked[g] = true
					fmt.Fprintf(r.out, "group %s stays from message %s on (%s, bad input)\n", g, id, reason(m))
				}
				continue
			}
			if outlivesRecord(m, r.recordTTL, time.Now()) {
				if !r.includeExpired {
					if !r.seenOld[id] {
						r.expired++
					}
					r.seenOld[id] = true
					r.held = append(r.held, m)
					if r.dlq.fifo {
						blocked[g] = true
						fmt.Fprintf(r.out, "group %s stays from message %s on (older than the record TTL)\n", g, id)
					}
					continue
				}
				fmt.Fprintf(r.out, "WARNING: moving message %s, first sent %s, older than the record TTL %s: if its effect completed, it runs again\n",
					id, firstSent(m).UTC().Format(time.RFC3339), r.recordTTL)
			}
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					r.held = append(r.held, m)
					return errors.Join(append(errs, ctx.Err())...)
				case <-time.After(wait):
				}
			}
			next = time.Now().Add(interval)
			if err := r.send(ctx, m); err != nil {
				errs = append(errs, err)
				r.held = append(r.held, m)
				if r.dlq.fifo {
					blocked[g] = true
					fmt.Fprintf(r.out, "group %s stays from message %s on: %v\n", g, id, err)
				}
				continue
			}
			if _, err := r.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.dlq.url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				errs = append(errs, fmt.Errorf("message %s was sent to %s but not deleted from the DLQ (it reappears there; a FIFO resend within 5 minutes is deduplicated, the consumer's idempotency covers the rest): %w", id, r.dest.url, err))
			}
			r.moved++
			if time.Since(lastReport) >= time.Second {
				lastReport = time.Now()
				fmt.Fprintf(r.out, "moved %d, %d staying\n", r.moved, len(r.skipped))
			}
		}
	}
}

func (r *receiveMover) send(ctx context.Context, m types.Message) error {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(r.dest.url), MessageBody: m.Body, MessageAttributes: withFirstSent(m)}
	if r.dest.fifo {
		in.MessageGroupId = aws.String(group(m))
		in.MessageDeduplicationId = aws.String(dedupID(aws.ToString(m.MessageId)))
	}
	if _, err := r.api.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send message %s to %s: %w", aws.ToString(m.MessageId), r.dest.url, err)
	}
	return nil
}

// dedupID is the FIFO deduplication id of a redriven message: "redrive-" and its message id,
// or the id's sha256 when that would not fit SQS's 128 characters.
func dedupID(messageID string) string {
	if len(messageID) <= 100 {
		return "redrive-" + messageID
	}
	sum := sha256.Sum256([]byte(messageID))
	return "redrive-" + hex.EncodeToString(sum[:])
}
