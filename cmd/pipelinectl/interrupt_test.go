package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/dlq"
	"github.com/idempotent-sqs/pipeline/functions/contract"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// An operator's redrive of 1,000 messages, interrupted by a storm of Ctrl-Cs (ctx cancelled
// at random points, as main's signal handler does) and by a network cut (responses of sends,
// deletes and a receive lost, connections cut before a send), then run once more: every
// message is accounted for, in the destination or kept in the DLQ; a message is in the
// destination twice only if a run reported it as possibly doubled; on FIFO each group keeps
// its order. Runs go through a proxy that injects the cut.
func TestRedriveSurvivesInterruptsAndCuts(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(queueKind(fifo), func(t *testing.T) {
			t.Parallel()
			interruptedRedrive(t, fifo)
		})
	}
}

func interruptedRedrive(t *testing.T, fifo bool) {
	// 500 messages: the DLQ must outlast 12 interrupted runs (below), and no more, since
	// ElasticMQ's work for each call grows with the depth of the queue.
	const n, groups = 500, 30
	// A shorter hold: the run with the lost receive waits for it to run out.
	const hold = 8 * time.Second
	p := newPipe(t, fifo)
	api := sqsSrv.Client()
	// The DLQ: n uniquely bodied messages as SQS's redrive policy leaves them, and 3 bad input
	// (the consumer's DeadLetterReason): standard ones stay; on FIFO, group g7's from its
	// bad message on.
	type sentMsg struct{ body, group string }
	var all []sentMsg
	for i := range n {
		all = append(all, sentMsg{fmt.Sprintf(`{"idempotencyKey":"k%04d","seq":%d}`, i, i), fmt.Sprintf("g%d", i%groups)})
	}
	bad := map[int]bool{160: true, 270: true, 430: true} // groups g10, g0, g10
	for chunk := range slices.Chunk(all, 10) {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for _, m := range chunk {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), MessageBody: aws.String(m.body)}
			var seqNo int
			fmt.Sscanf(m.body[strings.Index(m.body, `"seq":`)+6:], "%d", &seqNo)
			if bad[seqNo] {
				e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{contract.AttrDeadLetterReason: {DataType: aws.String("String"), StringValue: aws.String("invalid_input: test")}}
			}
			if fifo {
				e.MessageGroupId, e.MessageDeduplicationId = aws.String(m.group), aws.String(fmt.Sprint(seqNo))
			}
			entries = append(entries, e)
		}
		out, err := api.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.dlqURL), Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("fill the DLQ: %v %v", err, out)
		}
	}

	// What stays in the DLQ: the bad ones, and on FIFO their groups from them on.
	wantLeft := 3
	if fifo {
		wantLeft = 0
		for i, m := range all { // every message of a bad one's group from it on
			for b := range bad {
				if m.group == all[b].group && i >= b {
					wantLeft++
					break
				}
			}
		}
	}

	proxy, err := ddbproxy.New(sqsSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var cut atomic.Bool
	var sends, deletes, receives, dropAfter atomic.Int64
	var dropped atomic.Bool
	proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if !cut.Load() {
			return ddbproxy.Fault{}
		}
		switch c.Op {
		case "SendMessage": // 5 responses lost after the send landed, and 3 connections cut before it
			switch k := sends.Add(1); {
			case k%40 == 5 && k < 200:
				return ddbproxy.Fault{Drop: true}
			case k%40 == 25 && k < 120:
				return ddbproxy.Fault{Cut: true}
			}
		case "DeleteMessage":
			if k := deletes.Add(1); k%50 == 7 && k < 200 {
				return ddbproxy.Fault{Drop: true}
			}
		case "ReceiveMessage":
			// One of the mover's receives (its hold, not the plan scan's 30 s) near the end of
			// the run loses its answer: what it took stays hidden for the hold, after the rest
			// has moved.
			receives.Add(1)
			if strings.Contains(string(c.Body), fmt.Sprintf(`"VisibilityTimeout":%d`, int(hold/time.Second))) &&
				sends.Load() >= dropAfter.Load() && !dropped.Swap(true) {
				return ddbproxy.Fault{Drop: true}
			}
		}
		return ddbproxy.Fault{}
	}
	args := append(p.args("dlq", "redrive", "--yes", "--output", "json"), "--endpoint-url", proxy.URL)
	var reported []string
	var text string
	redrive := func(ctx context.Context, extra ...string) (int, dlq.RedriveSummary) {
		var out, errOut bytes.Buffer
		start := time.Now()
		code := runWith(ctx, cli.Streams{Out: &out, Err: &errOut, Argv: append(slices.Clip(args), extra...), Redrive: cli.RedriveTimings{Hold: hold}})
		var s dlq.RedriveSummary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil && code != cli.ExitNotDone {
			t.Fatalf("exit %d, no summary: %v\n%s\n%s", code, err, out.String(), errOut.String())
		}
		reported = append(reported, s.PossiblyDoubled...)
		text = errOut.String()
		tail := text
		if i := strings.LastIndex(tail, "\nmoved"); i >= 0 {
			tail = tail[i+1:]
		}
		t.Logf("redrive exit %d after %s: moved %d, earlier %d, doubled? %d, status %q %s\n%s", code, time.Since(start).Round(time.Millisecond),
			s.Moved, s.MovedEarlier, len(s.PossiblyDoubled), s.Status, s.Why, tail)
		return code, s
	}

	// The Ctrl-C storm: 12 runs, each interrupted after 0.3 to 3.5 s, in the plan's scan
	// (its first second or two) or in the move. The delays are seeded: 21.6 s in all, so at
	// --rate 10 they move at most 215 messages, however fast the machine. None finishes the
	// 497, and the cut run below has enough left (over 200) to take each of its faults.
	rng := rand.New(rand.NewPCG(1, 2))
	interrupts := 0
	for range 12 {
		ctx, cancel := context.WithCancel(t.Context())
		d := time.Duration(300+rng.IntN(3200)) * time.Millisecond
		timer := time.AfterFunc(d, cancel)
		code, s := redrive(ctx, "--rate", "10")
		timer.Stop()
		cancel()
		if code == cli.ExitNotDone {
			interrupts++
		} else if code != cli.ExitLeft { // done: the bad input stays
			t.Fatalf("interrupted run: exit %d", code)
		}
		// Ctrl-C gives back everything the run held before it exits; a batch hidden by a
		// receive whose answer was lost (a starved server can leave one unanswered) reappears
		// within its hold: the mover's, or the plan scan's, which the run's summary names.
		wait := hold + dlq.SettleMargin
		if s.LostReceives > 0 && s.LostReceivesVisibleBy != nil {
			t.Logf("interrupted run %d reports %d lost receives, their batches visible by %s", interrupts, s.LostReceives, s.LostReceivesVisibleBy.Format(time.TimeOnly))
			wait = max(wait, time.Until(*s.LostReceivesVisibleBy)+dlq.SettleMargin)
		}
		if n := hiddenPastHold(t, p.dlqURL, wait); n != 0 {
			t.Errorf("interrupted run %d (after %s): %d messages still in flight in the DLQ after the hold, want 0; the run said:\n%s", interrupts, d, n, text)
		}
	}
	if len(reported) > 0 {
		t.Errorf("interrupted runs reported %d possibly doubled: a Ctrl-C must never cut a send", len(reported))
	}
	// The network cut: one run through the faults, to its end. It must move the messages its
	// lost receive hid before it says it is done.
	dropAfter.Store(queueCounts(t, p.dlqURL)[0] - int64(wantLeft) - 15) // 15 sends before the last one
	cut.Store(true)
	code, s := redrive(t.Context())
	cut.Store(false)
	// On standard it waits for them; on FIFO the receive's attempt id makes the SDK's retry
	// hand the same messages out again, so none is hidden.
	if waited := strings.Contains(text, "messages this run does not hold (a receive whose response was lost"); waited == fifo {
		t.Errorf("the run with a lost receive: waited for 10 hidden messages %v, want %v:\n%s", waited, !fifo, text)
	}
	if !dropped.Load() {
		t.Error("the network cut lost no receive: the test did not run as designed")
	}
	// The lost receive is named, with when its batch reappears (standard); on FIFO the
	// retry's attempt id got the same batch back, so nothing was lost.
	if lost := s.LostReceives; fifo && lost != 0 || !fifo && (lost < 1 || s.LostReceivesVisibleBy == nil) {
		t.Errorf("the run with a lost receive: lostReceives %d (visible by %v), want %s", lost, s.LostReceivesVisibleBy, map[bool]string{true: "0 (FIFO)", false: "at least 1, with a time"}[fifo])
	}
	t.Logf("network cut: exit %d, %d faults injected (%d sends, %d deletes, %d receives seen)", code, proxy.Injected.Load(), sends.Load(), deletes.Load(), receives.Load())
	if got := proxy.Injected.Load(); got != 13 { // 5 sends lost, 3 cut, 4 deletes lost, 1 receive lost
		t.Errorf("the network cut injected %d faults, want 13: the run had too few messages left to take them all", got)
	}
	// And the rerun that finishes the job.
	code, s = redrive(t.Context())
	if code != cli.ExitLeft || !s.Done { // done, the bad input (and on FIFO its groups) left
		t.Fatalf("final run: exit %d, %+v", code, s)
	}

	// Account for every message: drain the destination, and read what stays in the DLQ.
	dest := drainAll(t, p.queueURL)
	left := drainAll(t, p.dlqURL)
	inDest := map[string]int{}
	for _, m := range dest {
		inDest[m.body]++
	}
	inDLQ := map[string]int{}
	for _, m := range left {
		inDLQ[m.body]++
	}
	var lost, twice []string
	for _, m := range all {
		switch c := inDest[m.body] + inDLQ[m.body]; {
		case c == 0:
			lost = append(lost, m.body)
		case c > 1:
			twice = append(twice, m.body)
		}
	}
	t.Logf("FIGURE redrive of %d %s messages, %d interrupts and a network cut (%d faults), then one rerun: %d in the destination, %d left in the DLQ (want %d), lost %d, twice %d, reported possibly doubled %d",
		n, queueKind(fifo), interrupts, proxy.Injected.Load(), len(dest), len(left), wantLeft, len(lost), len(twice), len(reported))
	if len(lost) > 0 {
		t.Errorf("lost %d: %v", len(lost), lost[:min(5, len(lost))])
	}
	if len(left) != wantLeft {
		t.Errorf("left in the DLQ: %d, want %d", len(left), wantLeft)
	}
	if len(twice) > len(reported) {
		t.Errorf("%d messages twice, but only %d reported as possibly doubled", len(twice), len(reported))
	}
	if fifo && len(twice) > 0 {
		t.Errorf("FIFO: %d twice (the deduplication id should have dropped each resend)", len(twice))
	}
	if interrupts < 10 {
		t.Errorf("only %d of 12 runs were interrupted: the storm did not storm", interrupts)
	}
	if fifo {
		last := map[string]int{}
		for _, m := range dest {
			var seqNo int
			fmt.Sscanf(m.body[strings.Index(m.body, `"seq":`)+6:], "%d", &seqNo)
			if prev, ok := last[m.group]; ok && seqNo <= prev {
				t.Errorf("group %s out of order: %d after %d", m.group, seqNo, prev)
			}
			last[m.group] = seqNo
		}
	}
}

// hiddenPastHold waits up to hold for the DLQ to have no message in flight, and returns how
// many still are. The run gives back every message it holds at once; a receive whose
// answer was lost (the SDK retried it, which a loaded machine makes likely) hides its batch
// with nobody to give it back, until its visibility timeout, the run's hold, ends. The wait
// it needed is logged.
func hiddenPastHold(t *testing.T, url string, hold time.Duration) int64 {
	t.Helper()
	start := time.Now()
	q := queueCounts(t, url)
	for q[1] != 0 && time.Since(start) < hold {
		time.Sleep(200 * time.Millisecond)
		q = queueCounts(t, url)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("the DLQ had messages in flight after the run (a receive whose answer was lost): %d left after waiting %s (the hold: %s)",
			q[1], waited.Round(10*time.Millisecond), hold)
	}
	return q[1]
}

type drained struct{ body, group string }

// drainAll receives and deletes everything in a queue, in the order handed out.
func drainAll(t *testing.T, url string) []drained {
	t.Helper()
	api := sqsSrv.Client()
	var out []drained
	for empty := 0; empty < 2; {
		got, err := api.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, m := range got.Messages {
			out = append(out, drained{aws.ToString(m.Body), m.Attributes["MessageGroupId"]})
			if _, err := api.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// A FIFO redrive by move task may need the mover after it (a task that leaves messages, as
// ElasticMQ's moves none): a journal it cannot use is refused before the task starts, as
// on the mover's path, not after the task moved messages.
func TestFifoRedriveRefusesAJournalItCannotUseBeforeItsTask(t *testing.T) {
	t.Parallel()
	p := newPipe(t, true)
	fillDLQ(t, p, "g1", "m1", "m2")
	dir := t.TempDir()
	code, out, errOut := ctl(t, append(p.args("dlq", "redrive", "--yes"), "--journal", dir)...)
	wantContains(t, "the FIFO redrive's output", out+errOut, "method       SQS message move task", "--journal "+dir+" is not a regular file")
	if strings.Contains(out+errOut, "move task started") || code != cli.ExitUsage {
		t.Errorf("exit %d (want %d), and the task must not start:\n%s%s", code, cli.ExitUsage, out, errOut)
	}
	// The audit trail (runs/ beside the journal) says it did not start, and has no task.
	trails, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "runs", "*"))
	if len(trails) != 1 {
		t.Fatalf("audit trails %q, want one", trails)
	}
	if b, err := os.ReadFile(trails[0]); err != nil || !strings.Contains(string(b), "NOT STARTED") || strings.Contains(string(b), "move task:") {
		t.Errorf("audit trail %s (%v):\n%s\nwant NOT STARTED and no move task", trails[0], err, b)
	}
	if q := queueCounts(t, p.dlqURL); q[0]+q[1] != 2 {
		t.Errorf("DLQ after the run = %v, want its 2 messages", q)
	}
}

// A journal that cannot be used is refused before anything moves, naming --journal. (A
// write that fails mid-run stops the run the same way; no local fault makes a regular
// file's write fail, so that path is read, not run.)
func TestRedriveRefusesAJournalItCannotUse(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	fillDLQ(t, p, "", "m1", "m2", "bad-1")
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		dir:                            "--journal " + dir + " is not a regular file: give a file path (it is created when absent)",
		filepath.Join(file, "journal"): "; give --journal FILE in a writable directory",
	} {
		code, _, errOut := ctl(t, append(p.args("dlq", "redrive", "--yes"), "--journal", path)...)
		if code == cli.ExitOK || !strings.Contains(errOut, want) {
			t.Errorf("--journal %s: exit %d, %q; want %q", path, code, errOut, want)
		}
	}
	if q := queueCounts(t, p.dlqURL); q[0] != 3 {
		t.Errorf("DLQ after the refused runs = %v, want the 3 messages still there", q)
	}
}

// Ctrl-C at a terminal: the built command gets SIGINT mid-redrive, stops between messages,
// gives back what it holds, prints what is where and the command that resumes, and exits 3;
// the rerun it prints finishes the job. Everything is accounted for.
func TestRedriveSIGINT(t *testing.T) {
	t.Parallel()
	bin := ctlBinary(t)
	p := newPipe(t, false)
	var bodies []string
	for i := range 300 {
		bodies = append(bodies, fmt.Sprintf("sigint-%03d", i))
	}
	fillDLQ(t, p, "", append(bodies, "bad-1")...)
	args := append(p.args("dlq", "redrive", "--yes", "--rate", "50"), "--journal", filepath.Join(t.TempDir(), "j"))
	cmd := exec.Command(bin, args...)
	proc, err := localproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := proc.WaitOutput(ctx, "journal      "); err != nil { // the move has begun
		t.Fatalf("the redrive: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // at 50 a second, about 25 moved of 300
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-proc.Exited()
	err = proc.WaitErr()
	stopped := time.Since(start)

	code := cmd.ProcessState.ExitCode()
	t.Logf("$ pipelinectl %s, SIGINT 0.5 s into the move: exit %d, stopped %s after the signal (%v)\n%s", strings.Join(args, " "), code, stopped.Round(time.Millisecond), err, proc.Output())
	wantContains(t, "SIGINT", proc.Output(), "NOT DONE     interrupted (exit 3)", "resume with  pipelinectl dlq redrive --yes ")
	if code != cli.ExitNotDone {
		t.Errorf("exit %d after SIGINT, want %d", code, cli.ExitNotDone)
	}
	inFlight := queueCounts(t, p.dlqURL)[1]
	if inFlight != 0 {
		t.Errorf("DLQ after SIGINT: %d still in flight, want all given back", inFlight)
	}
	resume := strings.TrimSpace(proc.Output()[strings.Index(proc.Output(), "resume with  ")+len("resume with  "):])
	resume = strings.SplitN(resume, "\n", 2)[0]
	rerunCode, rerun, rerunErr := ctl(t, strings.Fields(resume)[1:]...)
	if rerunCode != cli.ExitLeft { // done, the bad message left
		t.Fatalf("the printed resume command: exit %d\n%s", rerunCode, rerun)
	}
	got := drainAll(t, p.queueURL)
	seen := map[string]int{}
	for _, m := range got {
		seen[m.body]++
	}
	// A standard queue cannot promise once: a send that got no answer in time (a loaded
	// machine or the network) is sent again, and may then be there twice. What pipelinectl
	// promises is that it says so ("twice?"): a message twice that no run named fails, as
	// does one lost. The interrupted run names none: a Ctrl-C never cuts a send.
	if n := possiblyDoubled(proc.Output()); n != 0 {
		t.Errorf("the interrupted run names %d possibly twice: a Ctrl-C must never cut a send", n)
	}
	named := possiblyDoubled(rerun + rerunErr)
	once, twice := 0, 0
	for _, b := range bodies {
		switch seen[b] {
		case 1:
			once++
		case 2:
			twice++
		default:
			t.Errorf("%s is in the destination %d times, want once", b, seen[b])
		}
	}
	if twice > named {
		t.Errorf("%d messages are in the destination twice, but the runs named %d possibly twice", twice, named)
	}
	if q := queueCounts(t, p.dlqURL); q[0] != 1 {
		t.Errorf("DLQ after the rerun = %v, want the bad message only", q)
	}
	t.Logf("FIGURE SIGINT mid-redrive: exit %d, stopped %s after the signal, %d in flight after; after the printed resume command %d of %d are in the destination once, %d twice (%d named possibly twice; %d messages there)",
		code, stopped.Round(time.Millisecond), inFlight, once, len(bodies), twice, named, len(got))
}

// possiblyDoubled is the count a redrive's summary gives on its "twice?" line, 0 without one.
func possiblyDoubled(summary string) int {
	_, rest, ok := strings.Cut(summary, "twice?       ")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		return -1 // a line the test cannot read: no double passes
	}
	return n
}

// A storm of Ctrl-Cs at a terminal: the built command gets SIGINT at random points of its
// scan or its move, again and again, on the move task's path (a standard queue, every
// message to move) and on the receive path (FIFO, a group held by bad input). After every
// run no message is in flight in the DLQ: the run gave back what it held before it exited,
// and its summary never counts in flight a message it holds without saying so. The last
// run finishes the job, each message moved once.
func TestRedriveSIGINTStorm(t *testing.T) {
	t.Parallel()
	bin := ctlBinary(t)
	for _, fifo := range []bool{false, true} {
		t.Run(queueKind(fifo), func(t *testing.T) {
			t.Parallel()
			p := newPipe(t, fifo)
			var bodies []string
			for i := range 300 {
				bodies = append(bodies, fmt.Sprintf("storm-%03d", i))
			}
			group := ""
			if fifo {
				group = "g"
				bodies = append(bodies[:150:150], append([]string{"bad-1"}, bodies[150:]...)...)
			}
			fillDLQ(t, p, group, bodies...)
			args := append(p.args("dlq", "redrive", "--yes", "--rate", "40"), "--journal", filepath.Join(t.TempDir(), "j"))
			unsaid := regexp.MustCompile(`left +in the DLQ: \d+ visible, [1-9]\d* in flight \(SQS's approximate counts, read at \S+ after the run's last change\)`)
			rng := rand.New(rand.NewPCG(3, 4))
			var inFlight []int64
			var after []string
			for i := range 5 {
				cmd := exec.Command(bin, args...)
				proc, err := localproc.Start(cmd)
				if err != nil {
					t.Fatal(err)
				}
				d := time.Duration(200+rng.IntN(2500)) * time.Millisecond
				time.Sleep(d)
				cmd.Process.Signal(os.Interrupt)
				<-proc.Exited()
				proc.Stop()
				q := queueCounts(t, p.dlqURL)
				inFlight, after = append(inFlight, q[1]), append(after, d.Round(100*time.Millisecond).String())
				t.Logf("run %d, SIGINT after %s: exit %d, the DLQ then: %d visible, %d in flight\n%s", i, d, cmd.ProcessState.ExitCode(), q[0], q[1], proc.Output())
				if n := hiddenPastHold(t, p.dlqURL, dlq.RedriveHold+dlq.SettleMargin); n != 0 {
					t.Errorf("run %d, SIGINT after %s: %d messages still in flight after the hold, want every one given back", i, d, n)
				}
				if m := unsaid.FindString(proc.Output()); m != "" {
					t.Errorf("run %d: the summary counts messages in flight without saying the run holds none: %q", i, m)
				}
			}
			want := map[bool]int{false: cli.ExitOK, true: cli.ExitLeft}[fifo]
			ctlWant(t, want, args...)
			seen := map[string]int{}
			for _, m := range drainAll(t, p.queueURL) {
				seen[m.body]++
			}
			once := 0
			for _, b := range bodies {
				if w := map[bool]int{true: 0, false: 1}[fifo && b >= "bad-1" && (b == "bad-1" || b >= "storm-150")]; seen[b] != w {
					t.Errorf("%s is in the destination %d times, want %d", b, seen[b], w)
				} else if w == 1 {
					once++
				}
			}
			t.Logf("FIGURE SIGINT storm, %s, %d messages at --rate 40: SIGINT after %s; in flight in the DLQ after each run %v; then one run: %d in the destination once, none twice",
				queueKind(fifo), len(bodies), strings.Join(after, ", "), inFlight, once)
		})
	}
}

// A network cut in the middle of a redrive: every call fails from one receive on. The run
// stops (its outage, seconds here, is two minutes at a terminal), and its summary counts
// only what it read after its last change: while the network stays down it says the
// DLQ's counts are unknown, and why, instead of zeros; when the network returns as the run
// ends, its counts are the queue's real ones. After the outage, the run's end tries each
// call once, having said so, rather than retrying for another minute in silence. Every kind
// of call that failed is named with its cause in words, never the SDK's error chain.
func TestRedriveSummaryAfterNetworkCut(t *testing.T) {
	t.Parallel()
	for _, returns := range []bool{false, true} {
		name := map[bool]string{false: "network stays down", true: "network returns as the run ends"}[returns]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := newPipe(t, false)
			var bodies []string
			for i := range 60 {
				bodies = append(bodies, fmt.Sprintf("cut-%02d", i))
			}
			// The bad message first: the run holds it (it stays) when the network goes, and
			// cannot give it back.
			fillDLQ(t, p, "", append([]string{"bad-1"}, bodies...)...)
			proxy, err := ddbproxy.New(sqsSrv.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			var down atomic.Bool
			var sends atomic.Int64
			var downAt atomic.Int64
			proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
				switch {
				case c.Op == "SendMessage":
					sends.Add(1)
				case c.Op == "ReceiveMessage" && sends.Load() >= 20 && downAt.Load() == 0:
					downAt.Store(time.Now().UnixMilli())
					down.Store(true)
				}
				if !down.Load() {
					return ddbproxy.Fault{}
				}
				if returns && c.Op == "ChangeMessageVisibilityBatch" {
					// The network returns just after the run's one try to give back what it
					// holds: its one count then reads the DLQ.
					down.Store(false)
				}
				return ddbproxy.Fault{Cut: true}
			}
			args := append(p.args("dlq", "redrive", "--yes", "--output", "json"), "--endpoint-url", proxy.URL, "--journal", filepath.Join(t.TempDir(), "j"))
			var out, errOut bytes.Buffer
			start := time.Now()
			code := runWith(t.Context(), cli.Streams{Out: &out, Err: &errOut, Argv: args, Redrive: cli.RedriveTimings{Outage: 3 * time.Second}})
			took := time.Since(start)
			down.Store(false)
			real := queueCounts(t, p.dlqURL)
			t.Logf("exit %d after %s (network down %s after the start); the DLQ now: %d visible, %d in flight\n%s\n%s",
				code, took.Round(time.Millisecond), time.Duration(downAt.Load()-start.UnixMilli())*time.Millisecond, real[0], real[1], errOut.String(), out.String())
			var s dlq.RedriveSummary
			if err := json.Unmarshal(out.Bytes(), &s); err != nil {
				t.Fatalf("no JSON summary: %v", err)
			}
			// The audit trail ends with the summary's text.
			trail, err := os.ReadFile(s.Audit)
			if err != nil {
				t.Fatalf("the audit trail: %v", err)
			}
			t.Logf("the audit trail's end:\n%s", trail[max(0, len(trail)-1500):])
			if code != cli.ExitNotDone || s.Done {
				t.Errorf("exit %d, done %v: want %d, not done", code, s.Done, cli.ExitNotDone)
			}
			for _, raw := range []string{"operation error", "exceeded maximum number of attempts", "https response error"} {
				if strings.Contains(out.String()+errOut.String(), raw) {
					t.Errorf("the output has the SDK's error chain (%q), want causes in words", raw)
				}
			}
			if !strings.Contains(s.Why, "receives from the DLQ failed for") || !strings.Contains(s.Why, "no answer from "+proxy.URL) {
				t.Errorf("why = %q, want the receives' failure, naming the endpoint that did not answer", s.Why)
			}
			if f := s.FailedCalls["receive"]; f.Count == 0 || !strings.Contains(f.Cause, "no answer from") {
				t.Errorf("failed calls = %+v, want the receives named with their cause", s.FailedCalls)
			}
			moved := len(drainAll(t, p.queueURL))
			if int64(moved) != s.Moved {
				t.Errorf("summary: moved %d; the destination has %d", s.Moved, moved)
			}
			// Held when the network went: named, with when it reappears, in the summary and the
			// trail; and every copy sent is in the trail with its id.
			if len(s.NotGivenBack) != 1 || s.NotGivenBackBy == nil || s.FailedCalls["give back"].Count == 0 {
				t.Errorf("not given back %v by %v (failed calls %+v), want the bad message named", s.NotGivenBack, s.NotGivenBackBy, s.FailedCalls)
			}
			wantContains(t, "trail", string(trail), "# HIDDEN       1 message this run held could not be given back (no answer from", " not-given-back ", " kept ")
			if n := len(regexp.MustCompile(`(?m)Z sent \S+ md5 [0-9a-f]{32} as \S+$`).FindAll(trail, -1)); n != moved {
				t.Errorf("the trail has %d sent lines, want %d (one per copy moved)", n, moved)
			}
			var failed []string
			for _, k := range slices.Sorted(maps.Keys(s.FailedCalls)) {
				failed = append(failed, fmt.Sprintf("%s %d", k, s.FailedCalls[k].Count))
			}
			left := "unknown"
			if s.LeftVisible != nil {
				left = fmt.Sprintf("%d visible, %d in flight", *s.LeftVisible, *s.LeftInFlight)
			}
			t.Logf("FIGURE network cut, %s: exit %d after %s; moved %d (the destination has %d); summary left: %s (the DLQ after: %d visible, %d in flight); not given back %d; failed calls: %s",
				name, code, took.Round(time.Second), s.Moved, moved, left, real[0], real[1], len(s.NotGivenBack), strings.Join(failed, ", "))
			// After an outage that stopped the run, its end tries each call once (no SDK
			// retries), having said so: not another minute of retries, silent.
			if f := s.FailedCalls["give back"]; f.Count != 1 {
				t.Errorf("give back failed %d times, want once: one try after the outage", f.Count)
			}
			wantContains(t, "output", errOut.String(), "no answer since ", ": one try to give back the 1 message this run holds (else they reappear by ", "then one to count the DLQ, then the summary")
			if !returns {
				if f := s.FailedCalls["count"]; f.Count != 1 {
					t.Errorf("the count failed %d times, want once: one try after the outage", f.Count)
				}
				if s.LeftVisible != nil || s.LeftInFlight != nil || !strings.Contains(s.LeftUnknown, "could not count at ") {
					t.Errorf("network down: left %v/%v (%q), want unknown with why", s.LeftVisible, s.LeftInFlight, s.LeftUnknown)
				}
				wantContains(t, "summary", string(trail), "# left         in the DLQ: unknown: could not count at ", "# failed calls receive: ", "#              count: ",
					"# NOT DONE     receives from the DLQ failed for ")
				return
			}
			if s.LeftVisible == nil || s.LeftInFlight == nil {
				t.Fatalf("network back: counts unknown (%s), want them read", s.LeftUnknown)
			}
			if f, ok := s.FailedCalls["count"]; ok {
				t.Errorf("the count failed %d times, want it read on its one try, the network back", f.Count)
			}
			wantContains(t, "summary", string(trail), fmt.Sprintf("# left         in the DLQ: %d visible, %d in flight (SQS's approximate counts, read at ", *s.LeftVisible, *s.LeftInFlight))
			// The count was read after the run's last change: the total is the queue's, and
			// in flight is at most what the run could not give back (its hold, 30 s from its
			// receive, may run out before the count on a slow machine).
			if *s.LeftVisible+*s.LeftInFlight != real[0]+real[1] || *s.LeftInFlight > int64(len(s.NotGivenBack)) {
				t.Errorf("summary: %d visible + %d in flight (%d not given back); the DLQ after the run: %d + %d",
					*s.LeftVisible, *s.LeftInFlight, len(s.NotGivenBack), real[0], real[1])
			}
			if int64(moved)+real[0]+real[1] != int64(len(bodies)+1) {
				t.Errorf("moved %d + left %d + %d != %d sent: a message is lost or doubled", moved, real[0], real[1], len(bodies)+1)
			}
		})
	}
}

// queueKind names a queue type in test names and figures.
func queueKind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// Ctrl-C that lands in the plan's scan, while a receive is on its way and its answer is then
// lost (the connection hung up, as an interrupted process's can be): the run ends as
// anywhere else, exit 3, with what it held given back, the lost receive named with when its
// batch reappears, and the resume line; not exit 1 with the SDK's chain.
func TestRedriveCtrlCInTheScan(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	var bodies []string
	for i := range 30 {
		bodies = append(bodies, fmt.Sprintf("scan-%02d", i))
	}
	fillDLQ(t, p, "", bodies...)
	proxy, err := ddbproxy.New(sqsSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var scans atomic.Int32
	proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		// The scan's second receive (it holds for 30 s): the interrupt lands while it is on
		// its way, and its answer is lost.
		if c.Op == "ReceiveMessage" && strings.Contains(string(c.Body), `"VisibilityTimeout":30`) && scans.Add(1) == 2 {
			cancel()
			return ddbproxy.Fault{Drop: true}
		}
		return ddbproxy.Fault{}
	}
	var out, errOut bytes.Buffer
	code := run(ctx, append(p.args("dlq", "redrive", "--yes"), "--endpoint-url", proxy.URL), &out, &errOut)
	text := out.String() + errOut.String()
	t.Logf("exit %d\n%s", code, text)
	if code != cli.ExitNotDone {
		t.Errorf("Ctrl-C in the scan: exit %d, want %d", code, cli.ExitNotDone)
	}
	wantContains(t, "Ctrl-C in the scan", text, "gave back    20 messages this run held: visible again at once", // the first receive's and the lost one's retry
		"lost         1 receive got no whole answer (the network, or an answer cut off): it may have taken up to 10 messages that nobody can give back; they stay hidden until ",
		"NOT DONE     interrupted during the scan, before anything moved (exit 3)", "resume with  pipelinectl dlq redrive --yes ")
	if strings.Contains(text, "operation error") {
		t.Errorf("the SDK's chain reaches the operator:\n%s", text)
	}
}

// The trial's fresh run: every answer to its scan's receives begins (HTTP 200) and breaks
// off, as the answer it lost did. The run ends as an interrupt does: exit 3, the receives
// whose answers were lost named with the time their messages come back (what the DLQ holds
// in flight then is exactly what they took), and the resume line. On FIFO the retries ask
// for the same batch (its attempt id): one receive is lost, not three.
func TestRedriveFirstReceiveFailsForGood(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{true, false} {
		t.Run(queueKind(fifo), func(t *testing.T) {
			t.Parallel()
			p := newPipe(t, fifo)
			var bodies []string
			for i := range 30 {
				bodies = append(bodies, fmt.Sprintf("cut-%02d", i))
			}
			group := ""
			if fifo {
				group = "g"
			}
			fillDLQ(t, p, group, bodies...)
			proxy, err := ddbproxy.New(sqsSrv.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
				return ddbproxy.Fault{Truncate: c.Op == "ReceiveMessage"}
			}
			var out, errOut bytes.Buffer
			start := time.Now()
			code := run(t.Context(), append(p.args("dlq", "redrive", "--yes"), "--endpoint-url", proxy.URL), &out, &errOut)
			took := time.Since(start)
			text := out.String() + errOut.String()
			t.Logf("every receive's answer cut off: exit %d after %s\n%s", code, took.Round(time.Millisecond), text)
			if code != cli.ExitNotDone {
				t.Errorf("exit %d, want %d", code, cli.ExitNotDone)
			}
			lost := map[bool]int{true: 1, false: 3}[fifo]
			wantContains(t, "a scan whose receives fail", text,
				map[bool]string{true: "lost         1 receive got no whole answer (the network, or an answer cut off): it may have taken up to 10 messages",
					false: "lost         3 receives got no whole answer (the network, or answers cut off): each may have taken up to 10 messages"}[fifo]+
					" that nobody can give back; they stay hidden until ",
				"NOT DONE     a receive failed during the scan, before anything moved: the answer from "+proxy.URL+" was cut off while it came (HTTP 200, then unexpected EOF)",
				"(exit 3)", "resume with  pipelinectl dlq redrive --yes ")
			// They come back when the scan's hold (30 s) of the last lost receive ends.
			m := regexp.MustCompile(`hidden until (\d\d:\d\d:\d\dZ) at the latest`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no time the hidden messages come back in:\n%s", text)
			}
			until, _ := time.Parse("15:04:05Z", m[1])
			lo, hi := start.UTC().Add(dlq.RedriveHold).Truncate(time.Second), start.UTC().Add(took+dlq.RedriveHold)
			at := time.Date(lo.Year(), lo.Month(), lo.Day(), until.Hour(), until.Minute(), until.Second(), 0, time.UTC)
			if at.Before(lo) || at.After(hi) {
				t.Errorf("hidden until %s, want between %s and %s (the run's start and end, plus the hold)", m[1], lo.Format(time.TimeOnly), hi.Format(time.TimeOnly))
			}
			if inFlight := queueCounts(t, p.dlqURL)[1]; inFlight != int64(10*lost) {
				t.Errorf("the DLQ holds %d in flight, want %d: what the %d lost receives took, and nothing else", inFlight, 10*lost, lost)
			}
			if strings.Contains(text, "operation error") {
				t.Errorf("the SDK's chain reaches the operator:\n%s", text)
			}
		})
	}
}
