package main

import (
	"math"
	"strings"
	"testing"
)

// The plan per load, worked by hand from fixedInputs (1.9 writes a message).
func TestPlanPerLoad(t *testing.T) {
	pi := fixedInputs()

	l := planLoad(pi, 10000, false)
	near(t, "total = the cheaper mode + the mapping's metrics", l.total(), math.Min(l.best.total(), l.onDemand.total())+6*0.30)
	if l.spikeCapWU != 380000 { // 2 x 10 x 10,000 x 1.9
		t.Errorf("spike cap %d write units, want 380,000", l.spikeCapWU)
	}
	steady := math.Ceil(10000 / l.onDemand.rate.perSecond)
	if want := int(math.Ceil(steady / 10)); l.minPollers != want || l.maxPollers != int(steady) {
		t.Errorf("pollers %d-%d, want %d-%d (steady %v environments, spikes of ten times)", l.minPollers, l.maxPollers, want, int(steady), steady)
	}
	near(t, "spiky $ = on-demand + metrics + the minimum pollers' standing cost", l.spikyTotal(), l.onDemand.total()+6*0.30+float64(l.minPollers)*730*0.00925)
	if l.groups != 0 || len(l.notes) != 1 || !strings.Contains(l.notes[0], "over a table's default quota of 40,000") {
		t.Errorf("standard 10,000/s: groups %d, notes %q; want none and the table quota (the provisioned maximum passes 40,000)", l.groups, l.notes)
	}
	if !strings.Contains(strings.Join(l.spikeNotes, "; "), "the cap is over the table quota") {
		t.Errorf("standard 10,000/s spike notes %q, want the cap over the quota", l.spikeNotes)
	}

	f := planLoad(pi, 10000, true)
	if f.best.batch != 10 || f.best.windowS != 0 || f.best.rate.perSecond != perGroup {
		t.Errorf("FIFO: batch %d, window %d s, %v records/s an environment; want 10, none and one group's 80", f.best.batch, f.best.windowS, f.best.rate.perSecond)
	}
	// 10,000 / 80 = 125 environments, twice that on-demand, fewer provisioned: at least 125.
	if f.best.maxConcurrency < 125 || f.groups < f.best.maxConcurrency {
		t.Errorf("FIFO 10,000/s: concurrency %d and %d groups, want at least 125 and groups >= concurrency", f.best.maxConcurrency, f.groups)
	}
	if !strings.Contains(strings.Join(f.notes, "; "), "HighThroughput: true") {
		t.Errorf("FIFO 10,000/s notes %q, want HighThroughput", f.notes)
	}
	if !strings.Contains(strings.Join(f.spikeNotes, "; "), "over Lambda's default 1,000 a Region") {
		t.Errorf("FIFO 10,000/s spike notes %q, want Lambda's concurrency quota (spikes need 10 x 125 environments)", f.spikeNotes)
	}
	if f.best.sqs <= l.best.sqs {
		t.Errorf("FIFO's SQS %s is not above standard's %s: FIFO requests cost $0.50 per million, standard $0.40", dollars(f.best.sqs), dollars(l.best.sqs))
	}

	small := planLoad(pi, 10, false)
	if small.minPollers != 2 || len(small.notes) != 0 || len(small.spikeNotes) != 0 {
		t.Errorf("10/s: pollers from %d, notes %q %q; want SQS's minimum of 2 and no notes", small.minPollers, small.notes, small.spikeNotes)
	}
}
