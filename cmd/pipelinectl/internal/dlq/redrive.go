package dlq

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// Timings of a redrive.
const (
	// callTimeout bounds one SQS call that runs to its end once started, also after Ctrl-C:
	// a send or a receive cut off half way leaves an outcome nobody knows.
	callTimeout = 20 * time.Second
	// SettleMargin is how long beyond RedriveHold a run waits for hidden messages: SQS's
	// counts are approximate and lag.
	SettleMargin = 15 * time.Second
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

// RedriveHold is the visibility timeout of what the receive path holds: how long a message
// received by a call whose response was lost stays hidden, and so how long a run waits for
// such messages before it says they are hidden.
const RedriveHold = 30 * time.Second

// defaultMaxScan is how many messages inspect and a redrive's plan scan at most (--max).
const defaultMaxScan = 1000

// countWait is how long a redrive's summary retries reading what is left in the DLQ when
// the count fails (the network): a count it prints is read after the run's last change, or
// it says unknown, and why.
const countWait = 30 * time.Second

// scanFailure is the scan's own error in err, Peek's, nil when err is only the messages it
// could not give back (a hiddenError, said on its own).
func scanFailure(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var h *hiddenError
	for _, e := range errs {
		if !errors.As(e, &h) {
			return e
		}
	}
	return nil
}

// settled returns a context for one call that runs to its end even when ctx is cancelled.
func settled(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
}

// oneAttempt turns the SDK's retries off for one call, whose outcome the caller must know.
func oneAttempt(o *sqs.Options) { o.RetryMaxAttempts = 1 }

// Redrive is `pipelinectl dlq redrive ARGS`: it reads its flags, waits for a move task an
// earlier run left, plans from a scan, and on --yes moves what the plan says.
func Redrive(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	o, c, err := parseRedrive(args, w)
	if err != nil {
		return err
	}
	out := w.Text(c)
	lost := &lostReceives{}
	ctx = withLostReceives(ctx, lost)
	cl, t, dlq, err := openDLQ(ctx, c, o.ttl, connect)
	if err != nil {
		return err
	}
	dest, err := destination(ctx, cl.SQS, t, dlq, o.to)
	if err != nil {
		return err
	}
	s := &RedriveSummary{DLQ: dlq.URL, Destination: dest.URL, DryRun: !o.yes, Resume: cli.ResumeCommand(w.Argv, o.yes), lost: lost,
		countWait: w.Redrive.Count}

	// A move task from an earlier run (interrupted, or past its --wait) is waited for first:
	// SQS runs one per queue, and what it moves is not to be planned again.
	if o.yes {
		if task := runningTask(ctx, cl.SQS, dlq.ARN); task != nil {
			fmt.Fprintf(out, "a move task from %s to %s is already running (started %s, probably by an earlier run): waiting for it\n",
				dlq.URL, aws.ToString(task.DestinationArn), time.UnixMilli(task.StartedTimestamp).UTC().Format(time.RFC3339))
			moved, err := followTask(ctx, cl.SQS, dlq, aws.ToString(task.TaskHandle), o.wait, out)
			s.Moved += moved
			if err != nil {
				return s.finish(ctx, cl.SQS, dlq, c, w, err)
			}
			if dlq, err = cli.GetQueue(ctx, cl.SQS, dlq.URL); err != nil {
				return err
			}
		}
	}

	p, err := planRedrive(ctx, cl.SQS, dlq, t, o)
	if err != nil {
		why, h := scanNotDone(ctx, err)
		s.GaveBack = len(p.msgs) - h.count()
		return s.finish(ctx, cl.SQS, dlq, c, w, &cli.NotDone{Why: why})
	}
	s.Method, s.Plan = p.method, p.counts
	p.print(out, dlq, dest, t, c.Pipeline, o)
	if len(p.msgs) == 0 && dlq.Visible == 0 && dlq.InFlight == 0 {
		fmt.Fprintln(out, "the DLQ is empty: nothing to move")
		s.Status, s.Done = "empty", true
		return s.finish(ctx, cl.SQS, dlq, c, w, nil)
	}
	fmt.Fprintf(out, "method       %s\n", s.Method)
	if !o.yes {
		fmt.Fprintf(out, "Dry run: nothing moved. Run again with --yes to move them.\n")
		s.Status, s.Done = "dry run", true
		s.Resume = ""
		return s.finish(ctx, cl.SQS, dlq, c, w, nil)
	}
	moveErr, err := move(ctx, cl.SQS, dlq, dest, p, o, w, out, s)
	if err != nil {
		return err
	}
	return s.finish(ctx, cl.SQS, dlq, c, w, moveErr)
}

// scanNotDone says why a plan's scan ended before anything moved, and what it could not give
// back (nil: all of it). Ctrl-C in the scan, or a receive that failed for good, ends as an
// interrupt does: what the scan held is given back (Peek), a receive whose answer was lost
// is named with when its batch reappears, then the resume line. A receive cut off by the
// interrupt is not a failure of its own.
func scanNotDone(ctx context.Context, err error) (string, *hiddenError) {
	why := "interrupted during the scan, before anything moved"
	if ctx.Err() == nil {
		why = "the scan could not give back what it held, before anything moved"
		if f := scanFailure(err); f != nil {
			why = "a receive failed during the scan, before anything moved: " + cli.InWords(f)
		}
	}
	var h *hiddenError
	if errors.As(err, &h) {
		why += "; " + h.Error()
	}
	return why, h
}

// redriveOptions are dlq redrive's own flags.
type redriveOptions struct {
	yes, includeInvalid, includeExpired bool
	rate, maxScan                       int
	to, journal                         string
	wait                                time.Duration
	ttl                                 *recordTTL
}

// parseRedrive reads and checks dlq redrive's flags.
func parseRedrive(args []string, w cli.Streams) (redriveOptions, *cli.Common, error) {
	var o redriveOptions
	fs, c := cli.NewFlags("dlq redrive", RedriveUsage, w.Out)
	fs.BoolVar(&o.yes, "yes", false, "move (default: dry run)")
	fs.Var(cli.NewWholeNumber(&o.rate, "messages a second"), "rate", "messages per second at most")
	fs.BoolVar(&o.includeInvalid, "include-invalid", false, "move bad input too")
	fs.BoolVar(&o.includeExpired, "include-expired", false, "move messages older than the record TTL too")
	o.ttl = recordTTLFlag(fs)
	fs.StringVar(&o.to, "to", "", "destination queue (URL, ARN or name)")
	fs.IntVar(&o.maxScan, "max", defaultMaxScan, "messages the plan scans at most")
	fs.DurationVar(&o.wait, "wait", defaultTaskMax, "how long to wait for a move task")
	fs.StringVar(&o.journal, "journal", "", "the redrive journal file")
	cli.OutputFlag(fs, c)
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return o, nil, err
	}
	if isSet(fs, "rate") && (o.rate < 1 || o.rate > maxRate) {
		return o, nil, cli.Usagef("--rate %d: use 1 to %d messages per second, or leave it out for no limit", o.rate, maxRate)
	}
	if o.maxScan < 1 {
		return o, nil, cli.Usagef("--max %d: use 1 or more", o.maxScan)
	}
	if o.wait <= 0 {
		return o, nil, cli.Usagef("--wait %s: use a positive duration", o.wait)
	}
	if err := checkRecordTTL(o.ttl); err != nil {
		return o, nil, err
	}
	if err := c.CheckOutput(); err != nil {
		return o, nil, err
	}
	return o, c, nil
}

// redrivePlan is what a scan of the DLQ says a redrive does, decided by the rules a move
// applies again, message by message.
type redrivePlan struct {
	msgs      []types.Message
	now       time.Time
	decisions []decision
	scanned   *planner // the plan's own planner: its blocked groups
	counts    PlanCounts
	unseen    int
	useTask   bool // SQS's move task, else receive, send, delete
	method    string
	// newPlanner is a clean planner for the move, with the plan's rules.
	newPlanner func() *planner
}

// planRedrive scans the DLQ (and lets everything go again) and decides, before anything
// moves, what moves, what stays and why, and by which method.
func planRedrive(ctx context.Context, api *sqs.Client, dlq cli.QueueInfo, t target, o redriveOptions) (*redrivePlan, error) {
	msgs, err := Peek(ctx, api, dlq.URL, o.maxScan, maxHold)
	if err != nil {
		return &redrivePlan{msgs: msgs}, err // what the scan received, given back by Peek but for a hiddenError's
	}
	p := &redrivePlan{msgs: msgs, now: time.Now(), newPlanner: func() *planner {
		return &planner{fifo: dlq.FIFO, includeInvalid: o.includeInvalid, includeExpired: o.includeExpired, ttl: t.RecordTTL}
	}}
	p.scanned = p.newPlanner()
	p.decisions = p.scanned.judgeAll(msgs, p.now)
	n := PlanCounts{Scanned: len(msgs)}
	for _, d := range p.decisions {
		switch d.v {
		case vMove:
			n.Move++
		case vBad:
			n.BadInput++
		case vExpired:
			n.Expired++
		case vBehind:
			n.Behind++
		}
	}
	stays := n.BadInput + n.Expired + n.Behind
	p.unseen = max(0, int(dlq.Visible)-len(msgs))
	n.NotSeen = p.unseen
	p.counts = n
	// A move task moves everything, unseen messages too: it may run only when nothing is
	// to stay, and the scan saw every message or nothing would be kept anyway.
	sawAll := len(msgs) < o.maxScan && p.unseen == 0
	keepsNothing := o.includeInvalid && (o.includeExpired || t.RecordTTL == 0)
	p.useTask = stays == 0 && (sawAll || keepsNothing)
	p.method = "SQS message move task"
	switch {
	case !p.useTask && stays > 0:
		p.method = "receive, send, delete (messages to leave behind)"
	case !p.useTask && len(msgs) >= o.maxScan:
		p.method = fmt.Sprintf("receive, send, delete (the scan stopped at --max %d: a move task would also move messages the plan did not check)", o.maxScan)
	case !p.useTask:
		p.method = fmt.Sprintf("receive, send, delete (%d messages the scan did not see: a move task would move them unchecked)", p.unseen)
	case dlq.FIFO:
		p.method = "SQS message move task (else receive, send, delete in group order)"
	}
	return p, nil
}

// print writes the plan: the queues, the counts, why each kind stays, what was not seen.
func (p *redrivePlan) print(out io.Writer, dlq, dest cli.QueueInfo, t target, pipeline string, o redriveOptions) {
	n := p.counts
	fmt.Fprintf(out, "DLQ          %s (%s): %d visible, %d in flight\n", dlq.URL, queueKind(dlq.FIFO), dlq.Visible, dlq.InFlight)
	fmt.Fprintf(out, "destination  %s\n", dest.URL)
	printRecordTTL(out, t, pipeline)
	fmt.Fprintf(out, "scanned      %d: %d to move, %d to leave (%d bad input, %d older than the record TTL", n.Scanned, n.Move, n.BadInput+n.Expired+n.Behind, n.BadInput, n.Expired)
	if dlq.FIFO {
		fmt.Fprintf(out, ", %d behind those in their FIFO group", n.Behind)
	}
	fmt.Fprintln(out, ")")
	printPlanByReason(out, p.decisions)
	for _, d := range p.decisions {
		m := d.m
		if !outlivesRecord(m, t.RecordTTL, p.now) || d.v == vBad || d.v == vBehind {
			continue
		}
		verb := "stays"
		if o.includeExpired {
			verb = "WARNING: moves (--include-expired); its effect runs again if it had completed"
		}
		fmt.Fprintf(out, "  older than the record TTL: %s first sent %s (%s ago): %s\n", aws.ToString(m.MessageId),
			FirstSent(m).UTC().Format(time.RFC3339), p.now.Sub(FirstSent(m)).Round(time.Second), verb)
	}
	for _, b := range p.scanned.blockedGroups() {
		fmt.Fprintf(out, "  FIFO group %s stays from message %s on (%s): %d scanned behind it stay too\n", b.group, b.blocker, b.why, b.behind)
	}
	if p.unseen > 0 && dlq.FIFO {
		fmt.Fprintf(out, "  not seen     %d: behind the first messages of their groups (a FIFO receive hands out no message behind one in flight); "+
			"each moves unless it is bad input, and in a group that stays, it stays\n", p.unseen)
	} else if p.unseen > 0 {
		fmt.Fprintf(out, "  not seen     %d (the scan stopped at --max %d): each moves unless it is bad input or older than the record TTL\n", p.unseen, o.maxScan)
	}
}

// move carries out the plan of a --yes run: it opens the audit trail, then runs the move
// task, or the mover (receive, send, delete, journaled) where the plan or the server rules
// the task out, or after a FIFO task that left messages. It returns what the move ended
// with, for the summary; or err when nothing moved and there is nothing to summarize (the
// audit trail or the journal could not be opened before any message moved).
func move(ctx context.Context, api *sqs.Client, dlq, dest cli.QueueInfo, p *redrivePlan, o redriveOptions, w cli.Streams, out io.Writer, s *RedriveSummary) (moveErr, err error) {
	dir, err := auditDir(o.journal)
	if err != nil {
		return nil, err
	}
	if s.audit, err = openAudit(dir, dlq, dest, s.Method, w.Argv); err != nil {
		return nil, err
	}
	s.Audit = s.audit.path
	// The journal is opened (and a bad --journal refused) before anything moves, wherever
	// the mover may run: after a FIFO task that leaves messages too.
	var j *journal
	moverRan := false
	if !p.useTask || dlq.FIFO {
		if j, err = openJournal(o.journal, dlq.ARN, dest.ARN); err != nil {
			s.audit.close("NOT STARTED  " + err.Error() + "\n")
			return nil, err
		}
		defer func() {
			if !moverRan {
				j.compact() // removes a journal this run did not use, keeps an earlier run's entries
			}
			j.close()
		}()
	}
	useTask := p.useTask
	if useTask {
		if useTask, moveErr = byTask(ctx, api, dlq, dest, o, out, s); moveErr != nil {
			return moveErr, nil
		}
	}
	if useTask {
		s.Status, s.Done = "done", true
		return nil, nil
	}
	s.Journal = j.path
	fmt.Fprintf(out, "journal      %s (what this run sent: a rerun from this account on this machine sends none of it again)\n", j.path)
	r := &mover{api: api, dlq: dlq, dest: dest, plan: p.newPlanner(), rate: o.rate, hold: holdFor(w.Redrive.Hold, o.rate), journal: j, out: out, audit: s.audit,
		outage: cmp.Or(w.Redrive.Outage, maxOutage), secondSignalKills: w.SecondSignalKills}
	moverRan = true
	r.run(ctx)
	s.fromMover(r)
	if s.Done {
		j.compact()
	}
	return errors.Join(r.errs...), nil
}

// byTask moves dlq's messages with an SQS move task, and reports whether the task moved them
// all: on a FIFO queue whose task SQS refuses, or that leaves messages behind, the mover
// goes on after it.
func byTask(ctx context.Context, api *sqs.Client, dlq, dest cli.QueueInfo, o redriveOptions, out io.Writer, s *RedriveSummary) (bool, error) {
	moved, err := moveTask(ctx, api, dlq, dest, o.rate, o.wait, out)
	s.Moved += moved
	s.audit.event("move task: %d moved (SQS's approximate count; a task keeps no per-message record)", moved)
	s.byTask = true
	if err != nil && dlq.FIFO && errors.Is(err, errTaskUnsupported) {
		fmt.Fprintf(out, "move task not supported for this FIFO queue (%s): receive, send, delete in group order\n", cli.InWords(err))
		s.taskThenMover = true
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if dlq.FIFO {
		// A server may finish a FIFO move task without moving everything (ElasticMQ moves
		// nothing): what is left goes the receive way, after what the task moved.
		if rest, err := cli.GetQueue(ctx, api, dlq.URL); err == nil && rest.Visible > 0 {
			fmt.Fprintf(out, "the move task left %d messages: receive, send, delete in group order\n", rest.Visible)
			s.taskThenMover = true
			return false, nil
		}
	}
	return true, nil
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

// holdFor is the visibility timeout of the receive path at a rate (hold, RedriveHold unless a
// test shortens it): a batch of 10 is sent well within it.
func holdFor(hold time.Duration, rate int) time.Duration {
	hold = cmp.Or(hold, RedriveHold)
	if rate > 0 {
		return max(hold, 20*time.Second/time.Duration(rate))
	}
	return hold
}

// destination resolves --to (a URL, an ARN or a queue name), else the outputs' source
// queue, else the DLQ's redrive-allow policy, and checks it fits the DLQ.
func destination(ctx context.Context, api *sqs.Client, t target, dlq cli.QueueInfo, to string) (cli.QueueInfo, error) {
	destURL := t.SourceURL
	var err error
	switch {
	case to != "":
		if destURL, err = queueURL(ctx, api, to); err != nil {
			return cli.QueueInfo{}, err
		}
	case destURL == "":
		if len(dlq.SourceARNs) != 1 {
			return cli.QueueInfo{}, cli.Usagef("no destination: the outputs name no source queue and the DLQ's redrive-allow policy names %d source queues (%s); give --to QUEUE (its URL, ARN or name)",
				len(dlq.SourceARNs), cmp.Or(dlq.RedrivePermission, "none"))
		}
		if destURL, err = URLOfARN(ctx, api, dlq.SourceARNs[0]); err != nil {
			return cli.QueueInfo{}, err
		}
	}
	dest, err := cli.GetQueue(ctx, api, destURL)
	if err != nil {
		return cli.QueueInfo{}, err
	}
	switch {
	case dest.ARN == dlq.ARN:
		return cli.QueueInfo{}, cli.Usagef("the destination %s is the DLQ itself", destURL)
	case dest.FIFO != dlq.FIFO:
		return cli.QueueInfo{}, cli.Usagef("the DLQ %s is %s but the destination %s is %s: redrive to a queue of the same type", dlq.URL, queueKind(dlq.FIFO), dest.URL, queueKind(dest.FIFO))
	}
	return dest, nil
}

// queueURL reads --to: a queue URL as it is, an ARN or a bare name looked up with GetQueueUrl.
func queueURL(ctx context.Context, api *sqs.Client, to string) (string, error) {
	switch {
	case strings.HasPrefix(to, "https://") || strings.HasPrefix(to, "http://"):
		return to, nil
	case strings.HasPrefix(to, "arn:"):
		u, err := URLOfARN(ctx, api, to)
		if err != nil {
			return "", cli.Usagef("--to %s: %v; give the queue's URL, ARN or name", to, err)
		}
		return u, nil
	case strings.ContainsAny(to, "/: "):
		return "", cli.Usagef("--to %s: not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), ARN or name", to)
	}
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(to)})
	if c := cli.ErrorCode(err); strings.Contains(c, "NonExistentQueue") || strings.Contains(c, "QueueDoesNotExist") {
		return "", cli.Usagef("--to %s: no queue of that name in this account and region; give the queue's URL, ARN or name "+
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
func moveTask(ctx context.Context, api *sqs.Client, dlq, dest cli.QueueInfo, rate int, wait time.Duration, out io.Writer) (int64, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN), DestinationArn: aws.String(dest.ARN)}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	cctx, cancel := settled(ctx)
	started, err := api.StartMessageMoveTask(cctx, in)
	cancel()
	if err != nil {
		if dlq.FIFO {
			return 0, fmt.Errorf("%w: %w", errTaskUnsupported, err)
		}
		return 0, fmt.Errorf("the message move task could not start: %s", cli.InWords(err))
	}
	fmt.Fprintf(out, "move task started: %s\n", aws.ToString(started.TaskHandle))
	return followTask(ctx, api, dlq, aws.ToString(started.TaskHandle), wait, out)
}

// followTask waits for the move task running from dlq, printing progress, until it ends,
// wait passes (it goes on) or ctx ends (it goes on).
func followTask(ctx context.Context, api *sqs.Client, dlq cli.QueueInfo, handle string, wait time.Duration, out io.Writer) (int64, error) {
	deadline := time.Now().Add(wait)
	last := int64(-1)
	goesOn := func(why string) error {
		return &cli.NotDone{Why: fmt.Sprintf("%s; the move task goes on in SQS (%d moved so far): rerun the command to wait for it, "+
			"follow it with aws sqs list-message-move-tasks --source-arn %s, stop it with aws sqs cancel-message-move-task --task-handle %s",
			why, max(last, 0), dlq.ARN, handle), TaskGoesOn: true}
	}
	for {
		cctx, cancel := settled(ctx)
		list, err := api.ListMessageMoveTasks(cctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN), MaxResults: aws.Int32(1)})
		cancel()
		if err != nil {
			return max(last, 0), goesOn("its progress could not be read: " + cli.InWords(err))
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
		if !cli.Pause(ctx, taskPoll) {
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
