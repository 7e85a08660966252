package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/test/internal/stats"
)

type key struct {
	contender string
	batch     int
}

type report struct {
	opts       options
	contenders []contender
	sets       map[int]*eventSet
	results    map[key][]result
	calls      map[key]callCounts
	machine    []string
	quota      map[qkey][]result // Lambda-shaped runs (-memory)
	fallback   string            // why the Lambda-shaped runs are unconfined ("" when they are not)
}

func median(xs []float64) float64 {
	m, _, _ := stats.Median(xs)
	return m
}

func (r *report) rates(k key) []float64 {
	var out []float64
	for _, res := range r.results[k] {
		out = append(out, res.perSecond())
	}
	return out
}

// ratio is ours ÷ the contender: the ratio of the medians, and the range of the per-round
// ratios (each round runs the contenders back to back, so its ratio shares that round's noise).
func (r *report) ratio(c string, b int) (med, lo, hi float64, ok bool) {
	return ratioOf(r.rates(key{"ours", b}), r.rates(key{c, b}))
}

// ratioOf is the ratio of the medians of ours and other, and the range of the per-round
// ratios; ok is false unless both have the same number of rounds.
func ratioOf(ours, other []float64) (med, lo, hi float64, ok bool) {
	if len(ours) == 0 || len(other) == 0 || len(ours) != len(other) {
		return 0, 0, 0, false
	}
	var per []float64
	for i := range ours {
		per = append(per, ours[i]/other[i])
	}
	return median(ours) / median(other), slices.Min(per), slices.Max(per), true
}

func (r *report) write(sb *strings.Builder) {
	o := r.opts
	w := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	args := strings.Join(os.Args[1:], " ")
	w("## Peer comparison: idempotent SQS batches on DynamoDB Local\n\n")
	w("Command: `go run ./test/bench/peers %s`\n\n", args)
	for _, m := range r.machine {
		w("- %s\n", m)
	}
	w("\nWork per contender and batch size: %d timed records (every %d-th repeats the key and body of a record completed in an earlier batch: %d%% duplicates), after %d untimed warm-up records with new keys, ",
		o.records, o.dupEvery, 100/o.dupEvery, max(o.warmup, 1))
	w("in SQS events processed one after another as by one warm Lambda execution environment, simulated timeout %s. ", o.timeout)
	w("Every run has its own fresh table (partition key `id` string, TTL on `expiration`) on the same DynamoDB Local; per round and batch size the contenders run back to back in the order %s. ", r.order())
	w("The business effect only JSON-parses the body, in every contender but bin (the deployed default, LogEffect: one log line; ours' and bin's key extraction parses the body too). ")
	w("Every run must end with 0 batch item failures and exactly one effect per key, or the command fails.\n\n")

	if len(o.memory) > 0 {
		r.writeCalls(sb)
		r.writeQuota(sb)
		w("\n### What each guarantees\n\n| contender | guarantees |\n|---|---|\n")
		for _, c := range r.contenders {
			w("| %s | %s |\n", c.name, c.guarantees)
		}
		return
	}
	if o.latency > 0 {
		w("### Throughput (%d timed round(s), every DynamoDB call delayed %s by a proxy: a model of the network round trip)\n\n", o.rounds, o.latency)
	} else {
		w("### Throughput (%d timed round(s), straight to DynamoDB Local)\n\n", o.rounds)
	}
	w("| contender | batch | records in flight | records/s median (min–max) | ours ÷ contender: ratio of medians (per-round range) | CPU µs per record, median: contender + DynamoDB Local |\n")
	w("|---|---:|---|---:|---:|---:|\n")
	for _, b := range o.batches {
		for _, c := range r.contenders {
			rates := r.rates(key{c.id, b})
			if len(rates) == 0 {
				continue
			}
			ratio := "1"
			if c.id != "ours" {
				ratio = "–"
				if med, lo, hi, ok := r.ratio(c.id, b); ok {
					ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", med, lo, hi)
				}
			}
			var client, server []float64
			for _, res := range r.results[key{c.id, b}] {
				client = append(client, res.ClientCPU/float64(res.Records)*1e6)
				server = append(server, res.ServerCPU/float64(res.Records)*1e6)
			}
			w("| %s | %d | %s | %.0f (%.0f–%.0f) | %s | %.0f + %.0f |\n", c.name, b, c.concurrency(b), median(rates), slices.Min(rates), slices.Max(rates), ratio,
				median(client), median(server))
		}
	}

	r.writeCalls(sb)

	w("\n### Targets: ours against each peer\n\n")
	w("| target | measured: ours ÷ contender records/s, ratio of medians (per-round range) | met | for context: contender's own CPU per record ÷ ours |\n|---|---|---|---|\n")
	target := func(name, c string, b int, want float64) {
		med, lo, hi, ok := r.ratio(c, b)
		if !ok {
			return
		}
		met := "yes"
		if med < want {
			met = "**no**"
		}
		w("| %s | %.2f (%.2f–%.2f) | %s | %.2f |\n", name, med, lo, hi, met, r.cpu(c, b)/r.cpu("ours", b))
	}
	for _, b := range o.batches {
		if b == 100 {
			target("ours >= 1.5x Powertools TypeScript, batches of 100", "ts", b, 1.5)
			target("ours >= 10x Powertools Python, batches of 100", "py", b, 10)
		}
	}
	for _, b := range o.batches {
		target(fmt.Sprintf("ours >= 80%% of the raw-write limit, batches of %d", b), "raw", b, 0.8)
	}

	w("\n### What each guarantees\n\n| contender | guarantees |\n|---|---|\n")
	for _, c := range r.contenders {
		w("| %s | %s |\n", c.name, c.guarantees)
	}
	w("\n%s", notes)
}

const notes = `### How to read it

- One machine runs everything: DynamoDB Local's JVM spends about as much CPU per record as the
  fastest contender does, on the same cores. Throughput ratios are therefore compressed toward
  1; the contender's own CPU per record (last column of the targets) is the figure that does
  not depend on whose server shares the machine. On DynamoDB itself the server's cost is not on
  the function's CPU and each call waits a network round trip, which favours concurrency (ours,
  TypeScript) over a sequential loop (Python) far more than here.
- Ours is the consumer as a user deploys it with their own effect: a main on package consume
  (test/bench/peers/oursfn) whose effect parses the body like every peer's, built with the
  bundling flags and invoked through a local Lambda Runtime API (internal/lambdart: one
  HTTP round trip and the event's JSON per invocation are inside its time, as in Lambda), with
  INFO logs (one JSON line per record, to a pipe read by the orchestrator). Bin is the
  deployed functions/consumer binary, the same but for its default effect, LogEffect, which
  writes a second log line per record. The Powertools contenders are called in-process from a
  loop over events read before the clock starts, with no per-record logs. Both differences
  count against ours.
- Same work otherwise: the same events, key = body field idempotencyKey, payload hash checked,
  lock expiry from a 30 s simulated deadline, an effect that only parses the body, all records
  of a batch in flight at once (Python: one at a time, BatchProcessor's design), SDK retries as
  each library ships them (none needed: every run must end with 0 failures).
- Noise: the rounds alternate contenders so each round's ratio shares its noise; the per-round
  range shows how much is left. Running the same binary as -candidate measures the noise floor.
`

// cpu is the median CPU the contender's own process spent per timed record, in µs.
func (r *report) cpu(c string, b int) float64 {
	var xs []float64
	for _, res := range r.results[key{c, b}] {
		xs = append(xs, res.ClientCPU/float64(res.Records)*1e6)
	}
	if len(xs) == 0 {
		return 0
	}
	return median(xs)
}

func (r *report) order() string {
	var ids []string
	for _, c := range r.contenders {
		ids = append(ids, c.id)
	}
	return strings.Join(ids, ", ")
}

// writeCalls writes the DynamoDB calls per record of the counting pass.
func (r *report) writeCalls(sb *strings.Builder) {
	o := r.opts
	w := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	if len(r.calls) > 0 {
		w("\n### DynamoDB calls per record (untimed pass through a counting reverse proxy, by X-Amz-Target)\n\n")
		w("| contender | batch | per new record | per duplicate | TCP connections opened (whole run, warm-up included) |\n|---|---:|---|---|---:|\n")
		for _, b := range o.batches {
			for _, c := range r.contenders {
				cc, ok := r.calls[key{c.id, b}]
				if !ok {
					continue
				}
				if cc.Irregular != "" {
					w("| %s | %d | irregular: %s | | %d |\n", c.name, b, cc.Irregular, cc.Conns)
					continue
				}
				w("| %s | %d | %d: %s | %d: %s | %d |\n", c.name, b, total(cc.PerNew), formatOps(cc.PerNew), total(cc.PerDup), formatOps(cc.PerDup), cc.Conns)
				if len(cc.Other) > 0 {
					w("| %s | %d | table-level calls in total: %s | | |\n", c.name, b, formatOps(cc.Other))
				}
			}
		}
	}

}
