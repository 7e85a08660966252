//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
)

// TestSoak first runs a healthy phase (both pipelines, good messages and a scheduled run
// each, no fault): no alarm of the template may go to ALARM. It then pushes -soak.messages messages through the standard pipeline while -soak.fail of
// them fail transiently on their first delivery (a DynamoDB outage longer than the store's
// retries: the record is reported and redelivered), -soak.poison of them are poison, and
// DynamoDB throttles 5% of all calls (absorbed by retries). It prints lost (must be 0),
// effects run twice (must be 0), the DLQ (must equal the poison set), messages per second and
// wall time. `make check` runs a short soak; `make soak` runs 100,000 messages.
//
// It is the one scenario that is not parallel, so it runs before the others, alone: its
// healthy phase proves no alarm fires (a redelivery there is 9 minutes on the 30x alarm
// clock) and its messages/s figure is the pipeline's own, neither shared with other work.
func TestSoak(t *testing.T) {
	checkOnly(t)
	n := *soakMessages
	w := newWorld(t, "soak")
	w.watchAlarms()
	p := w.pipeline(false)
	rng := rand.New(rand.NewPCG(7, 11))
	healthy := w.healthyPhase(100)

	var want []string
	var poison []string
	msgs := make([]message, 0, n)
	for i := range n {
		if rng.Float64() < *soakPoison {
			b := poisonBodies[i%len(poisonBodies)]
			b = fmt.Sprintf(`{"soak":%d,"bad":%q}`, i, b) // distinct, and without a key
			poison = append(poison, b)
			msgs = append(msgs, message{Body: b})
			continue
		}
		key := fmt.Sprintf("soak-%06d", i)
		want = append(want, key)
		msgs = append(msgs, message{Body: body(key)})
	}
	env, err := w.d.Env(p.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	prefix := env["IDEMPOTENCY_KEY_PREFIX"] + "#"
	failing := map[string]bool{} // by record id, "<prefix>#<key>", as the proxy sees it
	for _, k := range want {
		if rng.Float64() < *soakFail {
			failing[prefix+k] = true
		}
	}
	vis := w.visibility(p.Queue)
	out := newOutage(func(k string) bool { return failing[k] }, vis)
	th := &throttle{rate: 0.05, streak: map[string]int{}, rng: rand.New(rand.NewPCG(3, 5))}
	w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if f, ok := out.fault(c); ok {
			return f
		}
		return th.fault(c)
	}

	start := time.Now()
	pl, stop := w.poll(p, *soakPollers)
	var wg sync.WaitGroup
	const senders = 4
	for s := range senders {
		wg.Go(func() {
			var mine []message
			for i := s * 10; i < len(msgs); i += senders * 10 {
				mine = append(mine, msgs[i:min(i+10, len(msgs))]...)
			}
			w.send(p.Queue, mine)
		})
	}
	wg.Wait()
	sentIn := time.Since(start)
	// A bound on a broken run, not a speed: the redrive policy's span (w.patience) plus a
	// second per 50 messages, which even a loaded machine processes faster.
	limit := w.patience(p.Queue) + time.Duration(n/50)*time.Second
	var firstPass, lastEffect time.Duration
	w.waitFor("every effect, the poison dead-lettered and an empty queue", limit, func() bool {
		effects := w.ledger.Effects()
		if firstPass == 0 && len(effects) >= len(healthy)+len(want)-len(failing) {
			steady := 0 // effects of the keys that never failed: redelivered ones must not count
			for k := range effects {
				if !failing[prefix+k] {
					steady++
				}
			}
			if steady == len(healthy)+len(want)-len(failing) {
				firstPass = time.Since(start) // the transiently failed wait a visibility timeout
			}
		}
		if len(effects) < len(healthy)+len(want) {
			return false
		}
		if lastEffect == 0 {
			lastEffect = time.Since(start)
		}
		return w.depth(p.DLQ) == len(poison) && w.depth(p.Queue) == 0
	})
	wall := time.Since(start)
	stop()
	w.quiesce()

	lost, twice, unexpected := w.ledger.Check(append(slices.Clone(healthy), want...))
	var dead []string
	for _, m := range w.drain(p.DLQ) {
		dead = append(dead, *m.Body)
	}
	slices.Sort(dead)
	slices.Sort(poison)
	dlqOK := slices.Equal(dead, poison)
	oc := w.ledger.Outcomes()
	report(t, "messages %d (valid %d, poison %d), transient first-delivery failures %d keys (%.1f%%), throttles/5xx injected %d; lost %d, effects twice %d, unexpected %d; DLQ %d = poison set: %v; %d pollers, %d invocations; first pass (all but the transient failures) in %v = %.0f messages/s; all effects in %v (the failed ones after one %v visibility timeout); wall time %v; sent in %v",
		n, len(want), len(poison), out.keys(), 100*float64(out.keys())/float64(len(want)), w.dynamo.Injected.Load(),
		len(lost), len(twice), len(unexpected), len(dead), dlqOK, *soakPollers, pl.Stats.Invocations.Load(),
		firstPass.Round(10*time.Millisecond), float64(len(want)-len(failing))/firstPass.Seconds(), lastEffect.Round(10*time.Millisecond), vis,
		wall.Round(10*time.Millisecond), sentIn.Round(10*time.Millisecond))
	t.Logf("outcomes %v", oc)
	if len(lost)+len(twice)+len(unexpected) > 0 {
		t.Errorf("lost %v, twice %v, unexpected %v", head(lost), head(twice), head(unexpected))
	}
	if !dlqOK {
		t.Errorf("DLQ (%d) differs from the poison set (%d)", len(dead), len(poison))
	}
	if len(failing) > 0 && out.keys() == 0 {
		t.Error("no transient failure was injected")
	}
	// The faulty phase: the poison pages through the DLQ alarm, the throttling through the
	// table's.
	table := w.consumerTable(p)
	must := []alarmRef{dlqAlarm(p.DLQ), watching("write throttles on "+table, "TableName", table, "DynamoDB/WriteThrottleEvents", "DynamoDB/ThrottledRequests")}
	w.expectAlarms("soak: 1% poison, 5% throttling", start, w.alarmWait(must...), must...)
}
