package main

import (
	"fmt"
	"io"
	"math"
	"strings"
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

// loadPlan is one row of the plan: the cheaper table mode's settings at a flat rate, and
// what spikes of up to ten times the rate would take instead.
type loadPlan struct {
	best, onDemand choice
	groups         int // FIFO: message groups the rate needs
	metricsUSD     float64
	notes          []string
	// For spikes: an on-demand table capped at twice the spike's writes, and provisioned
	// pollers from the steady concurrency to the spike's.
	spikeCapWU             int
	minPollers, maxPollers int
	pollersUSD             float64 // the minimum pollers' standing cost a month
	spikeNotes             []string
}

func (l loadPlan) total() float64      { return l.best.total() + l.metricsUSD }
func (l loadPlan) spikyTotal() float64 { return l.onDemand.total() + l.metricsUSD + l.pollersUSD }

// spike is how many times the mean rate a spike reaches, for the pollers column.
const spike = 10

// accountConcurrency is Lambda's default quota of concurrent executions a Region.
const accountConcurrency = 1000

func planLoad(pi planInputs, rate float64, fifo bool) loadPlan {
	p := loadProfile{Average: rate, Peak: rate, Budget: 10, Fifo: fifo}
	od, prov := plan(pi, p, false), plan(pi, p, true)
	l := loadPlan{best: od, onDemand: od, metricsUSD: mappingMetrics * metricMonth.USD}
	if prov.total() < od.total() {
		l.best = prov
	}
	writes := rate * pi.writesPerRecord
	if top := math.Max(writes, float64(l.best.maxWCU)); top > tableQuota {
		l.notes = append(l.notes, fmt.Sprintf("%s write units/s is over a table's default quota of 40,000: ask for an increase first, or split the keys over tables", commas(top)))
	}
	if fifo {
		l.groups = int(math.Max(float64(l.best.maxConcurrency), math.Ceil(rate/perGroup)))
		if rate > 3000 {
			l.notes = append(l.notes, "HighThroughput: true (without it a FIFO queue takes 300 sends a second: 3,000 messages/s in batches of 10)")
		}
	}
	// Spikes: the table on-demand, capped at twice the spike's writes (a guard against
	// runaway spend, not a throttle to run at); pollers from the steady concurrency to the
	// spike's, each driving up to 10 invocations.
	l.spikeCapWU = int(math.Ceil(2*spike*writes/1000) * 1000)
	steady := math.Ceil(rate / l.onDemand.rate.perSecond)
	l.minPollers = int(math.Min(200, math.Max(2, math.Ceil(steady/10))))
	l.maxPollers = int(math.Min(2000, math.Max(float64(l.minPollers), math.Ceil(spike*steady/10))))
	l.pollersUSD = float64(l.minPollers) * 730 * eventPollerHour.USD
	if l.spikeCapWU > tableQuota {
		l.spikeNotes = append(l.spikeNotes, "the cap is over the table quota")
	}
	if l.maxPollers*10 > accountConcurrency {
		l.spikeNotes = append(l.spikeNotes, fmt.Sprintf("%s concurrent invocations: over Lambda's default 1,000 a Region", commas(float64(l.maxPollers*10))))
	}
	return l
}

// writeLoadPlans prints the plan per load.
func writeLoadPlans(w io.Writer, pi planInputs) {
	fmt.Fprintf(w, "\n### A plan per load: flat loads of 10 to 50,000 messages/s, standard and FIFO (us-east-1, free tiers not subtracted)\n\n")
	fmt.Fprintln(w, "| load | queue | batch size, window | memory | max concurrency | table | FIFO groups | **$ per month** | $ per million | notes | spikes of 10x instead: on-demand, cap, pollers (standing $) | $ per month |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---|---:|---:|---:|---|---|---:|")
	for _, rate := range planRates {
		for _, fifo := range []bool{false, true} {
			l := planLoad(pi, rate, fifo)
			queue, groups := "standard", "-"
			if fifo {
				queue, groups = "FIFO", commas(float64(l.groups))
			}
			spiky := fmt.Sprintf("cap %s, pollers %d-%d (%s)", commas(float64(l.spikeCapWU)), l.minPollers, l.maxPollers, dollars(l.pollersUSD))
			if len(l.spikeNotes) > 0 {
				spiky += ": " + strings.Join(l.spikeNotes, "; ")
			}
			notes := "-"
			if len(l.notes) > 0 {
				notes = strings.Join(l.notes, "; ")
			}
			fmt.Fprintf(w, "| %s/s | %s | %d, %d s | %d MB | %d | %s | %s | **%s** | %s | %s | %s | %s |\n",
				commas(rate), queue, l.best.batch, l.best.windowS, l.best.rate.memoryMB, l.best.maxConcurrency, l.best.capacityNote, groups,
				dollars(l.total()), dollars(l.total()/(l.best.messages/1e6)), notes, spiky, dollars(l.spikyTotal()))
		}
	}
	fmt.Fprintln(w, "\nHow it is derived:")
	fmt.Fprintln(w, "- Each row is the cheaper table mode of the model above for a flat load with 10 s of latency to spare, plus the mapping's metrics. "+
		"FIFO: batches of 10, no window, and about 80 records/s an environment (a FIFO batch mostly holds one group, whose records run one at a time); "+
		"the groups are at least the rate over 80 and at least the concurrency, which a FIFO mapping reaches only with that many active groups; FIFO requests cost $0.50 per million.")
	fmt.Fprintf(w, "- The mapping's metrics (on by default): at most %d metrics x $%.2f = %s a month a mapping.\n", mappingMetrics, metricMonth.USD, dollars(mappingMetrics*metricMonth.USD))
	fmt.Fprintf(w, "- Spikes of up to %dx the mean: a provisioned table cannot follow them (auto scaling takes minutes), so the table is on-demand, "+
		"capped at twice the spike's writes; provisioned pollers (instead of the maximum concurrency) hold the steady concurrency at their minimum and reach "+
		"the spike's at their maximum (each drives up to 10 invocations). The minimum is billed every hour ($%g a poller-hour) and is in the $ per month, "+
		"scaling above it (by the second) is not. The $ per month is the mean load's.\n", spike, eventPollerHour.USD)
	fmt.Fprintln(w, "\nPrices (us-east-1), besides those above:")
	for _, p := range []price{eventPollerHour, metricMonth, sqsFIFO} {
		fmt.Fprintf(w, "- $%g per %s: %s (%s)\n", p.USD, p.Unit, p.Source, p.Note)
	}
}
