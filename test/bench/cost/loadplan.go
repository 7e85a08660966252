package main

import (
	"fmt"
	"io"
	"math"
)

// A plan per load: the settings for a flat load of 10 to 50,000 messages a second on a
// standard and on a FIFO queue, with what a month costs, from the same model as the profiles
// (plan). What the profiles leave out is priced here: the event source mapping's own
// metrics, provisioned pollers for a load that arrives in spikes, and a cap on an on-demand
// table.

var (
	// eventPollerHour is one SQS event poller in provisioned mode (an Event Poller Unit holds
	// one for SQS), billed per second with a one-minute minimum.
	eventPollerHour = price{0.00925, "event poller unit-hour (SQS provisioned mode)", "https://aws.amazon.com/lambda/pricing/",
		"us-east-1; \"The EPU price is $0.00925 per EPU-hour\" and \"An EPU supports one event poller\" for an SQS ESM, in the pricing page's SQS example, as copied by a public repository (found with the search tool, 2026-11-28)"}
	// metricMonth is one CloudWatch metric for a month; Lambda bills an event source
	// mapping's EventCount metrics as CloudWatch metrics.
	metricMonth = price{0.30, "metric-month (CloudWatch, first 10,000)", "https://aws.amazon.com/cloudwatch/pricing/",
		"us-east-1, prorated by the hour a metric is published; an SQS mapping's EventCount metrics are up to six (polled, invoked, failed to invoke, deleted, filtered out, dropped)"}
)

// mappingMetrics is the most an SQS mapping's EventCount metrics cost a month.
const mappingMetrics = 6

// tableQuota is DynamoDB's default throughput quota per table, write units a second.
const tableQuota = 40000

// perGroup is what one FIFO message group processes a second: one record at a time, about
// 12 ms each (two round trips and the CPU, docs/capacity.md).
const perGroup = 80

var planRates = []float64{10, 100, 1000, 10000, 50000}

// loadPlan is one row of the plan: the cheaper table mode's settings at a flat rate.
type loadPlan struct {
	rate                   float64
	fifo                   bool
	best, onDemand         choice
	minPollers, maxPollers int     // provisioned mode, for a load that arrives in spikes
	pollersUSD             float64 // the minimum pollers' standing cost a month
	capWU                  int     // on-demand: the cap to set, write units a second
	groups                 int     // FIFO: message groups the rate needs
	metricsUSD             float64
	notes                  []string
}

func (l loadPlan) total() float64 { return l.best.total() + l.metricsUSD }

func planLoad(pi planInputs, rate float64, fifo bool) loadPlan {
	p := loadProfile{Average: rate, Peak: rate, Budget: 10, Fifo: fifo}
	od, prov := plan(pi, p, false), plan(pi, p, true)
	l := loadPlan{rate: rate, fifo: fifo, best: od, onDemand: od, metricsUSD: mappingMetrics * metricMonth.USD}
	if prov.total() < od.total() {
		l.best = prov
	}
	writes := rate * pi.writesPerRecord
	// On-demand's cap: a guard against runaway spend, well above the plan: twice its writes,
	// in thousands.
	l.capWU = int(math.Ceil(2*writes/1000) * 1000)
	// Pollers for spikes of up to ten times the load: the minimum holds the steady
	// concurrency, the maximum ten times it; each poller drives up to 10 invocations.
	steady := math.Ceil(rate / l.best.rate.perSecond)
	l.minPollers = int(math.Min(200, math.Max(2, math.Ceil(steady/10))))
	l.maxPollers = int(math.Min(2000, math.Max(float64(l.minPollers), math.Ceil(10*steady/10))))
	l.pollersUSD = float64(l.minPollers) * 730 * eventPollerHour.USD
	if top := math.Max(writes, float64(l.best.maxWCU)); top > tableQuota {
		l.notes = append(l.notes, fmt.Sprintf("%s write units/s is over a table's default quota of 40,000: ask for an increase first, or split the keys over tables", commas(top)))
	}
	if fifo {
		l.groups = int(math.Max(float64(l.best.maxConcurrency), math.Ceil(rate/perGroup)))
		if rate > 3000 {
			l.notes = append(l.notes, "HighThroughput: true (a FIFO queue takes 3,000 messages/s in batches of 10 without it)")
		}
	}
	return l
}

// writeLoadPlans prints the plan per load.
func writeLoadPlans(w io.Writer, pi planInputs) {
	fmt.Fprintf(w, "\n### A plan per load: flat loads of 10 to 50,000 messages/s, standard and FIFO (us-east-1, free tiers not subtracted)\n\n")
	fmt.Fprintln(w, "Each row is the cheaper table mode of the model above for a flat load with 10 s of latency to spare, plus the mapping's metrics. "+
		"Pollers are for a load that arrives in spikes instead: their standing cost is not in the total.")
	fmt.Fprintln(w, "\n| load | queue | batch size, window | memory | max concurrency | table | FIFO groups | **$ per month** | $ per million | on-demand instead, capped | pollers for spikes (standing $ a month) | notes |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---|---:|---:|---:|---|---|---|")
	for _, rate := range planRates {
		for _, fifo := range []bool{false, true} {
			l := planLoad(pi, rate, fifo)
			queue, groups := "standard", "-"
			if fifo {
				queue, groups = "FIFO", commas(float64(l.groups))
			}
			table := l.best.capacityNote
			onDemand := fmt.Sprintf("%s, cap %s", dollars(l.onDemand.total()+l.metricsUSD), commas(float64(l.capWU)))
			if l.best.mode == "on-demand" {
				table += fmt.Sprintf("; cap %s write units/s", commas(float64(l.capWU)))
				onDemand = "(chosen)"
			}
			notes := "-"
			if len(l.notes) > 0 {
				notes = fmt.Sprint(l.notes[0])
				for _, n := range l.notes[1:] {
					notes += "; " + n
				}
			}
			fmt.Fprintf(w, "| %s/s | %s | %d, %d s | %d MB | %d | %s | %s | **%s** | %s | %s | %d-%d (%s) | %s |\n",
				commas(rate), queue, l.best.batch, l.best.windowS, l.best.rate.memoryMB, l.best.maxConcurrency, table, groups,
				dollars(l.total()), dollars(l.total()/(l.best.messages/1e6)), onDemand, l.minPollers, l.maxPollers, dollars(l.pollersUSD), notes)
		}
	}
	fmt.Fprintln(w, "\nHow to read it:")
	fmt.Fprintln(w, "- Settings map to the reference app's context keys: `consumerBatchSize` and `consumerBatchWindow` (the standard consumer), "+
		"`consumerMemory`, `consumerMaxConcurrency` or `consumerPollers=MIN-MAX` instead, `tableCapacity=MIN-MAX@70` (provisioned) or "+
		"`tableMaxWriteUnits` (an on-demand table's cap); in your own app, the consumer and table constructs' props of the same names.")
	fmt.Fprintln(w, "- FIFO: one message group processes about 80 records/s (one at a time, in order), so the groups are at least the rate over 80 and at least "+
		"the concurrency, which a FIFO mapping reaches only with that many active groups. SQS bills FIFO requests at $0.50 per million.")
	fmt.Fprintf(w, "- The mapping's metrics (on by default): at most %d metrics x %s = %s a month a mapping.\n", mappingMetrics, dollars(metricMonth.USD), dollars(mappingMetrics*metricMonth.USD))
	fmt.Fprintf(w, "- Pollers, for a load that arrives in spikes of up to ten times its mean: the minimum holds the steady concurrency (each poller drives up to 10 invocations), "+
		"the maximum ten times that; the minimum is billed every hour ($%g a poller-hour) and scaling above it by the second. They replace the maximum concurrency.\n", eventPollerHour.USD)
	fmt.Fprintln(w, "- On-demand instead: the same load on an on-demand table, capped at twice the plan's writes, a guard against runaway spend and never a throttle "+
		"to run at (docs/capacity.md, \"A cap on an on-demand table\"). A flat load is cheaper provisioned; a spiky one on-demand (the profiles above). "+
		"Capped, the table bills at most cap x 2.6 M seconds x $0.625 per million writes a month.")
	fmt.Fprintln(w, "\nPrices (us-east-1), besides those above:")
	for _, p := range []price{eventPollerHour, metricMonth, sqsFIFO} {
		fmt.Fprintf(w, "- $%g per %s: %s (%s)\n", p.USD, p.Unit, p.Source, p.Note)
	}
}
