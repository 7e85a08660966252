package backfill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// backfill runs `pipelinectl ARGS` (a backfill) as main does, against the stand-ins: the
// exit status and the line main would print come from cli.Outcome.
func backfill(ctx context.Context, t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_PROFILE": "", "AWS_ENDPOINT_URL": ""} {
		t.Setenv(k, v)
	}
	if len(args) == 0 || args[0] != "backfill" {
		t.Fatalf("backfill %q: the command line starts with backfill", args)
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	code, line := cli.Outcome(ctx, Run(ctx, args[1:], cli.Streams{Out: &out, Err: &errOut, Argv: args}, cli.NewAWS))
	if line != "" {
		fmt.Fprintf(&errOut, "pipelinectl: %s\n", line)
	}
	t.Logf("$ pipelinectl %s   (exit %d, %s)\n%s%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// fakeScheduler answers GetSchedule with a schedule and Lambda's Invoke with the dispatcher's
// answer, recording the events: the deployed dispatcher behind them is test/e2e's
// (TestBackfillTwiceRunsEachOccurrenceOnce); here the CLI's own rules are tested.
type fakeScheduler struct {
	expr, zone, input string
	fail              map[string]bool // occurrences whose invocation fails
	mu                sync.Mutex
	events            []string
	onInvoke          func(n int) // after the n-th invocation is recorded
}

func (f *fakeScheduler) start(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /schedules/{name}", func(rw http.ResponseWriter, r *http.Request) {
		json.NewEncoder(rw).Encode(map[string]any{"Name": r.PathValue("name"), "State": "ENABLED", "ScheduleExpression": f.expr,
			"ScheduleExpressionTimezone": f.zone, "Target": map[string]any{"Arn": "arn:aws:lambda:us-east-1:1:function:d", "Input": f.input}})
	})
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var ev struct{ ScheduledTime string }
		json.Unmarshal(b, &ev)
		f.mu.Lock()
		f.events = append(f.events, string(b))
		n := len(f.events)
		f.mu.Unlock()
		if f.onInvoke != nil {
			f.onInvoke(n)
		}
		if f.fail[ev.ScheduledTime] {
			rw.Header().Set("X-Amz-Function-Error", "Unhandled")
			fmt.Fprint(rw, `{"errorMessage":"send to queue: AccessDenied"}`)
			return
		}
		fmt.Fprintf(rw, `{"occurrence":%q}`, ev.ScheduledTime)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_SCHEDULER", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv.URL)
	return srv.URL
}

func backfillOutputs(t *testing.T, withDispatcher bool) string {
	t.Helper()
	o := map[string]string{"StandardQueueUrl": "http://q/1/work", "StandardDeadLetterQueueUrl": "http://q/1/dlq"}
	if withDispatcher {
		o["StandardDispatcherFunctionName"], o["StandardScheduleName"], o["StandardScheduleGroupName"] = "d", "s", "g"
	}
	b, _ := json.Marshal(map[string]map[string]string{"S": o})
	path := filepath.Join(t.TempDir(), "outputs.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const hourlyInput = `{"scheduledTime":"<aws.scheduler.scheduled-time>","executionId":"<aws.scheduler.execution-id>","job":"j","items":[{"id":"a"}]}`

// Every backfill error names the fix.
func TestBackfillErrors(t *testing.T) {
	f := &fakeScheduler{expr: "rate(1 hour)", input: hourlyInput}
	f.start(t)
	out := backfillOutputs(t, true)
	args := func(extra ...string) []string {
		return append([]string{"backfill", "--outputs", out, "--pipeline", "Standard", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-01T03:00:00Z"}, extra...)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backfill", "--from", "yesterday"}, cli.ExitUsage, `--from "yesterday": give an RFC 3339 time, e.g. 2026-11-25T00:00:00Z`},
		{[]string{"backfill", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-01"}, cli.ExitUsage, `--to "2025-01-01": give an RFC 3339 time`},
		{[]string{"backfill", "--from", "2025-01-01T03:00:00Z", "--to", "2025-01-01T00:00:00Z"}, cli.ExitUsage, "--from 2025-01-01T03:00:00Z is not before --to 2025-01-01T00:00:00Z"},
		{[]string{"backfill", "--from", "2025-01-01T00:00:00Z", "--to", "2999-01-01T00:00:00Z"}, cli.ExitUsage, "--to 2999-01-01T00:00:00Z is in the future: backfill runs what was missed"},
		{args("--rate", "0"), cli.ExitUsage, "--rate 0: use 1 to 100 invocations per second"},
		{[]string{"backfill", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-01T03:00:00Z"}, cli.ExitUsage, "backfill needs the pipeline's outputs: give --stack or --outputs, with --pipeline"},
		{[]string{"backfill", "--outputs", backfillOutputs(t, false), "--pipeline", "Standard", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-01T03:00:00Z"}, cli.ExitError,
			"has no outputs StandardDispatcherFunctionName and StandardScheduleName: the pipeline has no dispatcher, or its stack predates them (deploy it again)"},
		{args(), cli.ExitError, `schedule s runs on "rate(1 hour)": only a cron schedule has occurrences to backfill`},
	} {
		code, stdout, errOut := backfill(t.Context(), t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("pipelinectl %q: exit %d, stderr %q; want exit %d with %q (stdout %q)", tc.args, code, errOut, tc.code, tc.want, stdout)
		}
	}
	f.expr, f.input = "cron(0 * * * ? *)", `{"job":"j"}`
	if code, _, errOut := backfill(t.Context(), t, args()...); code != cli.ExitError || !strings.Contains(errOut, "its input does not carry <aws.scheduler.scheduled-time>") {
		t.Errorf("input without the scheduled time: exit %d, %q", code, errOut)
	}
}

// A failed invocation is named and the run exits 3 with the command that resumes; Ctrl-C
// stops between invocations, and says what was dispatched.
func TestBackfillFailuresAndInterrupt(t *testing.T) {
	f := &fakeScheduler{expr: "cron(0 * * * ? *)", input: hourlyInput, fail: map[string]bool{"2025-01-01T01:00:00Z": true}}
	f.start(t)
	args := []string{"backfill", "--outputs", backfillOutputs(t, true), "--pipeline", "Standard", "--from", "2025-01-01T00:00:00Z", "--to", "2025-01-01T03:00:00Z", "--yes", "--rate", "100"}
	code, out, errOut := backfill(t.Context(), t, args...)
	wantContains(t, "backfill with a failure", out, "dispatched   2025-01-01T00:00:00Z", "FAILED       2025-01-01T01:00:00Z: occurrence 2025-01-01T01:00:00Z: the dispatcher failed (Unhandled): {\"errorMessage\":\"send to queue: AccessDenied\"}",
		"dispatched   2 of 3 occurrences", "NOT DONE     not done: 1 of 3 occurrences failed (exit 3)", "resume with  pipelinectl backfill ")
	if code != cli.ExitNotDone {
		t.Errorf("exit %d, want %d; stderr %q", code, cli.ExitNotDone, errOut)
	}
	for i, e := range f.events {
		if !strings.Contains(e, `"executionId":"pipelinectl-backfill-`) || strings.Contains(e, "<aws.scheduler") {
			t.Errorf("event %d = %s: want Scheduler's placeholders filled", i, e)
		}
	}

	// Ctrl-C while the second invocation is under way: it finishes, the third is not made.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.fail, f.events, f.onInvoke = nil, nil, func(n int) {
		if n == 2 {
			cancel()
		}
	}
	code, o, _ := backfill(ctx, t, append(args, "--output", "json")...)
	var s Summary
	if err := json.Unmarshal([]byte(o), &s); err != nil {
		t.Fatalf("--output json: %v\n%s", err, o)
	}
	if code != cli.ExitNotDone || s.Done || len(s.Dispatched) != 2 || len(f.events) != 2 || s.Status != "not done: interrupted" || !strings.HasPrefix(s.Resume, "pipelinectl backfill ") {
		t.Errorf("interrupted backfill: exit %d, %d invocations made, summary %+v", code, len(f.events), s)
	}
}

// A local time that daylight saving repeats is named, not dispatched: Scheduler ran it once
// at an instant it does not document.
func TestBackfillLeavesRepeatedLocalTimes(t *testing.T) {
	f := &fakeScheduler{expr: "cron(30 2 * * ? *)", zone: "Europe/Berlin", input: hourlyInput}
	f.start(t)
	code, out, errOut := backfill(t.Context(), t, "backfill", "--outputs", backfillOutputs(t, true), "--pipeline", "Standard", "--from", "2025-10-25T00:00:00Z", "--to", "2025-10-28T00:00:00Z")
	if code != cli.ExitOK {
		t.Fatalf("dry run: exit %d, %s", code, errOut)
	}
	wantContains(t, "backfill over the end of summer time", out, "occurrences  2 in [", "2025-10-25T00:30:00Z  (2025-10-25 02:30 CEST)",
		"2025-10-27T01:30:00Z  (2025-10-27 02:30 CET)", "NOT dispatched: 2025-10-26 02:30 CEST (2025-10-26T00:30:00Z or an hour later) occurs twice")
}
