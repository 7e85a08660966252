package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Load profiles: what a month of three typical loads costs under both table capacity modes,
// with the consumer settings that fit each. The consumer's figures are measured:
// records/s per execution environment at each memory size and batch size under Lambda's CPU
// share, and DynamoDB writes per record, both from test/bench/peers -json; SQS requests per
// message at full batches from ./test/bench/cost/measure. What is modelled (how full a batch
// is at a low rate, the event source's idle polls, auto scaling's reach) is said where used.

// secondsPerMonth is AWS's billing month: 730 hours.
const secondsPerMonth = 730 * 3600

// itemOverheadBytes is what DynamoDB adds to each item's size for storage
// (https://aws.amazon.com/dynamodb/pricing/on-demand/, "Data storage").
const itemOverheadBytes = 100

// More prices, us-east-1. The pricing pages render their tables with JavaScript, so, as for
// the prices in main.go, each figure is the one they state as quoted by the dated secondary
// sources named in Note (found with the search tool, 2026-11-25). Re-check before quoting money.
var (
	ddbWCUHour = price{0.00065, "WCU-hour (provisioned)", "https://aws.amazon.com/dynamodb/pricing/provisioned/",
		"us-east-1, Standard table class, about $0.47 a month per WCU; unchanged by the 2024-11-01 on-demand cut; as quoted by " +
			"https://zeonedge.com/en/blog/dynamodb-cost-optimization-on-demand-provisioned-dax-single-table (\"$0.00065/WCU/hr and $0.00013/RCU/hr\")"}
	ddbRCUHour = price{0.00013, "RCU-hour (provisioned)", "https://aws.amazon.com/dynamodb/pricing/provisioned/",
		"us-east-1, Standard table class; same source as WCU-hour"}
	ddbStorage = price{0.25, "GB-month (table storage)", "https://aws.amazon.com/dynamodb/pricing/on-demand/",
		"us-east-1, Standard table class, after the first 25 GB a month, each item's size plus 100 bytes of overhead; the same in both capacity modes"}
)

// loadProfile is a month of traffic into one standard queue.
type loadProfile struct {
	Name string
	// Average is the month's mean arrival rate, messages/s.
	Average float64
	// Peak is the arrival rate during a peak, PeakSeconds long, PeaksPerDay times a day; a
	// flat load has Peak == Average.
	Peak, PeakSeconds, PeaksPerDay float64
	// Budget is how long a message may wait in the queue before it is processed, seconds:
	// the latency a provisioned table may trade for capacity.
	Budget float64
	Story  string
	// Fifo prices a FIFO queue: batches of at most 10, no window, FIFO's request price.
	Fifo bool
}

// baseline is the arrival rate outside the peaks.
func (p loadProfile) baseline() float64 {
	peakTime := p.PeakSeconds * p.PeaksPerDay
	if peakTime >= 86400 || p.Peak <= p.Average {
		return p.Average
	}
	return math.Max(0, (p.Average*86400-p.Peak*peakTime)/(86400-peakTime))
}

var profiles = []loadProfile{
	{Name: "bursty 10/s", Average: 10, Peak: 200, PeakSeconds: 60, PeaksPerDay: 24, Budget: 300,
		Story: "an hourly job fans out 12,000 messages in a minute (200/s), a trickle between; 26 M messages a month; a message may wait 5 minutes"},
	{Name: "steady 1,000/s", Average: 1000, Peak: 1000, PeakSeconds: 0, PeaksPerDay: 0, Budget: 10,
		Story: "1,000 messages/s around the clock (auto scaling follows slow daily swings); 2.6 B messages a month; a message may wait 10 s"},
	{Name: "spiky 10,000/s peak", Average: 1000, Peak: 10000, PeakSeconds: 300, PeaksPerDay: 6, Budget: 120,
		Story: "1,000/s on average, six 5-minute spikes a day at 10,000/s (3 M messages each); 2.6 B messages a month; a message may wait 2 minutes"},
}

// lambdaFigures are test/bench/peers -json's Lambda-shaped runs.
type lambdaFigures struct {
	Latency    string   `json:"latency"`
	Unconfined string   `json:"unconfined"`
	Machine    []string `json:"machine"`
	Runs       []struct {
		Contender          string  `json:"contender"`
		Batch              int     `json:"batch"`
		MemoryMB           int     `json:"memoryMB"`
		RecordsPerSecond   float64 `json:"recordsPerSecond"`
		CPUMicrosPerRecord float64 `json:"cpuMicrosPerRecord"`
		WritesPerRecord    float64 `json:"writesPerRecord"`
		WritesMeasured     bool    `json:"writesMeasured"`
	} `json:"runs"`
}

// envRate is one measured configuration of the deployed consumer binary.
type envRate struct {
	batch, memoryMB int
	perSecond       float64 // records/s per execution environment
	cpuMicros       float64
}

// planInputs is what the plan is derived from.
type planInputs struct {
	rates           []envRate
	writesPerRecord float64 // blended new and duplicate, measured
	latency         string
	unconfined      string
	target          float64 // provisioned target utilization, percent
	recordTTL       time.Duration
	recordBytes     float64
	sqsPerMessage   float64 // send + receive + delete requests per message at full batches, measured
	dupFraction     float64
}

// readLambdaFigures takes the deployed binary's ("bin") runs from test/bench/peers -json.
func readLambdaFigures(path string, pi *planInputs) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var f lambdaFigures
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	var writes []float64
	for _, r := range f.Runs {
		if r.Contender != "bin" || r.RecordsPerSecond <= 0 {
			continue
		}
		pi.rates = append(pi.rates, envRate{batch: r.Batch, memoryMB: r.MemoryMB, perSecond: r.RecordsPerSecond, cpuMicros: r.CPUMicrosPerRecord})
		if r.WritesMeasured {
			writes = append(writes, r.WritesPerRecord)
		}
	}
	if len(pi.rates) == 0 {
		return fmt.Errorf("no Lambda-shaped runs of the deployed consumer (contender bin): run test/bench/peers with -memory and -contenders including bin")
	}
	if len(writes) > 0 {
		pi.writesPerRecord = slices.Max(writes)
	}
	pi.latency, pi.unconfined = f.Latency, f.Unconfined
	return nil
}

// choice is one profile's settings and monthly bill under one capacity mode.
type choice struct {
	mode                  string
	drain                 float64 // messages/s the consumers are sized for
	batch, windowS        int
	rate                  envRate
	fill                  float64 // records per invocation, mean
	maxConcurrency        int
	minWCU, maxWCU        int
	capacityNote          string
	lambda, sqs, ddb, sto float64 // $ per month
	messages              float64 // per month
}

func (c choice) total() float64 { return c.lambda + c.sqs + c.ddb + c.sto }

// pollers is how many batches the event source reads at once when traffic is low (Lambda
// starts five, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
const pollers = 5

// plan sizes the consumer and the table for p under one mode.
func plan(pi planInputs, p loadProfile, provisioned bool) choice {
	c := choice{mode: "on-demand", messages: p.Average * secondsPerMonth}
	w := pi.writesPerRecord
	// On-demand takes a peak as it comes (a recurring peak is within twice the previous one;
	// docs/capacity.md). Provisioned capacity is paid for by the hour, so the consumers drain
	// a peak no faster than the latency budget needs: the queue holds the rest. A message
	// that arrives at the end of a peak waits (Peak - drain) x PeakSeconds / drain.
	c.drain = p.Peak
	if provisioned {
		c.mode = "provisioned"
		c.drain = math.Max(p.baseline(), p.Peak*p.PeakSeconds/(p.PeakSeconds+p.Budget))
		c.drain = math.Max(c.drain, p.Average) // never below the mean: the backlog would grow
	}
	// Batch: 100 when a batch of 100 fills within a second at the drain rate spread over the
	// pollers (the window must be at least 1 s above 10 records), else 10.
	c.batch, c.windowS = 10, 0
	perPoller := p.baseline() / pollers
	if p.Fifo {
		// FIFO: at most 10 records a batch and no window (Lambda's rules for FIFO sources).
	} else if c.drain/pollers*1 >= 100 && p.Budget >= 5 {
		c.batch, c.windowS = 100, 1
	} else if perPoller < 10 && p.Budget >= 10 {
		// A trickle: wait up to a few seconds for a fuller batch (fewer invocations and
		// receives), within a tenth of the budget.
		c.windowS = int(math.Min(20, math.Max(1, math.Floor(p.Budget/10))))
	}
	// Memory: the measured size with the lowest GB-s per record at this batch size; within 5%
	// the larger (lower latency) wins.
	var best envRate
	bestGBs := math.Inf(1)
	for _, r := range pi.rates {
		if r.batch != c.batch {
			continue
		}
		gbs := float64(r.memoryMB) / 1024 / r.perSecond
		if gbs < bestGBs*0.95 || (gbs <= bestGBs*1.05 && r.memoryMB > best.memoryMB) {
			best, bestGBs = r, math.Min(gbs, bestGBs)
		}
	}
	if best.perSecond == 0 { // no run at this batch size: the nearest measured one
		best = pi.rates[0]
		for _, r := range pi.rates[1:] {
			if math.Abs(float64(r.batch-c.batch)) < math.Abs(float64(best.batch-c.batch)) {
				best = r
			}
		}
		c.batch = best.batch
	}
	if p.Fifo && best.perSecond > perGroup {
		// A FIFO batch mostly holds one message group, whose records run one at a time.
		best.perSecond = perGroup
	}
	c.rate = best
	// Max concurrency: environments for the drain rate plus headroom, within the event
	// source mapping's 2 to 1,000. On-demand: twice (a slower network than the modelled
	// round trip, retries, a redrive). Provisioned: a quarter, since the consumers'
	// concurrency is what keeps the writes within the capacity held (1.25 x 70% < 100%).
	headroom := 2.0
	if provisioned {
		headroom = math.Min(1.25, 0.95/(pi.target/100))
	}
	c.maxConcurrency = int(math.Min(1000, math.Max(2, math.Ceil(c.drain/best.perSecond*headroom))))

	// Records per invocation: full at a rate that fills a batch within the window, else what
	// arrives per poller within the window (at least 1). Modelled, not measured.
	fillAt := func(rate float64) float64 {
		window := math.Max(float64(c.windowS), 0.05) // no window: what one receive finds
		return math.Max(1, math.Min(float64(c.batch), rate/pollers*window))
	}
	var peakShare float64
	if p.Peak > p.Average {
		peakShare = p.Peak * p.PeakSeconds * p.PeaksPerDay / (p.Average * 86400)
	}
	c.fill = 1 / ((1-peakShare)/fillAt(p.baseline()) + peakShare/fillAt(c.drain))
	invocations := c.messages / c.fill
	// Billed duration of an invocation of fill records: at the measured rate per environment,
	// rounded up to the millisecond.
	ms := math.Ceil(c.fill / best.perSecond * 1000)
	c.lambda = invocations * (lambdaRequest.USD + ms/1000*float64(best.memoryMB)/1024*lambdaArmGBs.USD)
	// SQS: the measured requests per message at full batches of 10, scaled by how full a
	// receive is (at most 10 messages each), plus the idle long polls of five pollers (one
	// per 20 s each), which cost the same in any month.
	perReceive := math.Min(10, c.fill)
	sqsPerMsg := pi.sqsPerMessage/3 + 2*(pi.sqsPerMessage/3)*10/perReceive // send stays; receive, delete scale
	idle := float64(pollers) / 20 * secondsPerMonth
	sqsPrice := sqsStandard.USD
	if p.Fifo {
		sqsPrice = sqsFIFO.USD
	}
	c.sqs = (c.messages*sqsPerMsg + idle) * sqsPrice
	// Storage: every new message's record, kept for the record TTL; DynamoDB bills each item
	// 100 bytes of overhead besides its own size, per GB of 2^30 bytes.
	items := p.Average * (1 - pi.dupFraction) * pi.recordTTL.Seconds()
	c.sto = items * (pi.recordBytes + itemOverheadBytes) / (1 << 30) * ddbStorage.USD
	if !provisioned {
		c.ddb = c.messages * w * ddbWRU.USD
		c.capacityNote = "on-demand"
		if p.Peak*w > 4000 {
			c.capacityNote += fmt.Sprintf("; a new table takes 4,000 writes/s at once: set warm throughput to %s writes/s or let it see the peak first", commas(math.Ceil(p.Peak*w/1000)*1000))
		}
		return c
	}
	// Provisioned: auto scaling keeps consumed ÷ provisioned at the target, but adds capacity
	// only after two minutes above it and takes several more to apply; a peak shorter than
	// 15 minutes is over before it helps. So the minimum holds the drain rate's writes (the
	// consumers' maximum concurrency keeps them there), and auto scaling follows only slower
	// swings, up to a maximum with room for a redrive.
	t := pi.target / 100
	held := c.drain * w / t
	c.minWCU = int(math.Ceil(held))
	if p.Peak <= p.Average {
		c.minWCU = int(math.Ceil(held * 0.5)) // a flat load: auto scaling follows its swings from half
	}
	c.maxWCU = int(math.Ceil(held * 2))
	hourly := math.Max(float64(c.minWCU), p.Average*w/t)
	c.ddb = hourly*730*ddbWCUHour.USD + 1*730*ddbRCUHour.USD // one read unit: nothing reads but pipelinectl
	wait := 0.0
	if c.drain < p.Peak {
		wait = (p.Peak - c.drain) * p.PeakSeconds / c.drain
	}
	c.capacityNote = fmt.Sprintf("provisioned %s-%s WCU @%.0f%%, 1-10 RCU", commas(float64(c.minWCU)), commas(float64(c.maxWCU)), pi.target)
	if wait > 0 {
		c.capacityNote += fmt.Sprintf("; a peak waits up to %.0f s in the queue", wait)
	}
	return c
}

func commas(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func dollars(v float64) string {
	switch {
	case v >= 100:
		return "$" + commas(v)
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.3f", v)
}

// writeProfiles prints the load profiles' monthly bills and settings.
func writeProfiles(w io.Writer, pi planInputs) {
	fmt.Fprintf(w, "\n### What a month costs: three load profiles, on-demand and provisioned (us-east-1, standard queue, free tiers not subtracted)\n\n")
	if pi.unconfined != "" {
		fmt.Fprintf(w, "**The consumer's rates below are from UNCONFINED runs (%s): they overstate records/s per environment.**\n\n", pi.unconfined)
	}
	fmt.Fprintf(w, "Measured inputs: the deployed consumer binary's records/s per execution environment under Lambda's CPU share (every DynamoDB call delayed %s):", pi.latency)
	for _, r := range pi.rates {
		fmt.Fprintf(w, " %d MB batch %d: %.0f/s (%.0f µs CPU per record);", r.memoryMB, r.batch, r.perSecond, r.cpuMicros)
	}
	fmt.Fprintf(w, " DynamoDB writes per message %.2f (2 new, 1 duplicate, %.0f%% duplicates); SQS requests per message at full batches %.2f (send, receive, delete). "+
		"Records of %.0f bytes (+100 bytes of DynamoDB's per-item overhead) kept for the record TTL %s (the reference stack's default), provisioned target utilization %.0f%%.\n\n",
		pi.writesPerRecord, pi.dupFraction*100, pi.sqsPerMessage, pi.recordBytes, pi.recordTTL, pi.target)
	fmt.Fprintln(w, "| profile | table | consumers drain | batch size, window | memory | max concurrency | Lambda | SQS | DynamoDB capacity | DynamoDB storage | **$ per month** | $ per million | capacity setting |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	type pick struct {
		p        loadProfile
		od, prov choice
	}
	var picks []pick
	for _, p := range profiles {
		od, prov := plan(pi, p, false), plan(pi, p, true)
		picks = append(picks, pick{p, od, prov})
		for _, c := range []choice{od, prov} {
			fmt.Fprintf(w, "| %s | %s | %s/s | %d, %d s | %d MB | %d | %s | %s | %s | %s | **%s** | %s | %s |\n",
				p.Name, c.mode, commas(c.drain), c.batch, c.windowS, c.rate.memoryMB, c.maxConcurrency,
				dollars(c.lambda), dollars(c.sqs), dollars(c.ddb), dollars(c.sto), dollars(c.total()),
				dollars(c.total()/(c.messages/1e6)), c.capacityNote)
		}
	}
	fmt.Fprintln(w, "\nRecommended:")
	for _, k := range picks {
		best, other := k.od, k.prov
		if k.prov.total() < k.od.total() {
			best, other = k.prov, k.od
		}
		fmt.Fprintf(w, "- **%s** (%s): %s table, batch size %d with a %d s window, %d MB, maximum concurrency %d: %s a month, %s less than %s.\n",
			k.p.Name, k.p.Story, best.mode, best.batch, best.windowS, best.rate.memoryMB, best.maxConcurrency,
			dollars(best.total()), dollars(other.total()-best.total()), other.mode)
	}
	fmt.Fprintln(w, "\nHow it is derived (docs/capacity.md has the limits and sources):")
	fmt.Fprintln(w, "- Consumers drain: on-demand takes a peak as it comes; a provisioned table is paid by the hour, so the consumers' maximum concurrency "+
		"holds their rate to what the latency budget needs (peak x duration / (duration + budget), at least the mean) and the queue keeps the rest.")
	fmt.Fprintln(w, "- Batch size 100 (window 1 s, the least SQS allows above 10) when a batch fills within a second across five pollers; else 10, with a window "+
		"of a tenth of the budget (up to 20 s) for a trickle. Memory: the measured size with the least GB-s per record (ties within 5% to the larger). "+
		"Maximum concurrency: the drain rate over the measured records/s per environment, times 2 on-demand, times 1.25 provisioned "+
		"(there it is what keeps the writes within the capacity held).")
	fmt.Fprintln(w, "- Modelled, not measured: records per invocation below a full batch (what five pollers find within the window), "+
		"receives and deletes scaled to that, and the idle long polls of five pollers (one per 20 s each). Lambda: one request per invocation "+
		"and GB-s at the measured rate, rounded up to the millisecond.")
	fmt.Fprintln(w, "- Provisioned: auto scaling adds capacity after two minutes above the target and applies it minutes later, so a peak under 15 minutes "+
		"is over first: the minimum holds the drain rate's writes, the maximum is twice that (a redrive or a backlog), and a flat load starts "+
		"from half and is followed. The on-demand rows price every write request; the provisioned rows price the capacity held, used or not.")
	fmt.Fprintln(w, "- Not included: the dispatcher (cents a month at these rates, section 2), CloudWatch alarms and metrics (the same in both modes; auto scaling adds "+
		"four alarms per scaled dimension), reserved capacity (a further discount on a year's provisioned capacity), data transfer.")
	fmt.Fprintln(w, "\nPrices (us-east-1), besides those of the table above:")
	for _, p := range []price{ddbWCUHour, ddbRCUHour, ddbStorage} {
		fmt.Fprintf(w, "- $%g per %s: %s (%s)\n", p.USD, p.Unit, p.Source, p.Note)
	}
}
