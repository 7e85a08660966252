package idempotency

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks against DynamoDB Local: figures compare code paths on this machine (acquire +
// complete vs. one failed acquire vs. the cache), not DynamoDB's own latency.
//
//	go test -run '^$' -bench . -benchtime 2s ./functions/idempotency/

var benchSeq atomic.Int64

// warmJVM runs a few hundred new and duplicate keys once per process: DynamoDB Local's JIT
// is cold for the first benchmark otherwise, which then measures the compiler, not the code.
var warmJVM sync.Once

func benchGuard(b *testing.B, cfg Config) *Guard {
	b.Helper()
	e := newEnv(b, "")
	cfg.Now = time.Now
	g := e.guard(b, cfg)
	warmJVM.Do(func() {
		for i := range 300 {
			req := Request{Key: "warm-" + strconv.Itoa(i%150), Payload: []byte("w")}
			if _, err := g.Run(context.Background(), req, okFn); err != nil {
				b.Fatal(err)
			}
		}
	})
	return g
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkRunNew: a new key per run, 2 UpdateItems (acquire + complete).
func BenchmarkRunNew(b *testing.B) {
	g := benchGuard(b, Config{ValidatePayload: true})
	ctx := context.Background()
	payload := []byte(`{"order":42}`)
	for b.Loop() {
		key := "new-" + strconv.FormatInt(benchSeq.Add(1), 10)
		if res, err := g.Run(ctx, Request{Key: key, Payload: payload}, okFn); err != nil || res.Outcome != OutcomeProcessed {
			b.Fatal(res, err)
		}
	}
	reportRate(b)
}

// BenchmarkRunDuplicate: the same COMPLETED key every run, 1 UpdateItem (a failed acquire).
func BenchmarkRunDuplicate(b *testing.B) {
	g := benchGuard(b, Config{ValidatePayload: true})
	ctx := context.Background()
	req := Request{Key: "dup", Payload: []byte(`{"order":42}`)}
	if _, err := g.Run(ctx, req, okFn); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := g.Run(ctx, req, okFn); err != nil || res.Outcome != OutcomeDuplicate {
			b.Fatal(res, err)
		}
	}
	reportRate(b)
}

// BenchmarkRunDuplicateCached: the same key with the LRU on, no DynamoDB call.
func BenchmarkRunDuplicateCached(b *testing.B) {
	g := benchGuard(b, Config{ValidatePayload: true, CacheSize: 1024})
	ctx := context.Background()
	req := Request{Key: "dup", Payload: []byte(`{"order":42}`)}
	if _, err := g.Run(ctx, req, okFn); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := g.Run(ctx, req, okFn); err != nil || res.Outcome != OutcomeDuplicate {
			b.Fatal(res, err)
		}
	}
	reportRate(b)
}

// BenchmarkRunNewParallel: new keys from GOMAXPROCS*8 goroutines (the batch processor runs
// 10 records at a time by default).
func BenchmarkRunNewParallel(b *testing.B) {
	g := benchGuard(b, Config{ValidatePayload: true})
	payload := []byte(`{"order":42}`)
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			key := "pnew-" + strconv.FormatInt(benchSeq.Add(1), 10)
			if res, err := g.Run(ctx, Request{Key: key, Payload: payload}, okFn); err != nil || res.Outcome != OutcomeProcessed {
				b.Error(res, err)
				return
			}
		}
	})
	reportRate(b)
}

// BenchmarkRunDuplicateParallel: one COMPLETED key from GOMAXPROCS*8 goroutines.
func BenchmarkRunDuplicateParallel(b *testing.B) {
	g := benchGuard(b, Config{ValidatePayload: true})
	req := Request{Key: "dup", Payload: []byte(`{"order":42}`)}
	if _, err := g.Run(context.Background(), req, okFn); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if res, err := g.Run(ctx, req, okFn); err != nil || res.Outcome != OutcomeDuplicate {
				b.Error(res, err)
				return
			}
		}
	})
	reportRate(b)
}
