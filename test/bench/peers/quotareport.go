package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// qkey identifies the results of one contender, batch size and memory size in Lambda-shaped
// runs.
type qkey struct {
	contender string
	batch, mb int
}

// Prices, us-east-1, on-demand, free tiers not subtracted: the figures section 2 of
// docs/benchmarks.md (test/bench/cost) uses, with its sources.
const (
	priceGBSecond = 0.0000133334 // Lambda arm64, per GB-s, https://aws.amazon.com/lambda/pricing/
	priceRequest  = 0.20 / 1e6   // Lambda, per invocation, same page
	priceWRU      = 0.625 / 1e6  // DynamoDB on-demand write request unit, https://aws.amazon.com/dynamodb/pricing/on-demand/
	priceSQS      = 0.40 / 1e6   // SQS standard request (64 KB chunk), https://aws.amazon.com/sqs/pricing/
	// sqsPerMessage: the event source's ReceiveMessage and DeleteMessageBatch carry at most 10
	// messages each, whatever the function's batch size.
	sqsPerMessage = 0.2
)

// cost is the cost of a million records for one contender, batch and memory size.
type cost struct {
	billedMS                   float64 // mean wall time per batch, rounded up to 1 ms (Lambda's billing unit)
	lambda, requests, ddb, sqs float64 // dollars per million records
	writesPerRecord            float64
	writesMeasured             bool
}

func (c cost) total() float64 { return c.lambda + c.requests + c.ddb + c.sqs }

func (r *report) qrates(k qkey) []float64 {
	var out []float64
	for _, res := range r.quota[k] {
		out = append(out, res.perSecond())
	}
	return out
}

func (r *report) qcpu(k qkey) float64 {
	// Pooled rather than a median of rounds: ours' CPU is read in 10 ms ticks, and a round of a
	// few hundred records is a few dozen ticks.
	var cpu float64
	var records int
	for _, res := range r.quota[k] {
		cpu += res.ClientCPU
		records += res.Records
	}
	if records == 0 {
		return 0
	}
	return cpu / float64(records) * 1e6
}

// qratio is ours ÷ the contender in Lambda-shaped runs (see ratio).
func (r *report) qratio(c string, b, mb int) (med, lo, hi float64, ok bool) {
	return ratioOf(r.qrates(qkey{"ours", b, mb}), r.qrates(qkey{c, b, mb}))
}

// qcost prices a million records from the median run: Lambda duration (mean per batch,
// rounded up to the millisecond) and requests, DynamoDB writes per record as counted through
// the proxy (2 per new and 1 per duplicate record when no count ran), SQS's receive and delete.
func (r *report) qcost(k qkey) (cost, bool) {
	rates := r.qrates(k)
	set := r.sets[k.batch]
	if len(rates) == 0 || set == nil {
		return cost{}, false
	}
	// (records per batch) ÷ (records per second): the mean wall time of one batch.
	secondsPerBatch := float64(set.TimedCount) / median(rates) / float64(len(set.Timed))
	c := cost{billedMS: math.Ceil(secondsPerBatch * 1000)}
	batchesPerM := 1e6 * float64(len(set.Timed)) / float64(set.TimedCount)
	c.lambda = batchesPerM * c.billedMS / 1000 * float64(k.mb) / 1024 * priceGBSecond
	c.requests = batchesPerM * priceRequest
	dupShare := float64(set.Duplicates) / float64(set.TimedCount)
	newW, dupW := 2.0, 1.0
	if cc, ok := r.calls[key{k.contender, k.batch}]; ok && cc.Irregular == "" {
		newW, dupW, c.writesMeasured = float64(total(cc.PerNew)), float64(total(cc.PerDup)), true
	}
	c.writesPerRecord = (1-dupShare)*newW + dupShare*dupW
	c.ddb = 1e6 * c.writesPerRecord * priceWRU
	c.sqs = 1e6 * sqsPerMessage * priceSQS
	return c, true
}

// cheapest is the memory size with the lowest cost per million records for a contender.
func (r *report) cheapest(c string, b int) (mb int, best cost, ok bool) {
	for _, m := range r.opts.memory {
		if cc, found := r.qcost(qkey{c, b, m}); found && (!ok || cc.total() < best.total()) {
			mb, best, ok = m, cc, true
		}
	}
	return mb, best, ok
}

func (r *report) writeQuota(sb *strings.Builder) {
	o := r.opts
	w := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	w("### Lambda-shaped runs: records/s per execution environment under Lambda's CPU share (%d timed round(s), every DynamoDB call delayed %s)\n\n", o.rounds, o.latency)
	if r.fallback != "" {
		w("**NO CPU QUOTA: these runs are UNCONFINED (every core of the machine), not Lambda-shaped: %s.** The memory sizes below only price the runs.\n\n", r.fallback)
	} else {
		w("Each contender's process runs its warm-up unconfined, then joins a cgroup (v1 `cpu` controller) whose quota is Lambda's CPU share of the memory size (`cpu.cfs_quota_us` = round(100000 × MB / 1769) per `cpu.cfs_period_us` = 100000: 1,769 MB = one vCPU) for the timed part; DynamoDB Local, the delaying proxy and the orchestrator (with ours' Runtime API) run outside it.\n\n")
	}
	w("| memory (CPU quota per 100 ms) | batch | contender | records/s per environment, median (min–max) | ours ÷ contender (per-round range) | CPU µs per record | billed ms per batch | $ per million records |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, mb := range o.memory {
		for _, b := range o.batches {
			for _, c := range r.contenders {
				k := qkey{c.id, b, mb}
				rates := r.qrates(k)
				if len(rates) == 0 {
					continue
				}
				ratio := "1"
				if c.id != "ours" {
					ratio = "–"
					if med, lo, hi, ok := r.qratio(c.id, b, mb); ok {
						ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", med, lo, hi)
					}
				}
				cc, _ := r.qcost(k)
				w("| %d MB (%s) | %d | %s | %.0f (%.0f–%.0f) | %s | %.0f | %.0f | $%.4f |\n", mb, r.quotaLabel(mb), b, c.name,
					median(rates), slices.Min(rates), slices.Max(rates), ratio, r.qcpu(k), cc.billedMS, cc.total())
			}
		}
	}

	w("\n### Cost per million records at each contender's cheapest memory size\n\n")
	w("| batch | contender | cheapest memory | $ per million records | Lambda GB-s | Lambda requests | DynamoDB writes (WRU per record) | SQS receive + delete |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, b := range o.batches {
		for _, c := range r.contenders {
			mb, cc, ok := r.cheapest(c.id, b)
			if !ok {
				continue
			}
			wru := fmt.Sprintf("%.2f", cc.writesPerRecord)
			if !cc.writesMeasured {
				wru += ", assumed"
			}
			w("| %d | %s | %d MB | **$%.4f** | $%.4f | $%.4f | $%.4f (%s) | $%.4f |\n", b, c.name, mb, cc.total(), cc.lambda, cc.requests, cc.ddb, wru, cc.sqs)
		}
	}

	w("\n### Targets under Lambda's CPU share\n\n| target | measured | met |\n|---|---|---|\n")
	met := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	const at = 256
	for _, b := range o.batches {
		for _, t := range []struct {
			c    string
			want float64
			name string
		}{{"ts", 5, "Powertools TypeScript"}, {"py", 10, "Powertools Python"}} {
			if med, lo, hi, ok := r.qratio(t.c, b, at); ok {
				w("| ours >= %gx %s records/s per environment, %d MB, batches of %d | %.2f (%.2f–%.2f) | %s |\n", t.want, t.name, at, b, med, lo, hi, met(med >= t.want))
			}
		}
	}
	// The limit is the raw loop; rawfn is the same writes paying what any Go Lambda
	// function pays (the Runtime API, the event's JSON), the like-for-like limit for ours.
	for _, lim := range []struct{ id, name string }{{"raw", "the raw-write loop's"}, {"rawfn", "the raw writes as a Lambda function's"}} {
		for _, b := range o.batches {
			if med, lo, hi, ok := r.qratio(lim.id, b, at); ok {
				w("| ours >= 90%% of %s records/s, %d MB, batches of %d | %.2f (%.2f–%.2f) | %s |\n", lim.name, at, b, med, lo, hi, met(med >= 0.9))
				ours, raw := r.qcpu(qkey{"ours", b, at}), r.qcpu(qkey{lim.id, b, at})
				w("| ours' CPU per record <= 1.1x %s, %d MB, batches of %d | %.0f ÷ %.0f µs = %.2f | %s |\n", lim.name, at, b, ours, raw, ours/raw, met(ours <= 1.1*raw))
			}
		}
	}
	r.writeTargets21(w, at)
	for _, b := range o.batches {
		omb, ours, ok := r.cheapest("ours", b)
		if !ok {
			continue
		}
		lowest, others := true, []string{}
		for _, c := range []string{"ts", "py"} {
			if mb, cc, ok := r.cheapest(c, b); ok {
				others = append(others, fmt.Sprintf("%s $%.4f at %d MB", c, cc.total(), mb))
				lowest = lowest && ours.total() < cc.total()
			}
		}
		if len(others) > 0 {
			w("| cost per million records at the cheapest memory size: ours the lowest of the three, batches of %d | ours $%.4f at %d MB; %s | %s |\n",
				b, ours.total(), omb, strings.Join(others, "; "), met(lowest))
		}
	}
	w("\n%s", quotaNotes)
}

// writeTargets21 adds the targets against the raw writes as a Lambda function: ours'
// CPU per record within 1.05x, and at least 0.95x its records/s, with the per-round ranges
// (each round's ours ÷ rawfn, paired by round).
func (r *report) writeTargets21(w func(string, ...any), at int) {
	met := map[bool]string{true: "yes", false: "**no**"}
	for _, b := range r.opts.batches {
		ours, raw := qkey{"ours", b, at}, qkey{"rawfn", b, at}
		if len(r.quota[ours]) == 0 || len(r.quota[raw]) == 0 {
			continue
		}
		var cpuRatios []float64
		for i := range min(len(r.quota[ours]), len(r.quota[raw])) {
			o, f := r.quota[ours][i], r.quota[raw][i]
			if o.Records > 0 && f.Records > 0 && f.ClientCPU > 0 {
				cpuRatios = append(cpuRatios, (o.ClientCPU/float64(o.Records))/(f.ClientCPU/float64(f.Records)))
			}
		}
		oc, rc := r.qcpu(ours), r.qcpu(raw)
		lo, hi := oc/rc, oc/rc
		for _, x := range cpuRatios {
			lo, hi = min(lo, x), max(hi, x)
		}
		w("| ours' CPU per record <= 1.05x the raw writes as a Lambda function's, %d MB, batches of %d | %.0f ÷ %.0f µs = %.2f (rounds %.2f–%.2f) | %s |\n",
			at, b, oc, rc, oc/rc, lo, hi, met[oc <= 1.05*rc])
		if med, lo, hi, ok := r.qratio("rawfn", b, at); ok {
			w("| ours >= 0.95x the raw writes as a Lambda function's records/s, %d MB, batches of %d | %.2f (%.2f–%.2f) | %s |\n",
				at, b, med, lo, hi, met[med >= 0.95])
		}
	}
}

func (r *report) quotaLabel(mb int) string {
	if r.fallback != "" {
		return "unconfined: no quota"
	}
	return fmt.Sprintf("%d µs = %.3f vCPU", quotaUS(mb), float64(quotaUS(mb))/cfsPeriodUS)
}

const quotaNotes = `### How to read the Lambda-shaped runs

- A Lambda execution environment gets CPU in proportion to its memory (1,769 MB = one vCPU,
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html), and DynamoDB is a
  network round trip away: there the function's own CPU per record, not DynamoDB Local's,
  limits records/s per environment. The quota applies to the timed part only; process start
  and the warm-up run unconfined (Lambda's init phase is measured in section 3, and a warm
  environment is what processes a queue's backlog).
- Two limits: the raw-write loop reads its events from a file in one process;
  rawfn does the same writes as a Lambda function, invoked like ours through the Runtime API
  with its event decoded from JSON, which every Go Lambda function pays and the loop does not.
  Ours against rawfn is the cost of the guarantees alone. The Powertools contenders, like the
  loop, call their handler in a loop with no Runtime API: that flatters them against ours.
  Ours, bin, the loop and rawfn fit the Go runtime to the memory size (package runtimefit), each
  told it through AWS_LAMBDA_FUNCTION_MEMORY_SIZE.
- The round trip is modelled, not measured: every DynamoDB call waits the -latency figure in
  a proxy before it is forwarded. DynamoDB advertises single-digit-millisecond latency
  (https://aws.amazon.com/dynamodb/); 4 ms is a round trip from a function in the same Region
  within that range, chosen, not observed.
- Billed ms per batch is the mean wall time of one batch (records per batch ÷ records/s),
  rounded up to Lambda's 1 ms unit; ours' includes its Runtime API round trip per invocation,
  which Lambda does not bill. Cost per million records = Lambda GB-s (arm64 price, the
  architecture the stack deploys; this machine is what it is) + Lambda requests (one per
  batch) + DynamoDB write request units (the writes per record counted through the proxy,
  1 WRU each: items under 1 KB, a failed conditional write billed too) + SQS ReceiveMessage and
  DeleteMessageBatch (10 messages per request at most, so 0.2 requests per message at any batch
  size). Prices: us-east-1, on-demand, as in section 2 (Lambda arm64 $0.0000133334 per GB-s and
  $0.20 per million requests, https://aws.amazon.com/lambda/pricing/; DynamoDB $0.625 per
  million WRU, https://aws.amazon.com/dynamodb/pricing/on-demand/; SQS $0.40 per million
  requests, https://aws.amazon.com/sqs/pricing/; the quotes and their dates are listed there).
- CPU µs per record is the contender's process over the timed part, pooled over the rounds
  (all rounds' CPU ÷ all rounds' records): ours and rawfn read from /proc/<pid>/stat in 10 ms
  ticks (one tick is 25 µs per record over 400 records, about 8 µs over three rounds of
  them), the others self-reported (getrusage, process.cpuUsage, time.process_time). Under a
  quota the machine's other load can still take CPU from a contender: the per-round ranges of
  records/s show how much.
- DynamoDB's writes dominate the cost per million; the function's part (GB-s and requests) is
  what differs between the contenders, and it is what the records/s per environment sets.
`
