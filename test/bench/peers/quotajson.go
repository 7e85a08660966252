package main

import (
	"encoding/json"
	"os"
)

// Lambda-shaped figures as JSON (-json): what test/bench/cost's load profiles size the
// consumer from. One entry per contender, batch and memory size.
type quotaJSON struct {
	Latency string `json:"latency"` // the modelled DynamoDB round trip
	// Unconfined is why the runs had no CPU quota ("" when they were Lambda-shaped).
	Unconfined string      `json:"unconfined,omitempty"`
	Machine    []string    `json:"machine"`
	Runs       []quotaCell `json:"runs"`
}

type quotaCell struct {
	Contender string `json:"contender"`
	Batch     int    `json:"batch"`
	MemoryMB  int    `json:"memoryMB"`
	// RecordsPerSecond per execution environment: the median over the rounds and its range.
	RecordsPerSecond    float64 `json:"recordsPerSecond"`
	RecordsPerSecondMin float64 `json:"recordsPerSecondMin"`
	RecordsPerSecondMax float64 `json:"recordsPerSecondMax"`
	Rounds              int     `json:"rounds"`
	CPUMicrosPerRecord  float64 `json:"cpuMicrosPerRecord"`
	BilledMsPerBatch    float64 `json:"billedMsPerBatch"`
	// WritesPerRecord blends new records and duplicates as the event set does; counted
	// through the proxy when the counting pass ran (WritesMeasured).
	WritesPerRecord float64 `json:"writesPerRecord"`
	WritesMeasured  bool    `json:"writesMeasured"`
	DuplicateShare  float64 `json:"duplicateShare"`
}

// writeQuotaJSON writes the Lambda-shaped figures to path.
func (r *report) writeQuotaJSON(path string) error {
	out := quotaJSON{Latency: r.opts.latency.String(), Unconfined: r.fallback, Machine: r.machine, Runs: []quotaCell{}}
	for _, mb := range r.opts.memory {
		for _, b := range r.opts.batches {
			for _, c := range r.contenders {
				k := qkey{c.id, b, mb}
				rates := r.qrates(k)
				cc, ok := r.qcost(k)
				if len(rates) == 0 || !ok {
					continue
				}
				med, lo, hi := median(rates), rates[0], rates[0]
				for _, x := range rates {
					lo, hi = min(lo, x), max(hi, x)
				}
				set := r.sets[b]
				out.Runs = append(out.Runs, quotaCell{
					Contender: c.id, Batch: b, MemoryMB: mb,
					RecordsPerSecond: med, RecordsPerSecondMin: lo, RecordsPerSecondMax: hi, Rounds: len(rates),
					CPUMicrosPerRecord: r.qcpu(k), BilledMsPerBatch: cc.billedMS,
					WritesPerRecord: cc.writesPerRecord, WritesMeasured: cc.writesMeasured,
					DuplicateShare: float64(set.Duplicates) / float64(set.TimedCount),
				})
			}
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
