//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
)

// TestLargeMessages: the e2e assembly's queues take SQS's largest messages (maxMessageSize
// 1048576), and the consumer construct made that the function's MAX_BODY_BYTES: a 600 KB
// message runs its effect once. The same message reaching a consumer that accepts less (its
// MAX_BODY_BYTES set below the queue's, as when a queue allows more than the function was told)
// is bad input: dead-lettered at its first receive with its reason, its body whole.
func TestLargeMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		maxBody  string // "" : the template's
		dead     bool
		wantBody int
	}{
		{"accepted", "", false, 600 * 1024},
		{"larger than the function accepts", "262144", true, 600 * 1024},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "size")
			p := w.pipeline(false)
			vars, err := w.d.Env(p.Consumer)
			if err != nil {
				t.Fatal(err)
			}
			if vars["MAX_BODY_BYTES"] != "1048576" {
				t.Fatalf("the template's MAX_BODY_BYTES is %q, want the queue's 1048576 (make e2e-synth sets maxMessageSize)", vars["MAX_BODY_BYTES"])
			}
			var overrides map[string]string
			if c.maxBody != "" {
				overrides = map[string]string{"MAX_BODY_BYTES": c.maxBody}
			}
			e := w.envWith(p.Consumer, w.consumerOutput, overrides)
			key := "large-" + strings.ReplaceAll(c.name, " ", "-")
			msg := body(key, strings.Repeat("x", c.wantBody-len(body(key))))
			if len(msg) != c.wantBody {
				t.Fatalf("built a %d-byte body, want %d", len(msg), c.wantBody)
			}
			pl := w.poller(p, w.invoker(e))
			w.send(p.Queue, []message{{Body: msg}})
			stop := w.runPoller(pl)
			took := w.waitFor("the large message handled", w.patience(p.Queue), func() bool {
				return w.depth(p.Queue) == 0 && (w.ledger.Effects()[key] > 0 || w.depth(p.DLQ) > 0)
			})
			stop()
			w.quiesce()
			if c.dead {
				if n := w.ledger.Effects()[key]; n != 0 {
					t.Errorf("effect ran %d times, want 0: the body is over the function's MAX_BODY_BYTES", n)
				}
				// The consumer sends a bad message to the DLQ, then reports it done. When the
				// invocation dies in between (its deadline, on a loaded machine), SQS delivers
				// the message again and it is sent again: a standard DLQ may hold it twice,
				// never not at all, and each copy is whole, with its reason.
				msgs := w.drain(p.DLQ)
				if len(msgs) == 0 || len(msgs) > 1 && len(w.recv.of(msg)) < len(msgs) {
					t.Fatalf("DLQ holds %d messages, after %d receives: want the large one, once per receive at most", len(msgs), len(w.recv.of(msg)))
				}
				var reason string
				for _, m := range msgs {
					reason = aws.ToString(m.MessageAttributes["DeadLetterReason"].StringValue)
					if !strings.Contains(reason, "262144") || len(aws.ToString(m.Body)) != c.wantBody {
						t.Errorf("DLQ copy: reason %q, body %d bytes; want a reason naming the limit 262144 and the whole %d-byte body", reason, len(aws.ToString(m.Body)), c.wantBody)
					}
				}
				report(t, "a %d-byte message over MAX_BODY_BYTES 262144: dead-lettered in %v, reason %q (%d receives, %d copies in the DLQ)", c.wantBody, took.Round(100_000_000), reason, len(w.recv.of(msg)), len(msgs))
				return
			}
			checkOnce(t, w.ledger, []string{key})
			if d := w.depth(p.DLQ); d != 0 {
				t.Errorf("DLQ depth %d, want 0", d)
			}
			report(t, "a %d-byte message on a queue taking 1 MiB: effect once in %v", c.wantBody, took.Round(100_000_000))
		})
	}
}

// TestTenLargestMessages: ten messages just under SQS's largest size (bodies of 1,048,000
// bytes; 1 MiB counts body and attributes) make more than Lambda's 6 MB invocation payload,
// so the mapping hands them over in several smaller batches, as Lambda's does, though the
// batch size is 10 and the batching window would wait for all ten. Each runs its effect once
// in the consumer binary, and no invocation's event is over 6 MB.
func TestTenLargestMessages(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "largest")
	p := w.pipeline(false)
	var want []string
	for i := range 10 {
		key := fmt.Sprintf("largest-%d", i)
		want = append(want, key)
		msg := body(key, strings.Repeat("x", 1_048_000-len(body(key)))) // 1 MiB less a margin for the send's envelope
		if _, err := w.sq.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(w.d.QueueURL[p.Queue]), MessageBody: aws.String(msg)}); err != nil {
			t.Fatal(err) // one at a time: a SendMessageBatch carries 1 MiB in all
		}
	}
	var mu sync.Mutex
	var batches []string
	rec := watched(t, w.invoker(w.env(p.Consumer, w.consumerOutput)), func(ev events.SQSEvent, size int) {
		if size > poller.MaxPayload {
			t.Errorf("an invocation of %d records and %d bytes, over Lambda's %d", len(ev.Records), size, poller.MaxPayload)
		}
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, fmt.Sprintf("%d records in %d bytes", len(ev.Records), size))
	})
	if p.Mapping.BatchSize < 10 {
		t.Fatalf("the e2e mapping's batch size is %d: the test needs 10 to show the payload limit splitting a batch", p.Mapping.BatchSize)
	}
	stop := w.runPoller(w.poller(p, rec))
	took := w.waitFor("ten messages of about 1 MiB handled", w.patience(p.Queue), func() bool {
		return len(w.ledger.Effects()) >= len(want) && w.depth(p.Queue) == 0
	})
	stop()
	w.quiesce()
	checkOnce(t, w.ledger, want)
	if d := w.depth(p.DLQ); d != 0 {
		t.Errorf("DLQ depth %d, want 0", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) < 2 {
		t.Errorf("invocations %v, want at least two: ten records of about 1 MiB do not fit one 6 MB event", batches)
	}
	report(t, "ten 1,048,000-byte bodies, batch size %d: each effect once in %v, invocations: %s", p.Mapping.BatchSize, took.Round(100_000_000), strings.Join(batches, ", "))
}
