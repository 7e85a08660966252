package dlq

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// verdict is what a redrive does with one message.
type verdict int

const (
	vMove    verdict = iota
	vBad             // bad input, kept without --include-invalid
	vExpired         // older than the record TTL, kept without --include-expired
	vBehind          // FIFO: behind a message that stays in its group
	vFailed          // its send failed: it stays, and on FIFO its group behind it
)

type decision struct {
	m       types.Message
	v       verdict
	blocker string // vBehind: the message its group stays from
}

// planner decides each message's verdict in the order a receive hands them out, as the
// receive path moves them: on a FIFO queue a group stays whole from its first message that
// stays, so no message overtakes another. The dry run, inspect and the move share it, so
// what they predict is what moves.
type planner struct {
	fifo                           bool
	includeInvalid, includeExpired bool
	ttl                            time.Duration
	blocked                        map[string]*blockedGroup
	order                          []string // groups in the order they were blocked
}

type blockedGroup struct {
	group, blocker, why string
	behind              int
}

func (p *planner) judge(m types.Message, now time.Time) decision {
	d := decision{m: m}
	g := group(m)
	if b := p.blocked[g]; p.fifo && b != nil {
		if b.blocker != aws.ToString(m.MessageId) {
			b.behind++
			d.v, d.blocker = vBehind, b.blocker
			return d
		}
	}
	switch {
	case badInput(m) && !p.includeInvalid:
		d.v = vBad
		p.block(g, aws.ToString(m.MessageId), reason(m)+", bad input")
	case outlivesRecord(m, p.ttl, now) && !p.includeExpired:
		d.v = vExpired
		p.block(g, aws.ToString(m.MessageId), "older than the record TTL")
	}
	return d
}

// block keeps a FIFO group in the DLQ from message id on.
func (p *planner) block(g, id, why string) {
	if !p.fifo {
		return
	}
	if p.blocked == nil {
		p.blocked = map[string]*blockedGroup{}
	}
	if p.blocked[g] == nil {
		p.blocked[g] = &blockedGroup{group: g, blocker: id, why: why}
		p.order = append(p.order, g)
	}
}

func (p *planner) judgeAll(msgs []types.Message, now time.Time) []decision {
	out := make([]decision, len(msgs))
	for i, m := range msgs {
		out[i] = p.judge(m, now)
	}
	return out
}

func (p *planner) blockedGroups() []*blockedGroup {
	out := make([]*blockedGroup, len(p.order))
	for i, g := range p.order {
		out[i] = p.blocked[g]
	}
	return out
}

// reasonVerdicts is one DeadLetterReason's messages and how many of them get each verdict.
type reasonVerdicts struct {
	*reasonGroup
	n [vFailed + 1]int
}

// verdictsByReason groups decisions by reason (byReason's order) and counts their verdicts.
func verdictsByReason(ds []decision) []reasonVerdicts {
	msgs := make([]types.Message, len(ds))
	byID := make(map[string]verdict, len(ds))
	for i, d := range ds {
		msgs[i] = d.m
		byID[aws.ToString(d.m.MessageId)] = d.v
	}
	var out []reasonVerdicts
	for _, g := range byReason(msgs) {
		rv := reasonVerdicts{reasonGroup: g}
		for _, m := range g.msgs {
			rv.n[byID[aws.ToString(m.MessageId)]]++
		}
		out = append(out, rv)
	}
	return out
}

// printPlanByReason prints, per DeadLetterReason, how many move and how many stay, and why.
func printPlanByReason(w io.Writer, ds []decision) {
	for _, g := range verdictsByReason(ds) {
		var parts []string
		for _, c := range []struct {
			v    verdict
			what string
		}{{vMove, "move"}, {vBad, "stay"}, {vExpired, "stay (older than the record TTL)"}, {vBehind, "stay (behind a message that stays in their FIFO group)"}} {
			if g.n[c.v] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", g.n[c.v], c.what))
			}
		}
		fmt.Fprintf(w, "  %-22s %s\n", g.reason, strings.Join(parts, ", "))
	}
}

// Journal states of a message id.
const (
	jSend = "send" // its send started: if no "sent" follows, nobody knows whether it landed
	jSent = "sent" // its copy is in the destination
	jDone = "done" // and it is deleted from the DLQ
)

type journalEntry struct {
	state string
	at    time.Time // when its send first started
}

// journal records, per DLQ message id, how far its move got, in a file a rerun reads: a
// message whose copy an earlier run sent is deleted from the DLQ, not sent again, and one
// whose send got no answer is sent again and counted as possibly doubled. Lines are
// "STATE ID UNIXMILLI", appended as the run goes; a write reaches the file when it is made,
// so a run killed by a signal loses none of it (a machine that loses power may lose the
// last few).
type journal struct {
	path    string
	f       *os.File
	entries map[string]journalEntry
	werr    error
}

// journalDir is where journals live by default: the user's cache directory.
func journalDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "pipelinectl", "redrive"), nil
}

// openJournal opens (creating) the journal of moves from the queue dlqArn to destArn:
// path, or a file named after the two queues in journalDir.
func openJournal(path, dlqArn, destArn string) (*journal, error) {
	if path == "" {
		dir, err := journalDir()
		if err != nil {
			return nil, fmt.Errorf("redrive journal: no cache directory (%v); give --journal FILE", err)
		}
		sum := sha256.Sum256([]byte(dlqArn + " " + destArn))
		name := dlqArn[strings.LastIndex(dlqArn, ":")+1:]
		path = filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".journal")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("redrive journal: %v; give --journal FILE in a writable directory", err)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, cli.Usagef("--journal %s is not a regular file: give a file path (it is created when absent)", path)
	}
	j := &journal{path: path, entries: map[string]journalEntry{}}
	if b, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				continue // a line cut short by a crash
			}
			ms, _ := strconv.ParseInt(f[2], 10, 64)
			e := j.entries[f[1]]
			if e.at.IsZero() {
				e.at = time.UnixMilli(ms)
			}
			e.state = f[0]
			j.entries[f[1]] = e
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("redrive journal: %v; give --journal FILE in a writable directory", err)
	}
	j.f = f
	return j, nil
}

func (j *journal) state(id string) journalEntry { return j.entries[id] }

func (j *journal) mark(state, id string) {
	e := j.entries[id]
	now := time.Now()
	if e.at.IsZero() {
		e.at = now
	}
	e.state = state
	j.entries[id] = e
	if _, err := fmt.Fprintf(j.f, "%s %s %d\n", state, id, now.UnixMilli()); err != nil && j.werr == nil {
		j.werr = err
	}
}

// compact rewrites the journal without the moves that are done; with none left it
// removes the file.
func (j *journal) compact() {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(j.entries)) {
		if e := j.entries[id]; e.state != jDone {
			fmt.Fprintf(&b, "%s %s %d\n", e.state, id, e.at.UnixMilli())
		}
	}
	if b.Len() == 0 {
		os.Remove(j.path)
		return
	}
	tmp := j.path + ".tmp"
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		os.Rename(tmp, j.path)
	}
}

func (j *journal) close() { j.f.Close() }

// mover moves messages one by one: receive, send to dest, delete only after the send
// succeeded, each step journaled. In a FIFO queue a receive hands out each group's messages
// in order, so sending them in the order received keeps the order; a group whose message
// stays stays whole from it on (planner). A FIFO copy carries the original group id and a
// deduplication id derived from the message id, so a copy sent again within SQS's 5-minute
// deduplication window is dropped.
//
// It stops cleanly: Ctrl-C (ctx) is checked between messages, never inside a call, so a
// send is never cut off half way; what it holds is made visible again.
type mover struct {
	api     *sqs.Client
	dlq     cli.QueueInfo
	dest    cli.QueueInfo
	plan    *planner
	rate    int
	hold    time.Duration
	journal *journal
	out     io.Writer

	held         map[string]types.Message // kept in the DLQ: visible again at the end
	undeleted    map[string]types.Message // sent, not yet deleted from the DLQ
	kept         map[string]verdict
	mine         map[string]bool // moved by this run
	moved        int             // sent and deleted by this run
	movedEarlier int             // sent by an earlier run, deleted now
	doubled      []string        // possibly twice in the destination
	failed       map[string]string
	errs         []error
	fails        callFailures // every failed call, by kind
	interrupted  bool
	hidden       int64 // messages still hidden in the DLQ when the run ended
	next         time.Time
	audit        *audit
	outage       time.Duration // how long receives or counts may keep failing (maxOutage)
	// secondSignalKills gives Ctrl-C back its default effect once the run gives back what
	// it holds (cli.Streams.SecondSignalKills).
	secondSignalKills func()

	countFailingSince time.Time
	// downSince is when the calls began to fail, when the run stopped because they failed
	// for the whole outage: its end then tries each call once (see release), not again for
	// another minute on a network that has been gone for minutes.
	downSince time.Time

	gaveBack     int       // held messages made visible again at the end
	notGivenBack []string  // held messages that could not be: they reappear by returnBy
	returnBy     time.Time // when the hold of the last of them runs out
}

func (r *mover) run(ctx context.Context) {
	r.held, r.undeleted, r.kept, r.mine, r.failed = map[string]types.Message{}, map[string]types.Message{}, map[string]verdict{}, map[string]bool{}, map[string]string{}
	defer r.release(ctx)
	var waitSince, failingSince time.Time
	lastReport := time.Now()
	for {
		if ctx.Err() != nil {
			r.interrupted = true
			return
		}
		if err := r.journal.werr; err != nil {
			r.errs = append(r.errs, fmt.Errorf("the journal %s cannot be written (%v): stopped, so that a rerun cannot send again what this run sent; "+
				"free space, or give --journal FILE elsewhere", r.journal.path, err))
			return
		}
		r.retryDeletes(ctx)
		msgs, err := r.receive(ctx)
		if err != nil {
			cause := r.fails.add("receive", err)
			if failingSince.IsZero() {
				failingSince = time.Now()
				fmt.Fprintf(r.out, "receive failed at %s: %s; retrying for up to %s (what a failed receive took stays hidden up to %s and moves when it reappears; Ctrl-C stops sooner and loses nothing)\n",
					clock(failingSince), cause, r.outage, r.hold)
			}
			if time.Since(failingSince) > r.outage {
				r.errs = append(r.errs, fmt.Errorf("receives from the DLQ failed for %s, since %s: %s", time.Since(failingSince).Round(time.Second), clock(failingSince), cause))
				r.downSince = failingSince
				return
			}
			cli.Pause(ctx, time.Second)
			continue
		}
		failingSince = time.Time{}
		if len(msgs) == 0 {
			if r.settle(ctx, &waitSince) {
				return
			}
			continue
		}
		waitSince = time.Time{}
		for _, m := range msgs {
			if ctx.Err() != nil || r.journal.werr != nil {
				r.held[aws.ToString(m.MessageId)] = m // given back at the end
				continue
			}
			r.handle(ctx, m)
			if time.Since(lastReport) >= time.Second {
				lastReport = time.Now()
				fmt.Fprintf(r.out, "moved %d, %d staying\n", r.moved+r.movedEarlier, len(r.kept))
			}
		}
	}
}

// receive is one receive of the DLQ (queue.go's receive, which runs to its end also on
// Ctrl-C and gives a FIFO receive an attempt id), holding what it returns for the hold.
func (r *mover) receive(ctx context.Context) ([]types.Message, error) {
	return receive(ctx, r.api, r.dlq.URL, r.hold, 10)
}

// settle is called when a receive came back empty: the run is over unless the DLQ still
// hides messages nobody accounted for (a receive whose response was lost, or another
// reader), which it waits up to the hold for, to move them when they reappear.
func (r *mover) settle(ctx context.Context, since *time.Time) bool {
	cctx, cancel := settled(ctx)
	q, err := cli.GetQueue(cctx, r.api, r.dlq.URL)
	cancel()
	if err != nil {
		cause := r.fails.add("count", err)
		if r.countFailingSince.IsZero() {
			r.countFailingSince = time.Now()
		}
		if time.Since(r.countFailingSince) > r.outage {
			r.errs = append(r.errs, fmt.Errorf("the DLQ could not be counted since %s, to check that it hides nothing this run has not moved: %s", clock(r.countFailingSince), cause))
			r.downSince = r.countFailingSince
			return true
		}
		if !cli.Pause(ctx, time.Second) {
			r.interrupted = true
			return true
		}
		return false
	}
	r.countFailingSince = time.Time{}
	accounted := int64(len(r.held) + len(r.undeleted))
	hidden := q.InFlight - accounted
	// On FIFO, visible messages behind a held one in their group are not handed out: the
	// group stays, so they are accounted for.
	if hidden <= 0 && (q.Visible == 0 || r.dlq.FIFO && len(r.held) > 0) {
		return true
	}
	if since.IsZero() {
		*since = time.Now()
		fmt.Fprintf(r.out, "the DLQ still hides %d messages this run does not hold (a receive whose response was lost, or another reader): waiting up to %s for them to reappear\n",
			max(hidden, q.Visible), r.hold+SettleMargin)
	}
	if time.Since(*since) > r.hold+SettleMargin {
		r.hidden = max(hidden, 0)
		return true
	}
	if !cli.Pause(ctx, time.Second) {
		r.interrupted = true
		return true
	}
	return false
}

func (r *mover) handle(ctx context.Context, m types.Message) {
	id := aws.ToString(m.MessageId)
	if _, ok := r.kept[id]; ok { // staying, and received again after its hold ran out
		r.held[id] = m
		return
	}
	if e := r.journal.state(id); e.state == jSent || e.state == jDone {
		// Its copy is in the destination (sent by an earlier run, or by this one before a
		// delete failed): delete it, never send it again.
		if r.delete(ctx, m) == nil && !r.mine[id] {
			r.movedEarlier++
		}
		return
	}
	now := time.Now()
	d := r.plan.judge(m, now)
	if d.v != vMove {
		r.kept[id] = d.v
		r.held[id] = m
		r.audit.event("kept %s md5 %s: %s", id, aws.ToString(m.MD5OfBody), keptWhy(d))
		if b := r.plan.blocked[group(m)]; d.v != vBehind && b != nil && b.blocker == id {
			fmt.Fprintf(r.out, "group %s stays from message %s on (%s)\n", group(m), id, b.why)
		}
		return
	}
	if outlivesRecord(m, r.plan.ttl, now) {
		fmt.Fprintf(r.out, "WARNING: moving message %s, first sent %s, older than the record TTL %s: if its effect completed, it runs again\n",
			id, FirstSent(m).UTC().Format(time.RFC3339), r.plan.ttl)
	}
	if wait := time.Until(r.next); wait > 0 && !cli.Pause(ctx, wait) {
		r.held[id] = m
		return
	}
	if r.rate > 0 {
		r.next = time.Now().Add(time.Second / time.Duration(r.rate))
	}
	prior := r.journal.state(id)
	r.journal.mark(jSend, id)
	copyID, unknown, err := r.send(ctx, m)
	if prior.state == jSend && (!r.dest.FIFO || time.Since(prior.at) > fifoDedupWindow) {
		unknown = true // an earlier run's send of it got no answer
	}
	if err != nil {
		r.failed[id] = err.Error()
		r.errs = append(r.errs, err)
		r.audit.event("send-failed %s md5 %s: %v", id, aws.ToString(m.MD5OfBody), err)
		r.kept[id] = vFailed
		r.held[id] = m
		r.plan.block(group(m), id, "its send failed")
		if r.dlq.FIFO {
			fmt.Fprintf(r.out, "group %s stays from message %s on: %v\n", group(m), id, err)
		}
		return
	}
	if unknown {
		r.doubled = append(r.doubled, id)
		r.audit.event("possibly-doubled %s md5 %s: a send of it got no answer and it was sent again; the copy below is one, the other (if it landed) has the same md5", id, aws.ToString(m.MD5OfBody))
	}
	r.audit.event("sent %s md5 %s as %s", id, aws.ToString(m.MD5OfBody), copyID)
	r.journal.mark(jSent, id)
	r.mine[id] = true
	r.moved++
	r.delete(ctx, m)
}

// send sends m's copy, trying up to sendAttempts times, and returns the copy's message id;
// unknown reports that an attempt before the one that succeeded got no answer, so that its
// copy may have landed too.
func (r *mover) send(ctx context.Context, m types.Message) (copyID string, unknown bool, err error) {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(r.dest.URL), MessageBody: m.Body, MessageAttributes: withFirstSent(m)}
	if r.dest.FIFO {
		in.MessageGroupId = aws.String(group(m))
		in.MessageDeduplicationId = aws.String(dedupID(aws.ToString(m.MessageId)))
	} else if g := group(m); g != "" {
		in.MessageGroupId = aws.String(g) // a fair queue's tenant, kept
	}
	err = tries(sendAttempts, 250*time.Millisecond, func() error {
		cctx, cancel := settled(ctx)
		defer cancel()
		out, err := r.api.SendMessage(cctx, in, oneAttempt)
		if err != nil {
			r.fails.add("send", err)
			return err
		}
		copyID = aws.ToString(out.MessageId)
		return nil
	}, func() { unknown = true })
	if err == nil {
		return copyID, unknown && !r.dest.FIFO, nil
	}
	what := "failed"
	if unknown {
		what = "got no answer (it may have landed: a rerun sends it again and counts it as possibly doubled)"
	}
	return "", unknown, fmt.Errorf("send of message %s to %s %s: %s", aws.ToString(m.MessageId), r.dest.URL, what, cli.InWords(err))
}

// outcomeUnknown reports a failed call that may have taken effect: no HTTP response came
// back (the connection broke, the call timed out), or the server failed with a 5xx.
func outcomeUnknown(err error) bool {
	if notSent(err) {
		return false
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil && re.HTTPStatusCode() != 0 {
		// A 2xx whose body broke off (or could not be read): the call took effect, and what
		// it answered (a receive's messages and their handles) is lost.
		return re.HTTPStatusCode() < 300 || re.HTTPStatusCode() >= 500
	}
	return true // no response: the SDK reports a request that failed to send with status 0
}

// tries runs call up to attempts times, pausing base, then twice as long, and so on, between
// tries. It tries again after a call whose outcome is unknown (onUnknown runs for each:
// its effect may have happened) or that was throttled, and returns the last error, or nil.
func tries(attempts int, base time.Duration, call func() error, onUnknown func()) error {
	for attempt := 1; ; attempt++ {
		err := call()
		if err == nil {
			return nil
		}
		unknown := outcomeUnknown(err)
		if unknown {
			onUnknown()
		}
		if attempt == attempts || !unknown && !retryable(err) {
			return err
		}
		time.Sleep(base << (attempt - 1))
	}
}

// notSent reports a call that never left this machine: its connection could not be made
// (refused, no route, no such host: a dial error). It took no effect, so it took no message
// and sent none, and trying it again is safe.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryable reports a failed call worth trying again: one never sent, or throttled.
func retryable(err error) bool {
	if notSent(err) {
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 429 {
		return true
	}
	return strings.Contains(cli.ErrorCode(err), "Throttl")
}

// delete deletes m from the DLQ; a failure keeps it for retryDeletes (and the journal).
func (r *mover) delete(ctx context.Context, m types.Message, opts ...func(*sqs.Options)) error {
	id := aws.ToString(m.MessageId)
	cctx, cancel := settled(ctx)
	_, err := r.api.DeleteMessage(cctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.dlq.URL), ReceiptHandle: m.ReceiptHandle}, opts...)
	cancel()
	if err != nil {
		cause := r.fails.add("delete", err)
		if _, again := r.undeleted[id]; !again {
			r.audit.event("delete-failed %s: %s (its copy is sent: a rerun deletes it without sending it again)", id, cause)
		}
		r.undeleted[id] = m
		return err
	}
	delete(r.undeleted, id)
	r.journal.mark(jDone, id)
	r.audit.event("deleted %s from the DLQ", id)
	return nil
}

// retryDeletes tries the failed deletes again with their receipt handles. A stale handle
// means the first delete landed and only its answer was lost, or the hold ran out and the
// message is back, to be deleted when received (the journal has it as sent): either way
// nothing is left to retry.
func (r *mover) retryDeletes(ctx context.Context, opts ...func(*sqs.Options)) {
	for _, id := range slices.Sorted(maps.Keys(r.undeleted)) {
		c := cli.ErrorCode(r.delete(ctx, r.undeleted[id], opts...))
		if strings.Contains(c, "ReceiptHandleIsInvalid") || strings.Contains(c, "InvalidParameterValue") || strings.Contains(c, "MessageNotInflight") {
			delete(r.undeleted, id)
		}
	}
}

// release makes what the run holds visible again, also after Ctrl-C: the messages it keeps
// or received when it stopped, and those whose copy is sent but whose delete failed (the
// journal has them as sent: a rerun deletes them without sending them again). Each call is
// tried up to three times a second apart (a network blip), within giveBackBudget; after an
// outage that stopped the run, once, without the SDK's retries, the run saying so first. What
// it could not give back is named, with when its hold runs out.
func (r *mover) release(ctx context.Context) {
	var opts []func(*sqs.Options)
	attempts := 3
	if !r.downSince.IsZero() {
		opts, attempts = []func(*sqs.Options){oneAttempt}, 1
	}
	r.retryDeletes(ctx, opts...)
	var msgs []types.Message
	for _, id := range slices.Sorted(maps.Keys(r.held)) {
		msgs = append(msgs, r.held[id])
	}
	for _, id := range slices.Sorted(maps.Keys(r.undeleted)) {
		msgs = append(msgs, r.undeleted[id])
	}
	switch {
	case len(msgs) > 0 && ctx.Err() != nil && r.secondSignalKills != nil:
		r.secondSignalKills()
		fmt.Fprintf(r.out, "interrupted: giving back the %d messages this run holds (Ctrl-C again leaves them hidden until %s at the latest; the journal keeps what was sent)\n",
			len(msgs), clock(time.Now().Add(r.hold)))
	case len(msgs) > 0 && !r.downSince.IsZero():
		fmt.Fprintf(r.out, "no answer since %s: one try to give back the %s this run holds (else they reappear by %s), then one to count the DLQ, then the summary\n",
			clock(r.downSince), messages(len(msgs)), clock(time.Now().Add(r.hold)))
	}
	deadline := time.Now().Add(giveBackBudget)
	left := msgs
	for attempt := 1; len(left) > 0 && attempt <= attempts && time.Now().Before(deadline); attempt++ {
		if attempt > 1 {
			time.Sleep(time.Second) // also after Ctrl-C: giving back is what the run does then
		}
		var err error
		if left, err = giveBack(ctx, r.api, r.dlq.URL, left, opts...); err != nil {
			r.fails.add("give back", err)
		}
	}
	r.gaveBack = len(msgs) - len(left)
	for _, m := range left {
		r.notGivenBack = append(r.notGivenBack, aws.ToString(m.MessageId))
	}
	if len(left) > 0 {
		r.returnBy = time.Now().Add(r.hold)
		r.audit.event("not-given-back %s: hidden until their hold runs out, by %s", strings.Join(r.notGivenBack, " "), r.returnBy.UTC().Format(time.RFC3339))
	}
}
