package lambdart_test

import (
	"context"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// BenchmarkColdStart measures a cold invocation of testdata/fn: process start, init (until
// the first /next, reported as init-ms) and one echo.
func BenchmarkColdStart(b *testing.B) {
	env, err := lambdart.New(lambdart.Config{Binary: fnBinary})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	var init time.Duration
	n := 0
	for b.Loop() {
		env.Kill()
		res, err := env.Invoke(context.Background(), []byte(`{"action":"echo"}`))
		if err != nil || res.FunctionError != nil || !res.ColdStart {
			b.Fatalf("invoke: %v %v cold %v", err, res.FunctionError, res.ColdStart)
		}
		init += res.InitDuration
		n++
	}
	b.ReportMetric(float64(init.Microseconds())/1000/float64(n), "init-ms/op")
}

// BenchmarkWarmInvoke measures the Runtime API round trip of one warm echo.
func BenchmarkWarmInvoke(b *testing.B) {
	env, err := lambdart.New(lambdart.Config{Binary: fnBinary})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	payload := []byte(`{"action":"echo"}`)
	if _, err := env.Invoke(context.Background(), payload); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := env.Invoke(context.Background(), payload)
		if err != nil || res.FunctionError != nil || res.ColdStart {
			b.Fatalf("invoke: %v %v cold %v", err, res.FunctionError, res.ColdStart)
		}
	}
}
