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

// Init returns the wired handler of a valid configuration, and of a configuration or a wiring
// that cannot work a handler that fails with the reason, said once in the log under the
// function's name.
func TestInit(t *testing.T) {
	type config struct{ level slog.Level }
	wired := errors.New("wired")
	for _, tc := range []struct {
		name            string
		loadErr, wirErr error
		want            string // the handler's error
		wantLog         string
	}{
		{name: "valid", want: "wired"},
		{name: "configuration", loadErr: errors.New("LOG_LEVEL=LOUD: want DEBUG, INFO, WARN or ERROR"), want: "LOG_LEVEL=LOUD",
			wantLog: `"level":"ERROR","message":"thing not configured: every invocation will fail","service":"svc","error":"LOG_LEVEL=LOUD`},
		{name: "wiring", wirErr: errors.New("build the effect: no table"), want: "build the effect: no table",
			wantLog: `"message":"thing not configured: every invocation will fail","service":"svc","error":"build the effect: no table"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			h := Init(Options{IO: IO{Lookup: func(string) (string, bool) { return "", false }, Out: &out}}, Function[config, func() error]{
				Name:    "thing",
				Load:    func(func(string) (string, bool)) (config, error) { return config{level: slog.LevelWarn}, tc.loadErr },
				Logging: func(c config) (slog.Level, string) { return c.level, "svc" },
				Wire: func(config, *slog.Logger) (func() error, error) {
					return func() error { return wired }, tc.wirErr
				},
				Failing: func(err error) func() error { return func() error { return err } },
			})
			if err := h(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the handler returns %v, want %q", err, tc.want)
			}
			if tc.wantLog == "" && out.Len() > 0 {
				t.Errorf("a valid start logs %q, want nothing at WARN", out.String())
			}
			if tc.wantLog != "" && (!strings.Contains(out.String(), tc.wantLog) || strings.Count(out.String(), "\n") != 1) {
				t.Errorf("log = %q, want one line with %q", out.String(), tc.wantLog)
			}
		})
	}
}
