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
	if l.capWU != 38000 { // 2 x 10,000 x 1.9 = 38,000
		t.Errorf("cap %d write units, want 38,000", l.capWU)
	}
	steady := math.Ceil(10000 / l.best.rate.perSecond)
	if want := int(math.Ceil(steady / 10)); l.minPollers != want || l.maxPollers != int(steady) {
		t.Errorf("pollers %d-%d, want %d-%d (steady %v environments, spikes of ten times)", l.minPollers, l.maxPollers, want, int(steady), steady)
	}
	near(t, "pollers' standing $", l.pollersUSD, float64(l.minPollers)*730*0.00925)
	if l.groups != 0 || len(l.notes) != 1 || !strings.Contains(l.notes[0], "over a table's default quota of 40,000") {
		t.Errorf("standard 10,000/s: groups %d, notes %q; want none and the table quota (the provisioned maximum passes 40,000)", l.groups, l.notes)
	}

	f := planLoad(pi, 10000, true)
	if f.best.batch != 10 || f.best.windowS != 0 {
		t.Errorf("FIFO: batch %d, window %d s; want 10 and none (Lambda's FIFO limits)", f.best.batch, f.best.windowS)
	}
	if f.groups < 125 || f.groups < f.best.maxConcurrency { // 10,000 / 80 records/s a group
		t.Errorf("FIFO 10,000/s: %d groups, want at least 125 and the concurrency %d", f.groups, f.best.maxConcurrency)
	}
	if !strings.Contains(strings.Join(f.notes, "; "), "HighThroughput: true") {
		t.Errorf("FIFO 10,000/s notes %q, want HighThroughput", f.notes)
	}
	if f.best.sqs <= l.best.sqs {
		t.Errorf("FIFO's SQS %s is not above standard's %s: FIFO requests cost $0.50 per million, standard $0.40", dollars(f.best.sqs), dollars(l.best.sqs))
	}

	small := planLoad(pi, 10, false)
	if small.minPollers != 2 || len(small.notes) != 0 {
		t.Errorf("10/s: pollers from %d, notes %q; want SQS's minimum of 2 and no notes", small.minPollers, small.notes)
	}
}
