//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// Both deployed binaries fit the Go runtime to their memory size when Lambda starts them
// (package runtimefit): GOMAXPROCS to the CPU share, the collector to GOGC=400 within half the
// memory; a setting of the environment wins. The cold start's DEBUG line reports the runtime's
// values as the process reads them back; the process is the one Lambda runs, started by
// lambdart with AWS_LAMBDA_FUNCTION_MEMORY_SIZE as Lambda sets it.
func TestBinariesFitTheGoRuntimeToTheirMemory(t *testing.T) {
	ncpu := runtime.NumCPU()
	for _, bin := range []string{"consumer", "dispatcher"} {
		for _, c := range []struct {
			memoryMB         int
			env              map[string]string
			gomaxprocs, gogc int
			limit            int64 // bytes
		}{
			{128, nil, 1, 400, 128 << 20 / 2},
			{256, nil, 1, 400, 256 << 20 / 2},
			{1769, nil, 1, 400, 1769 << 20 / 2},
			{3538, nil, min(2, ncpu), 400, 3538 << 20 / 2},
			{256, map[string]string{"GOMAXPROCS": "2", "GOGC": "50", "GOMEMLIMIT": "100MiB"}, 2, 50, 100 << 20}, // the environment wins
		} {
			t.Run(fmt.Sprintf("%s/%dMB/%v", bin, c.memoryMB, c.env), func(t *testing.T) {
				line := coldStartFitLine(t, bin, c.memoryMB, c.env)
				procs, _ := line["gomaxprocs"].(float64)
				gogc, _ := line["gogc"].(float64)
				limit, _ := line["memoryLimitBytes"].(float64)
				if int(procs) != c.gomaxprocs || int(gogc) != c.gogc || int64(limit) != c.limit {
					t.Errorf("cold start line %v: want gomaxprocs %d, gogc %d, memoryLimitBytes %d", line, c.gomaxprocs, c.gogc, c.limit)
				}
			})
		}
	}
}

// coldStartFitLine starts bin once with LOG_LEVEL=DEBUG and returns its runtimefit line.
func coldStartFitLine(t *testing.T, bin string, memoryMB int, env map[string]string) map[string]any {
	t.Helper()
	vars := map[string]string{"LOG_LEVEL": "DEBUG", "IDEMPOTENCY_DISABLED": "true"}
	maps.Copy(vars, env)
	var mu sync.Mutex
	var out bytes.Buffer
	e, err := lambdart.New(lambdart.Config{
		Binary: bins[bin], Env: vars, FunctionName: "runtimefit-" + bin, Timeout: 10 * time.Second, MemoryMB: memoryMB,
		Output: func(line []byte) { mu.Lock(); out.Write(line); out.WriteByte('\n'); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The dispatcher fails this invocation (no queue configured); only the cold start matters.
	if _, err := e.Invoke(context.Background(), []byte(`{}`)); err != nil {
		t.Fatalf("invoke: %v", err)
	}
	e.Close() // waits for the last output lines
	mu.Lock()
	defer mu.Unlock()
	for _, raw := range bytes.Split(out.Bytes(), []byte("\n")) {
		var l map[string]any
		if json.Unmarshal(raw, &l) == nil && l["gomaxprocs"] != nil {
			return l
		}
	}
	t.Fatalf("no runtimefit line in the cold start's output:\n%s", out.String())
	return nil
}
