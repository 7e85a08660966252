//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
)

// TestFairQueue: a standard queue used as a fair queue, each message carrying its tenant as
// MessageGroupId (as the dispatcher sends an item's group), keeps standard semantics. The
// first message of tenant-0 fails every time (its store call gets a 500); the nine messages
// of tenant-0 sent right behind it, in the same SendMessageBatch, reach the function in the
// same invocation (checked) and run at their first receive, as do the other tenants'. On a
// FIFO queue the consumer would skip them and hand them back behind the failure
// (stop-the-group). The function sees each record's tenant in its MessageGroupId, as on SQS,
// and a bad message of tenant-4 reaches the DLQ with its tenant, so a redrive brings it
// back whole.
func TestFairQueue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "fair")
	p := w.pipeline(false)
	const stuck = "fair-stuck"
	w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if strings.HasSuffix(c.Key, "#"+stuck) {
			return ddbproxy.Fault{Status: 500, Type: "InternalServerError"}
		}
		return ddbproxy.Fault{}
	}
	const bad = "not json, tenant-4"
	msgs := []message{{Body: body(stuck), Group: "tenant-0"}}
	tenant := map[string]string{body(stuck): "tenant-0", bad: "tenant-4"}
	var want []string
	for tn := range 4 {
		for i := range 9 {
			key := fmt.Sprintf("fair-%d-%d", tn, i)
			want = append(want, key)
			g := fmt.Sprintf("tenant-%d", tn)
			msgs = append(msgs, message{Body: body(key), Group: g})
			tenant[body(key)] = g
		}
	}
	msgs = append(msgs, message{Body: bad, Group: "tenant-4"})

	var mu sync.Mutex
	seen := map[string]string{} // body: the MessageGroupId the function got
	behind := 0                 // tenant-0's messages in the failing one's invocation, after it
	envs := make([]poller.Invoker, 2)
	for i := range envs {
		envs[i] = watched(t, w.invoker(w.env(p.Consumer, w.consumerOutput)), func(ev events.SQSEvent, _ int) {
			mu.Lock()
			defer mu.Unlock()
			failing := false
			for _, r := range ev.Records {
				seen[r.Body] = r.Attributes["MessageGroupId"]
				if r.Body == body(stuck) {
					failing = true
				} else if failing && r.Attributes["MessageGroupId"] == "tenant-0" && len(w.recv.of(r.Body)) == 1 {
					behind++
				}
			}
		})
	}
	w.send(p.Queue, msgs)
	pl := w.poller(p, envs...)
	stop := w.runPoller(pl)
	// The failing message's outcome line, not its receive: stopping the poller cancels an
	// invocation still running, whose record then reports nothing.
	took := w.waitFor("every other message's effect, the bad one in the DLQ and the failing one's store error", w.patience(p.Queue), func() bool {
		return len(w.ledger.Effects()) >= len(want) && w.ledger.Outcomes()[telemetry.OutcomeStoreError] >= 1 && w.depth(p.DLQ) >= 1
	})
	stop()
	w.quiesce()

	checkOnce(t, w.ledger, want)
	if n := w.ledger.Effects()[stuck]; n != 0 {
		t.Errorf("the failing message's effect ran %d times, want 0 (its store call always fails)", n)
	}
	// Holding back is what a fair queue must never do: a record skipped because another of
	// its group failed, as on a FIFO queue. A record received again for another reason is
	// at-least-once delivery on a loaded machine (the e2e consumer has 3 s): not started
	// before the invocation's deadline, cut by it, or in an invocation that timed out as a
	// whole.
	var heldBack []string
	late := map[string]bool{} // bodies of records skipped or abandoned at the deadline
	for _, r := range w.ledger.Records() {
		switch r.Outcome {
		case telemetry.OutcomeSkippedGroupFailed:
			heldBack = append(heldBack, w.recv.body(r.MessageID))
		case telemetry.OutcomeSkippedDeadline, telemetry.OutcomeAbandoned:
			late[w.recv.body(r.MessageID)] = true
		case telemetry.OutcomeStoreError:
			// The invocation's deadline cut the record's store call (the consumer logs that
			// as a store error, the reason says the deadline).
			if strings.Contains(r.Reason, context.DeadlineExceeded.Error()) {
				late[w.recv.body(r.MessageID)] = true
			}
		}
	}
	if len(heldBack) > 0 {
		t.Errorf("%d records skipped because another of their group failed: %q; a failure in a tenant's group held back the messages behind it, as on a FIFO queue", len(heldBack), head(heldBack))
	}
	var again, unexplained []string
	for _, k := range want {
		if n := len(w.recv.of(body(k))); n > 1 {
			again = append(again, fmt.Sprintf("%s %d times", k, n))
			if !late[body(k)] {
				unexplained = append(unexplained, k)
			}
		}
	}
	fails := w.invokeFailures()
	if len(unexplained) > 0 && len(fails) == 0 {
		t.Errorf("received %v: %q received again with no deadline outcome and no invocation failed as a whole to explain it "+
			"(the mapping: %d invocations, %d records, %d reported failed, %d deleted, %d deletes failed)", again, unexplained,
			pl.Stats.Invocations.Load(), pl.Stats.Received.Load(), pl.Stats.ReportedFailed.Load(), pl.Stats.Deleted.Load(), pl.Stats.DeleteErrors.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if behind == 0 {
		t.Errorf("no message of tenant-0 shared an invocation with the failing one, after it: the test shows nothing about holding back")
	}
	dead := w.drain(p.DLQ)
	if len(dead) != 1 || aws.ToString(dead[0].Body) != bad || dead[0].Attributes["MessageGroupId"] != "tenant-4" {
		var got []string
		for _, m := range dead {
			got = append(got, aws.ToString(m.Body)+" "+m.Attributes["MessageGroupId"])
		}
		t.Errorf("DLQ holds %q, want the bad message with its tenant-4", got)
	}
	for b, g := range tenant {
		if seen[b] != g {
			t.Errorf("the function got MessageGroupId %q for %s, want its tenant %q", seen[b], b, g)
		}
	}
	if oc := w.ledger.Outcomes(); oc[telemetry.OutcomeStoreError] < 1 {
		t.Errorf("outcomes %v, want the failing message's store_error", oc)
	}
	report(t, "a fair queue, 4 tenants of 9 messages and one of tenant-0's failing ahead of them (%d of its own behind it in its invocation): %d effects once, none held back; "+
		"a bad message dead-lettered with its tenant; in %v; received again (deadline skips or %d invocations failed as a whole): %d", behind, len(want), took.Round(100_000_000), len(fails), len(again))
}
