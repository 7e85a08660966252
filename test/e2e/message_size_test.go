//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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
				msgs := w.drain(p.DLQ)
				if len(msgs) != 1 {
					t.Fatalf("DLQ holds %d messages, want the large one", len(msgs))
				}
				reason := aws.ToString(msgs[0].MessageAttributes["DeadLetterReason"].StringValue)
				if !strings.Contains(reason, "262144") || len(aws.ToString(msgs[0].Body)) != c.wantBody {
					t.Errorf("DLQ copy: reason %q, body %d bytes; want a reason naming the limit 262144 and the whole %d-byte body", reason, len(aws.ToString(msgs[0].Body)), c.wantBody)
				}
				report(t, "a %d-byte message over MAX_BODY_BYTES 262144: dead-lettered at its first receive in %v, reason %q", c.wantBody, took.Round(100_000_000), reason)
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
