package coldstart

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
)

func TestBuild(t *testing.T) {
	if got, err := Build("answer", func() (int, error) { return 42, nil }); got != 42 || err != nil {
		t.Errorf("Build = %d, %v", got, err)
	}
	boom := errors.New("boom")
	if got, err := Build("answer", func() (int, error) { return 1, boom }); got != 0 || !errors.Is(err, boom) ||
		err.Error() != "build the answer: boom" {
		t.Errorf("Build error = %d, %v", got, err)
	}
	if got, err := Build("answer", func() (int, error) { panic("boom") }); got != 0 || err == nil ||
		err.Error() != "build the answer: panic: boom" {
		t.Errorf("Build panic = %d, %v", got, err)
	}
}

func TestAWSConfig(t *testing.T) {
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if cfg, err := AWSConfig(lookup, "SQS"); err != nil || cfg.Region != "eu-west-1" {
		t.Errorf("AWSConfig = %+v, %v", cfg, err)
	}
	delete(env, "AWS_REGION")
	if _, err := AWSConfig(lookup, "SQS"); err == nil || !strings.HasPrefix(err.Error(), "load AWS configuration: ") {
		t.Errorf("AWSConfig without a region: %v", err)
	}
}

func TestLogFit(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	LogFit(log, nil)
	if out.Len() != 0 {
		t.Errorf("nil fit logged %q, want nothing", out.String())
	}
	LogFit(log, &runtimefit.Fit{MemoryMB: 256, Procs: 1, GOGC: 400, MemoryLimit: 128 << 20})
	LogFit(log, &runtimefit.Fit{Procs: 2, GOGC: 100, MemoryLimit: math.MaxInt64, Skipped: []string{"all: not in Lambda"}})
	want := []string{
		`"level":"DEBUG","msg":"Go runtime fitted to the function's size","memoryMB":256,"gomaxprocs":1,"gogc":400,"memoryLimitBytes":134217728}`,
		`"level":"DEBUG","msg":"Go runtime fitted to the function's size","memoryMB":0,"gomaxprocs":2,"gogc":100,"memoryLimitBytes":9223372036854775807,"skipped":["all: not in Lambda"]}`,
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], want[0]) || !strings.HasSuffix(lines[1], want[1]) {
		t.Errorf("LogFit lines:\n%s\nwant lines ending\n%s\n%s", out.String(), want[0], want[1])
	}
}
