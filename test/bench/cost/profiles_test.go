package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixedInputs are consumer figures of the kind test/bench/peers -json reports, chosen so
// the expected figures below can be worked out by hand.
func fixedInputs() planInputs {
	return planInputs{
		rates: []envRate{
			{batch: 10, memoryMB: 128, perSecond: 125},
			{batch: 10, memoryMB: 256, perSecond: 250},
			{batch: 100, memoryMB: 128, perSecond: 170},
			{batch: 100, memoryMB: 256, perSecond: 400},
			{batch: 100, memoryMB: 1024, perSecond: 600},
		},
		writesPerRecord: 1.9, target: 70, recordTTL: 600 * time.Hour, recordBytes: 200,
		sqsPerMessage: 0.3, dupFraction: 0.1,
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.6f, want %.6f", what, got, want)
	}
}

func profileNamed(t *testing.T, name string) loadProfile {
	t.Helper()
	for _, p := range profiles {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no profile %q", name)
	return loadProfile{}
}

// A steady load: on-demand pays every write request; provisioned holds the writes ÷ target
// utilization, by the hour, and costs less than half.
func TestSteadyLoadUnderBothModes(t *testing.T) {
	pi, p := fixedInputs(), profileNamed(t, "steady 1,000/s")
	od, prov := plan(pi, p, false), plan(pi, p, true)
	messages := 1000.0 * 730 * 3600
	near(t, "on-demand DynamoDB $", od.ddb, messages*1.9*0.625/1e6)
	near(t, "provisioned DynamoDB $", prov.ddb, 1000*1.9/0.7*730*0.00065+730*0.00013)
	if prov.total() >= od.total()/2+od.lambda+od.sqs+od.sto {
		t.Errorf("provisioned %s a month is not well under on-demand %s for a steady load", dollars(prov.total()), dollars(od.total()))
	}
	// Batches of 100 fill within a second at 1,000/s over five pollers; 256 MB has the least
	// GB-s per record at batch 100 (0.25/400 against 0.125/170 and 1/600).
	if od.batch != 100 || od.windowS != 1 || od.rate.memoryMB != 256 {
		t.Errorf("steady on-demand: batch %d, window %d s, %d MB; want 100, 1 s, 256 MB", od.batch, od.windowS, od.rate.memoryMB)
	}
	// 1,000/s ÷ 400/s per environment: x2 on-demand, x1.25 provisioned.
	if od.maxConcurrency != 5 || prov.maxConcurrency != 4 {
		t.Errorf("max concurrency on-demand %d, provisioned %d; want 5 and 4", od.maxConcurrency, prov.maxConcurrency)
	}
	// A flat load: the minimum is half the held capacity, the maximum twice it.
	if held := 1000 * 1.9 / 0.7; prov.minWCU != int(math.Ceil(held*0.5)) || prov.maxWCU != int(math.Ceil(held*2)) {
		t.Errorf("WCU %d-%d, want %d-%d", prov.minWCU, prov.maxWCU, int(math.Ceil(held*0.5)), int(math.Ceil(held*2)))
	}
	// Storage: 900 new records/s kept 600 h, 300 bytes each with the overhead.
	near(t, "storage $", od.sto, 900*600*3600*300/float64(1<<30)*0.25)
	near(t, "storage is the same in both modes", prov.sto, od.sto)
}

// A spike: on-demand takes it as it comes; provisioned drains it no faster than the budget
// needs (peak x duration / (duration + budget)) and holds that capacity all month, which
// here costs more than on-demand.
func TestSpikyLoadDrainsWithinTheBudget(t *testing.T) {
	pi, p := fixedInputs(), profileNamed(t, "spiky 10,000/s peak")
	od, prov := plan(pi, p, false), plan(pi, p, true)
	if od.drain != 10000 {
		t.Errorf("on-demand drain %v, want the peak 10000", od.drain)
	}
	near(t, "provisioned drain", prov.drain, 10000*300/(300+120.0))
	if prov.minWCU != int(math.Ceil(prov.drain*1.9/0.7)) {
		t.Errorf("min WCU %d, want the drain rate's writes ÷ 70%%", prov.minWCU)
	}
	if prov.total() <= od.total() {
		t.Errorf("provisioned %s ≤ on-demand %s for six short spikes a day", dollars(prov.total()), dollars(od.total()))
	}
	if !strings.Contains(od.capacityNote, "warm throughput to 19,000 writes/s") {
		t.Errorf("on-demand note %q: a new table takes 4,000 writes/s, the peak needs 19,000", od.capacityNote)
	}
	if !strings.Contains(prov.capacityNote, "a peak waits up to 120 s in the queue") {
		t.Errorf("provisioned note %q lacks the wait", prov.capacityNote)
	}
}

// A trickle waits for fuller batches within a tenth of its budget; a batch is at least one
// record and at most the batch size.
func TestTrickleUsesABatchingWindow(t *testing.T) {
	pi, p := fixedInputs(), profileNamed(t, "bursty 10/s")
	c := plan(pi, p, false)
	if c.batch != 10 || c.windowS != 20 {
		t.Errorf("batch %d, window %d s; want 10 and 20 s (a tenth of 300 s, at most 20)", c.batch, c.windowS)
	}
	if c.fill < 1 || c.fill > 10 {
		t.Errorf("records per invocation %v, want 1 to 10", c.fill)
	}
	if c.maxConcurrency < 2 {
		t.Errorf("max concurrency %d, below the event source mapping's minimum 2", c.maxConcurrency)
	}
	p.Budget = 5 // no time to wait: one receive's worth, a record at a time but in the hourly burst
	if c := plan(pi, p, false); c.windowS != 0 || c.fill < 1 || c.fill >= 2 {
		t.Errorf("5 s budget: window %d s, %v records per invocation; want no window, 1 to 2", c.windowS, c.fill)
	}
}

func TestReadLambdaFigures(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var pi planInputs
	err := readLambdaFigures(write("raw.json", `{"runs":[{"contender":"rawfn","batch":10,"memoryMB":256,"recordsPerSecond":300}]}`), &pi)
	if err == nil || !strings.Contains(err.Error(), "no Lambda-shaped runs of the deployed consumer (contender bin)") {
		t.Errorf("want the missing-bin error, got %v", err)
	}
	pi = planInputs{writesPerRecord: 1.5}
	err = readLambdaFigures(write("bin.json", `{"latency":"4ms","runs":[
		{"contender":"bin","batch":10,"memoryMB":256,"recordsPerSecond":300,"cpuMicrosPerRecord":450,"writesPerRecord":1.9,"writesMeasured":true},
		{"contender":"ours","batch":10,"memoryMB":256,"recordsPerSecond":320}]}`), &pi)
	if err != nil {
		t.Fatal(err)
	}
	if len(pi.rates) != 1 || pi.rates[0].perSecond != 300 || pi.writesPerRecord != 1.9 || pi.latency != "4ms" {
		t.Errorf("got %+v; want bin's one run, its measured 1.9 writes per record, latency 4ms", pi)
	}
}
