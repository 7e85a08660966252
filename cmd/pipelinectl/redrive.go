package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Timings of a redrive.
const (
	// callTimeout bounds one SQS call that runs to its end once started, also after Ctrl-C:
	// a send or a receive cut off half way leaves an outcome nobody knows.
	callTimeout = 20 * time.Second
	// settleMargin is how long beyond redriveHold a run waits for hidden messages: SQS's
	// counts are approximate and lag.
	settleMargin = 15 * time.Second
	// maxOutage is how long receives may keep failing before the run stops, not done.
	maxOutage = 2 * time.Minute
	// sendAttempts is how often one message's send is tried; the SDK's own retries are off
	// for sends, so that each attempt whose outcome is unknown is counted.
	sendAttempts = 4
	// fifoDedupWindow is SQS's deduplication interval for FIFO queues.
	fifoDedupWindow = 5 * time.Minute
	// giveBackBudget bounds how long a run's end spends giving back what it holds when the
	// calls fail: what is not given back by then reappears when its hold runs out.
	giveBackBudget = 30 * time.Second
)

// redriveHold is the visibility timeout of what the receive path holds: how long a message
// received by a call whose response was lost stays hidden, and so how long a run waits for
// such messages before it says they are hidden.
const redriveHold = 30 * time.Second

// countWait is how long a redrive's summary retries reading what is left in the DLQ when
// the count fails (the network): a count it prints is read after the run's last change, or
// it says unknown, and why.
const countWait = 30 * time.Second

// timings are shorter waits for a test (interrupt_test.go), carried in the context under
// timingsKey: a run with a lost receive then waits seconds for what it hid, a network cut
// ends a run in seconds. The command line sets none; a zero field keeps its constant.
type timings struct{ hold, outage, count time.Duration }

type timingsKey struct{}

// timing is the test's override of def from the context, or def.
func timing(ctx context.Context, field func(timings) time.Duration, def time.Duration) time.Duration {
	if t, ok := ctx.Value(timingsKey{}).(timings); ok && field(t) > 0 {
		return field(t)
	}
	return def
}

// settled returns a context for one call that runs to its end even when ctx is cancelled.
func settled(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
}

// oneAttempt turns the SDK's retries off for one call, whose outcome the caller must know.
func oneAttempt(o *sqs.Options) { o.RetryMaxAttempts = 1 }

// pause waits d or until ctx ends; it reports whether the whole d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func dlqRedrive(ctx context.Context, args []string, w streams, connect connector) error {
	fs, c := newFlags("dlq redrive", dlqUsage, w.out)
	yes := fs.Bool("yes", false, "move (default: dry run)")
	rate := new(int)
	fs.Var(wholeNumber{rate, "messages a second"}, "rate", "messages per second at most")
	includeInvalid := fs.Bool("include-invalid", false, "move bad input too")
	includeExpired := fs.Bool("include-expired", false, "move messages older than the record TTL too")
	recordTTLFlag(fs, c)
	to := fs.String("to", "", "destination queue (URL, ARN or name)")
	maxScan := fs.Int("max", defaultMaxScan, "messages the plan scans at most")
	wait := fs.Duration("wait", defaultTaskMax, "how long to wait for a move task")
	journalPath := fs.String("journal", "", "the redrive journal file")
	outputFlag(fs, c)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs("dlq redrive", pos); err != nil {
		return err
	}
	if isSet(fs, "rate") && (*rate < 1 || *rate > maxRate) {
		return usagef("--rate %d: use 1 to %d messages per second, or leave it out for no limit", *rate, maxRate)
	}
	if *maxScan < 1 {
		return usagef("--max %d: use 1 or more", *maxScan)
	}
	if *wait <= 0 {
		return usagef("--wait %s: use a positive duration", *wait)
	}
	if err := checkRecordTTL(c); err != nil {
		return err
	}
	if err := c.checkOutput(); err != nil {
		return err
	}
	out := w.text(c)
	lost := &lostReceives{}
	ctx = withLostReceives(ctx, lost)
	cl, t, dlq, err := openDLQ(ctx, c, connect)
	if err != nil {
		return err
	}
	dest, err := destination(ctx, cl.sqs, t, dlq, *to)
	if err != nil {
		return err
	}
	s := &redriveSummary{DLQ: dlq.url, Destination: dest.url, DryRun: !*yes, Resume: resumeCommand(w.argv, *yes), lost: lost}

	// A move task from an earlier run (interrupted, or past its --wait) is waited for first:
	// SQS runs one per queue, and what it moves is not to be planned again.
	if *yes {
		if task := runningTask(ctx, cl.sqs, dlq.arn); task != nil {
			fmt.Fprintf(out, "a move task from %s to %s is already running (started %s, probably by an earlier run): waiting for it\n",
				dlq.url, aws.ToString(task.DestinationArn), time.UnixMilli(task.StartedTimestamp).UTC().Format(time.RFC3339))
			moved, err := followTask(ctx, cl.sqs, dlq, aws.ToString(task.TaskHandle), *wait, out)
			s.Moved += moved
			if err != nil {
				return s.finish(ctx, cl.sqs, dlq, c, w, err)
			}
			if dlq, err = getQueue(ctx, cl.sqs, dlq.url); err != nil {
				return err
			}
		}
	}

	// The plan: scan, then let everything go again before anything moves.
	msgs, err := peek(ctx, cl.sqs, dlq.url, *maxScan, maxHold)
	if err != nil {
		return err
	}
	now := time.Now()
	// The plan's and the move's planners decide by the same rules, each from a clean state.
	newPlanner := func() *planner {
		return &planner{fifo: dlq.fifo, includeInvalid: *includeInvalid, includeExpired: *includeExpired, ttl: t.recordTTL}
	}
	p := newPlanner()
	decisions := p.judgeAll(msgs, now)
	var moves, bad, old, behind int
	for _, d := range decisions {
		switch d.v {
		case vMove:
			moves++
		case vBad:
			bad++
		case vExpired:
			old++
		case vBehind:
			behind++
		}
	}
	stays := bad + old + behind
	unseen := max(0, int(dlq.visible)-len(msgs))
	// A move task moves everything, unseen messages too: it may run only when nothing is
	// to stay, and the scan saw every message or nothing would be kept anyway.
	sawAll := len(msgs) < *maxScan && unseen == 0
	keepsNothing := *includeInvalid && (*includeExpired || t.recordTTL == 0)
	useTask := stays == 0 && (sawAll || keepsNothing)
	s.Method = "SQS message move task"
	switch {
	case !useTask && stays > 0:
		s.Method = "receive, send, delete (messages to leave behind)"
	case !useTask && len(msgs) >= *maxScan:
		s.Method = fmt.Sprintf("receive, send, delete (the scan stopped at --max %d: a move task would also move messages the plan did not check)", *maxScan)
	case !useTask:
		s.Method = fmt.Sprintf("receive, send, delete (%d messages the scan did not see: a move task would move them unchecked)", unseen)
	case dlq.fifo:
		s.Method = "SQS message move task (else receive, send, delete in group order)"
	}
	s.Plan = planCounts{Scanned: len(msgs), Move: moves, BadInput: bad, Expired: old, Behind: behind, NotSeen: unseen}
	fmt.Fprintf(out, "DLQ          %s (%s): %d visible, %d in flight\n", dlq.url, queueKind(dlq.fifo), dlq.visible, dlq.inFlight)
	fmt.Fprintf(out, "destination  %s\n", dest.url)
	printRecordTTL(out, t, c.pipeline)
	fmt.Fprintf(out, "scanned      %d: %d to move, %d to leave (%d bad input, %d older than the record TTL", len(msgs), moves, stays, bad, old)
	if dlq.fifo {
		fmt.Fprintf(out, ", %d behind those in their FIFO group", behind)
	}
	fmt.Fprintln(out, ")")
	printPlanByReason(out, decisions)
	for _, d := range decisions {
		m := d.m
		if !outlivesRecord(m, t.recordTTL, now) || d.v == vBad || d.v == vBehind {
			continue
		}
		verb := "stays"
		if *includeExpired {
			verb = "WARNING: moves (--include-expired); its effect runs again if it had completed"
		}
		fmt.Fprintf(out, "  older than the record TTL: %s first sent %s (%s ago): %s\n", aws.ToString(m.MessageId),
			firstSent(m).UTC().Format(time.RFC3339), now.Sub(firstSent(m)).Round(time.Second), verb)
	}
	for _, b := range p.blockedGroups() {
		fmt.Fprintf(out, "  FIFO group %s stays from message %s on (%s): %d scanned behind it stay too\n", b.group, b.blocker, b.why, b.behind)
	}
	if unseen > 0 && dlq.fifo {
		fmt.Fprintf(out, "  not seen     %d: behind the first messages of their groups (a FIFO receive hands out no message behind one in flight); "+
			"each moves unless it is bad input, and in a group that stays, it stays\n", unseen)
	} else if unseen > 0 {
		fmt.Fprintf(out, "  not seen     %d (the scan stopped at --max %d): each moves unless it is bad input or older than the record TTL\n", unseen, *maxScan)
	}
	if len(msgs) == 0 && dlq.visible == 0 && dlq.inFlight == 0 {
		fmt.Fprintln(out, "the DLQ is empty: nothing to move")
		s.Status, s.Done = "empty", true
		return s.finish(ctx, cl.sqs, dlq, c, w, nil)
	}
	fmt.Fprintf(out, "method       %s\n", s.Method)
	if !*yes {
		fmt.Fprintf(out, "Dry run: nothing moved. Run again with --yes to move them.\n")
		s.Status, s.Done = "dry run", true
		s.Resume = ""
		return s.finish(ctx, cl.sqs, dlq, c, w, nil)
	}

	dir, err := auditDir(*journalPath)
	if err != nil {
		return err
	}
	if s.audit, err = openAudit(dir, dlq, dest, s.Method, w.argv); err != nil {
		return err
	}
	s.Audit = s.audit.path
	var moveErr error
	if useTask {
		var moved int64
		moved, moveErr = moveTask(ctx, cl.sqs, dlq, dest, *rate, *wait, out)
		s.Moved += moved
		s.audit.event("move task: %d moved (SQS's approximate count; a task keeps no per-message record)", moved)
		s.byTask = true
		if moveErr != nil && dlq.fifo && errors.Is(moveErr, errTaskUnsupported) {
			fmt.Fprintf(out, "move task not supported for this FIFO queue (%s): receive, send, delete in group order\n", inWords(moveErr))
			moveErr = nil
			useTask = false
		}
		if moveErr != nil {
			return s.finish(ctx, cl.sqs, dlq, c, w, moveErr)
		}
	}
	if useTask && dlq.fifo {
		// A server may finish a FIFO move task without moving everything (ElasticMQ moves
		// nothing): what is left goes the receive way, after what the task moved.
		if rest, err := getQueue(ctx, cl.sqs, dlq.url); err == nil && rest.visible > 0 {
			fmt.Fprintf(out, "the move task left %d messages: receive, send, delete in group order\n", rest.visible)
			useTask = false
		}
	}
	if !useTask {
		j, err := openJournal(*journalPath, dlq.arn, dest.arn)
		if err != nil {
			s.audit.close("NOT STARTED  " + err.Error() + "\n")
			return err
		}
		s.Journal = j.path
		fmt.Fprintf(out, "journal      %s (what this run sent: a rerun from this account on this machine sends none of it again)\n", j.path)
		r := &mover{api: cl.sqs, dlq: dlq, dest: dest, plan: newPlanner(), rate: *rate, hold: holdFor(ctx, *rate), journal: j, out: out, audit: s.audit}
		r.run(ctx)
		s.fromMover(r)
		if s.Done {
			j.compact()
		}
		j.close()
		moveErr = errors.Join(r.errs...)
	} else {
		s.Status, s.Done = "done", true
	}
	return s.finish(ctx, cl.sqs, dlq, c, w, moveErr)
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// holdFor is the visibility timeout of the receive path at a rate: a batch of 10 is sent
// well within it.
func holdFor(ctx context.Context, rate int) time.Duration {
	hold := timing(ctx, func(t timings) time.Duration { return t.hold }, redriveHold)
	if rate > 0 {
		return max(hold, 20*time.Second/time.Duration(rate))
	}
	return hold
}

// destination resolves --to (a URL, an ARN or a queue name), else the outputs' source
// queue, else the DLQ's redrive-allow policy, and checks it fits the DLQ.
func destination(ctx context.Context, api *sqs.Client, t dlqTarget, dlq queueInfo, to string) (queueInfo, error) {
	destURL := t.sourceURL
	var err error
	switch {
	case to != "":
		if destURL, err = queueURL(ctx, api, to); err != nil {
			return queueInfo{}, err
		}
	case destURL == "":
		if len(dlq.sourceArns) != 1 {
			return queueInfo{}, usagef("no destination: the outputs name no source queue and the DLQ's redrive-allow policy names %d source queues (%s); give --to QUEUE (its URL, ARN or name)",
				len(dlq.sourceArns), cmp.Or(dlq.redrivePermission, "none"))
		}
		if destURL, err = urlOfArn(ctx, api, dlq.sourceArns[0]); err != nil {
			return queueInfo{}, err
		}
	}
	dest, err := getQueue(ctx, api, destURL)
	if err != nil {
		return queueInfo{}, err
	}
	switch {
	case dest.arn == dlq.arn:
		return queueInfo{}, usagef("the destination %s is the DLQ itself", destURL)
	case dest.fifo != dlq.fifo:
		return queueInfo{}, usagef("the DLQ %s is %s but the destination %s is %s: redrive to a queue of the same type", dlq.url, queueKind(dlq.fifo), dest.url, queueKind(dest.fifo))
	}
	return dest, nil
}

// queueURL reads --to: a queue URL as it is, an ARN or a bare name looked up with GetQueueUrl.
func queueURL(ctx context.Context, api *sqs.Client, to string) (string, error) {
	switch {
	case strings.HasPrefix(to, "https://") || strings.HasPrefix(to, "http://"):
		return to, nil
	case strings.HasPrefix(to, "arn:"):
		u, err := urlOfArn(ctx, api, to)
		if err != nil {
			return "", usagef("--to %s: %v; give the queue's URL, ARN or name", to, err)
		}
		return u, nil
	case strings.ContainsAny(to, "/: "):
		return "", usagef("--to %s: not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), ARN or name", to)
	}
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(to)})
	if c := errorCode(err); strings.Contains(c, "NonExistentQueue") || strings.Contains(c, "QueueDoesNotExist") {
		return "", usagef("--to %s: no queue of that name in this account and region; give the queue's URL, ARN or name "+
			"(a pipeline is named with --pipeline, and its queue is the destination by default)", to)
	}
	if err != nil {
		return "", fmt.Errorf("--to %s: %w", to, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// errTaskUnsupported wraps the server's refusal of a FIFO move task.
var errTaskUnsupported = errors.New("move task unsupported")

// runningTask is the move task running from the queue, or nil (none, or the server does
// not list them).
func runningTask(ctx context.Context, api *sqs.Client, arn string) *types.ListMessageMoveTasksResultEntry {
	cctx, cancel := settled(ctx)
	defer cancel()
	list, err := api.ListMessageMoveTasks(cctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arn), MaxResults: aws.Int32(1)})
	if err != nil || len(list.Results) == 0 || aws.ToString(list.Results[0].Status) != "RUNNING" {
		return nil
	}
	return &list.Results[0]
}

// moveTask runs StartMessageMoveTask from dlq to dest and waits for it, printing progress.
func moveTask(ctx context.Context, api *sqs.Client, dlq, dest queueInfo, rate int, wait time.Duration, out io.Writer) (int64, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.arn), DestinationArn: aws.String(dest.arn)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	cctx, cancel := settled(ctx)
	started, err := api.StartMessageMoveTask(cctx, in)
	cancel()
	if err != nil {
		if dlq.fifo {
			return 0, fmt.Errorf("%w: %w", errTaskUnsupported, err)
		}
		return 0, fmt.Errorf("the message move task could not start: %s", inWords(err))
	}
	fmt.Fprintf(out, "move task started: %s\n", aws.ToString(started.TaskHandle))
	return followTask(ctx, api, dlq, aws.ToString(started.TaskHandle), wait, out)
}

// notDone is a run that stopped before its job was done: it exits exitNotDone, and its
// summary says what is where and how to resume.
type notDone struct {
	why        string
	taskGoesOn bool // a move task still runs in SQS: the DLQ's counts go on changing
}

func (e *notDone) Error() string { return e.why }

// followTask waits for the move task running from dlq, printing progress, until it ends,
// wait passes (it goes on) or ctx ends (it goes on).
func followTask(ctx context.Context, api *sqs.Client, dlq queueInfo, handle string, wait time.Duration, out io.Writer) (int64, error) {
	deadline := time.Now().Add(wait)
	last := int64(-1)
	goesOn := func(why string) error {
		return &notDone{why: fmt.Sprintf("%s; the move task goes on in SQS (%d moved so far): rerun the command to wait for it, "+
			"follow it with aws sqs list-message-move-tasks --source-arn %s, stop it with aws sqs cancel-message-move-task --task-handle %s",
			why, max(last, 0), dlq.arn, handle), taskGoesOn: true}
	}
	for {
		cctx, cancel := settled(ctx)
		list, err := api.ListMessageMoveTasks(cctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.arn), MaxResults: aws.Int32(1)})
		cancel()
		if err != nil {
			return max(last, 0), goesOn("its progress could not be read: " + inWords(err))
		}
		if len(list.Results) == 0 {
			return max(last, 0), fmt.Errorf("move task %s: ListMessageMoveTasks shows no task", handle)
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
			return last, fmt.Errorf("move task %s: %s", status, cmp.Or(aws.ToString(e.FailureReason), "no reason given"))
		}
		if time.Now().After(deadline) {
			return last, goesOn(fmt.Sprintf("the move task is still %s after --wait %s", status, wait))
		}
		if !pause(ctx, taskPoll) {
			return last, goesOn("interrupted")
		}
	}
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

// resumeCommand is the command line that resumes a run: the same one, with --yes.
func resumeCommand(argv []string, yes bool) string {
	if !yes || len(argv) == 0 {
		return ""
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return "pipelinectl " + strings.Join(q, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sortedKeys is the keys of a set, sorted.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
