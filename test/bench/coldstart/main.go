// Command coldstart measures a cold start's proxy (binary size and init time) for the pipeline's Lambda
// binaries beside a hello-world aws-lambda-go binary built the same way, in one run:
//
//   - size: the stripped linux/arm64 binary, as bundling builds it (goal <= 8 MiB);
//   - init: process start to the first Runtime API /next request, on this machine, median
//     of -n cold starts with min-max, taken in turns (hello, consumer, dispatcher, hello, ...)
//     so that machine noise hits all three alike (goal <= 3x hello's).
//
// The binaries run under internal/lambdart with the environment their constructs give
// them (no network is touched before /next). AWS's published hello-world Go init on
// provided.al2023 arm64 is 41-44 ms; that includes the sandbox, which a local process lacks,
// so only the ratios carry over.
//
//	go run ./test/bench/coldstart -n 20 -out /tmp/coldstart.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/test/internal/stats"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

type binary struct {
	name, pkg string
	env       map[string]string
	payload   string
	path      string // host build
	size      int64  // arm64 build
	inits     []time.Duration
}

func main() {
	n := flag.Int("n", 20, "cold starts per binary")
	out := flag.String("out", "", "also write the markdown table to this file")
	flag.Parse()
	if err := run(*n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

func run(n int, out string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const mod = "github.com/idempotent-sqs/pipeline/"
	bins := []*binary{
		{name: "hello-world", pkg: mod + "test/bench/coldstart/hello", payload: `{}`},
		{name: "consumer", pkg: mod + "functions/consumer", payload: `{"Records":[]}`, env: map[string]string{
			"IDEMPOTENCY_TABLE_NAME": "IdempotencyTable", "IDEMPOTENCY_KEY_PREFIX": "Standard",
			"DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
			"IDEMPOTENCY_LOCK_CAP":  "30s", "IDEMPOTENCY_RECORD_TTL": "96h", "BATCH_CONCURRENCY": "10", "LOG_LEVEL": "INFO",
		}},
		{name: "dispatcher", pkg: mod + "functions/dispatcher", payload: `{"scheduledTime":"2026-11-23T10:00:00Z","items":[]}`, env: map[string]string{
			"QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "JOB_NAME": "job", "LOG_LEVEL": "INFO",
		}},
	}
	for _, b := range bins {
		b.path = filepath.Join(dir, b.name, "bootstrap")
		if err := lambdart.Build(ctx, b.pkg, b.path); err != nil {
			return err
		}
		arm := filepath.Join(dir, b.name, "bootstrap-arm64")
		cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, lambdart.BuildFlags...), "-o", arm, b.pkg)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s for arm64: %v\n%s", b.name, err, msg)
		}
		fi, err := os.Stat(arm)
		if err != nil {
			return err
		}
		b.size = fi.Size()
	}
	for range n {
		for _, b := range bins {
			d, err := coldStart(ctx, b)
			if err != nil {
				return err
			}
			b.inits = append(b.inits, d)
		}
	}
	report := table(bins, n)
	fmt.Print(report)
	if out != "" {
		return os.WriteFile(out, []byte(report), 0o644)
	}
	return nil
}

// coldStart starts a fresh execution environment, invokes it once and returns its init
// duration. The invocation must succeed: a binary that fails at init would measure nothing.
func coldStart(ctx context.Context, b *binary) (time.Duration, error) {
	env, err := lambdart.New(lambdart.Config{Binary: b.path, Env: b.env, Timeout: 10 * time.Second, MemoryMB: 256})
	if err != nil {
		return 0, err
	}
	defer env.Close()
	res, err := env.Invoke(ctx, []byte(b.payload))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.name, err)
	}
	if res.FunctionError != nil {
		return 0, fmt.Errorf("%s: function error %v", b.name, res.FunctionError)
	}
	if !res.ColdStart || res.InitDuration <= 0 {
		return 0, fmt.Errorf("%s: no cold start measured", b.name)
	}
	return res.InitDuration, nil
}

func table(bins []*binary, n int) string {
	var sb strings.Builder
	w := io.Writer(&sb)
	host, _ := os.Hostname()
	fmt.Fprintf(w, "Cold-start proxy, `go run ./test/bench/coldstart -n %d` (%s, %s): init = process start to the first Runtime API /next, %d cold starts each, taken in turns; size = stripped linux/arm64 binary as bundled.\n\n", n, host, time.Now().UTC().Format("2006-01-02"), n)
	fmt.Fprintln(w, "| binary | size (MiB) | size goal <= 8 MiB | init median (min-max) | init / hello-world | goal <= 3x |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---|")
	hello, _, _ := stats.Median(bins[0].inits)
	for _, b := range bins {
		m, lo, hi := stats.Median(b.inits)
		ratio := float64(m) / float64(hello)
		fmt.Fprintf(w, "| %s | %.2f | %s | %s (%s-%s) | %.2f | %s |\n", b.name, float64(b.size)/(1<<20), verdict(b.size <= 8<<20),
			ms(m), ms(lo), ms(hi), ratio, verdict(ratio <= 3))
	}
	return sb.String()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
