package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
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
	const n, groups = 1000, 30
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
	bad := map[int]bool{340: true, 510: true, 850: true} // groups g10, g0, g10
	for chunk := range slices.Chunk(all, 10) {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for _, m := range chunk {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), MessageBody: aws.String(m.body)}
			var seqNo int
			fmt.Sscanf(m.body[strings.Index(m.body, `"seq":`)+6:], "%d", &seqNo)
			if bad[seqNo] {
				e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{consume.AttrDeadLetterReason: {DataType: aws.String("String"), StringValue: aws.String("invalid_input: test")}}
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
		case "SendMessage": // 3 responses lost after the send landed, then 2 connections cut before it
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
	redrive := func(ctx context.Context, extra ...string) (int, redriveSummary) {
		var out, errOut bytes.Buffer
		start := time.Now()
		code := run(context.WithValue(ctx, holdKey{}, hold), append(slices.Clip(args), extra...), &out, &errOut)
		var s redriveSummary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil && code != exitNotDone {
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
	// (its first second or two) or in the move. At --rate 20 they move at most 12 x 3.5 s x
	// 20/s = 840 messages: none finishes the 997 before its interrupt, however fast the
	// machine.
	rng := rand.New(rand.NewPCG(1, 2))
	interrupts := 0
	for range 12 {
		ctx, cancel := context.WithCancel(t.Context())
		d := time.Duration(300+rng.IntN(3200)) * time.Millisecond
		timer := time.AfterFunc(d, cancel)
		code, _ := redrive(ctx, "--rate", "20")
		timer.Stop()
		cancel()
		if code == exitNotDone {
			interrupts++
		} else if code != exitOK {
			t.Fatalf("interrupted run: exit %d", code)
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
	t.Logf("network cut: exit %d, %d faults injected (%d sends, %d deletes, %d receives seen)", code, proxy.Injected.Load(), sends.Load(), deletes.Load(), receives.Load())
	// And the rerun that finishes the job.
	code, s = redrive(t.Context())
	if code != exitOK || !s.Done {
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
		if code == exitOK || !strings.Contains(errOut, want) {
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
	if code != exitNotDone {
		t.Errorf("exit %d after SIGINT, want %d", code, exitNotDone)
	}
	inFlight := queueCounts(t, p.dlqURL)[1]
	if inFlight != 0 {
		t.Errorf("DLQ after SIGINT: %d still in flight, want all given back", inFlight)
	}
	resume := strings.TrimSpace(proc.Output()[strings.Index(proc.Output(), "resume with  ")+len("resume with  "):])
	resume = strings.SplitN(resume, "\n", 2)[0]
	rerunCode, rerun, _ := ctl(t, strings.Fields(resume)[1:]...)
	if rerunCode != exitOK {
		t.Fatalf("the printed resume command: exit %d\n%s", rerunCode, rerun)
	}
	got := drainAll(t, p.queueURL)
	seen := map[string]int{}
	for _, m := range got {
		seen[m.body]++
	}
	once := 0
	for _, b := range bodies {
		if seen[b] == 1 {
			once++
		} else {
			t.Errorf("%s is in the destination %d times, want once", b, seen[b])
		}
	}
	if q := queueCounts(t, p.dlqURL); q[0] != 1 {
		t.Errorf("DLQ after the rerun = %v, want the bad message only", q)
	}
	t.Logf("FIGURE SIGINT mid-redrive: exit %d, stopped %s after the signal, %d in flight after; after the printed resume command %d of %d are in the destination once (%d messages there)",
		code, stopped.Round(time.Millisecond), inFlight, once, len(bodies), len(got))
}
