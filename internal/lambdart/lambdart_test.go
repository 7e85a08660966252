package lambdart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// fnBinary is testdata/fn, built once like a deployed function.
var fnBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lambdart-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fnBinary = filepath.Join(dir, "bootstrap")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := lambdart.Build(ctx, "./testdata/fn", fnBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// response is what testdata/fn returns.
type response struct {
	RequestID   string             `json:"requestId"`
	DeadlineMs  int64              `json:"deadlineMs"`
	FunctionARN string             `json:"functionArn"`
	TraceID     string             `json:"traceId"`
	Message     string             `json:"message"`
	Invocation  int64              `json:"invocation"`
	PID         int                `json:"pid"`
	Env         map[string]*string `json:"env"`
	Data        string             `json:"data"`
}

// newEnv starts an Env on testdata/fn. A test that does not time an invocation out gets a
// minute instead of Lambda's 3 s default: its invocations must finish, however loaded the
// machine, and they return as soon as they do.
func newEnv(t *testing.T, cfg lambdart.Config) *lambdart.Env {
	t.Helper()
	cfg.Binary = fnBinary
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	env, err := lambdart.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

func invoke(t *testing.T, env *lambdart.Env, event map[string]any) (lambdart.Result, error) {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return env.Invoke(ctx, payload)
}

// mustInvoke expects a successful invocation and decodes the response.
func mustInvoke(t *testing.T, env *lambdart.Env, event map[string]any) (lambdart.Result, response) {
	t.Helper()
	res, err := invoke(t, env, event)
	if err != nil {
		t.Fatalf("invoke %v: %v", event, err)
	}
	if res.FunctionError != nil {
		t.Fatalf("invoke %v: function error %v", event, res.FunctionError)
	}
	var out response
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		t.Fatalf("response %q: %v", res.Payload, err)
	}
	return res, out
}

var traceID = regexp.MustCompile(`^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0$`)

func TestEchoColdThenWarm(t *testing.T) {
	const timeout = 7 * time.Second
	env := newEnv(t, lambdart.Config{FunctionName: "echo", Timeout: timeout})
	// The deadline is handed out with the event, somewhere inside each Invoke call: bound it
	// by the call's own start and end, however long a loaded machine takes for either.
	type span struct{ start, end time.Time }
	invokeTimed := func(msg string) (lambdart.Result, response, span) {
		start := time.Now()
		res, out := mustInvoke(t, env, map[string]any{"action": "echo", "message": msg})
		return res, out, span{start, time.Now()}
	}
	first, out1, span1 := invokeTimed("hello")
	second, out2, span2 := invokeTimed("again")

	if !first.ColdStart || first.InitDuration <= 0 {
		t.Errorf("first invocation: ColdStart %v InitDuration %v, want a cold start with an init duration", first.ColdStart, first.InitDuration)
	}
	if second.ColdStart || second.InitDuration != 0 {
		t.Errorf("second invocation: ColdStart %v InitDuration %v, want warm", second.ColdStart, second.InitDuration)
	}
	if out1.PID != out2.PID || out2.Invocation != 2 {
		t.Errorf("warm invocation ran in pid %d as invocation %d, want pid %d invocation 2", out2.PID, out2.Invocation, out1.PID)
	}
	for _, c := range []struct {
		res  lambdart.Result
		out  response
		msg  string
		call span
	}{{first, out1, "hello", span1}, {second, out2, "again", span2}} {
		if c.out.Message != c.msg {
			t.Errorf("message %q, want %q", c.out.Message, c.msg)
		}
		if c.out.RequestID == "" || c.out.RequestID != c.res.RequestID {
			t.Errorf("function saw request id %q, Result has %q", c.out.RequestID, c.res.RequestID)
		}
		// The function's ctx.Deadline() comes from Lambda-Runtime-Deadline-Ms.
		if c.out.DeadlineMs != c.res.Deadline.UnixMilli() {
			t.Errorf("function deadline %d, Result deadline %d", c.out.DeadlineMs, c.res.Deadline.UnixMilli())
		}
		// Deadline is truncated to the millisecond, as the header carries it.
		if lo, hi := c.call.start.Add(timeout).Truncate(time.Millisecond), c.call.end.Add(timeout); c.res.Deadline.Before(lo) || c.res.Deadline.After(hi) {
			t.Errorf("deadline %s after the call started (which took %s), want the %s timeout from hand-out, inside the call",
				c.res.Deadline.Sub(c.call.start), c.call.end.Sub(c.call.start), timeout)
		}
		if c.out.FunctionARN != "arn:aws:lambda:us-east-1:123456789012:function:echo" || c.out.FunctionARN != env.FunctionARN() {
			t.Errorf("function ARN %q", c.out.FunctionARN)
		}
		if !traceID.MatchString(c.out.TraceID) {
			t.Errorf("trace id %q", c.out.TraceID)
		}
		if c.res.Duration <= 0 {
			t.Errorf("duration %v", c.res.Duration)
		}
	}
	if first.RequestID == second.RequestID {
		t.Errorf("both invocations had request id %s", first.RequestID)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("LAMBDART_HOST_ONLY", "leak")
	env := newEnv(t, lambdart.Config{
		FunctionName: "consumer",
		MemoryMB:     256,
		Region:       "eu-west-1",
		Env:          map[string]string{"QUEUE_URL": "http://127.0.0.1:9324/q", "AWS_SECRET_ACCESS_KEY": "given", "AWS_LAMBDA_RUNTIME_API": "ignored"},
	})
	_, out := mustInvoke(t, env, map[string]any{"action": "env", "env": []string{
		"QUEUE_URL", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"_HANDLER", "LAMBDA_TASK_ROOT", "TZ", "AWS_LAMBDA_RUNTIME_API", "LAMBDART_HOST_ONLY",
	}})
	want := map[string]string{
		"QUEUE_URL":                       "http://127.0.0.1:9324/q",
		"AWS_LAMBDA_FUNCTION_NAME":        "consumer",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_REGION":                      "eu-west-1",
		"AWS_DEFAULT_REGION":              "eu-west-1",
		"AWS_SECRET_ACCESS_KEY":           "given",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(fnBinary),
		"TZ":                              ":UTC",
	}
	for k, v := range want {
		if got := out.Env[k]; got == nil || *got != v {
			t.Errorf("%s = %v, want %q", k, deref(got), v)
		}
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN"} {
		if got := out.Env[k]; got == nil || *got == "" {
			t.Errorf("%s unset, want dummy credentials", k)
		}
	}
	if api := out.Env["AWS_LAMBDA_RUNTIME_API"]; api == nil || !strings.HasPrefix(*api, "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %v, want the Env's loopback server", deref(api))
	}
	if got := out.Env["LAMBDART_HOST_ONLY"]; got != nil {
		t.Errorf("host variable leaked into the function: %q", *got)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return fmt.Sprintf("%q", *s)
}

func TestFunctionErrorKeepsTheProcess(t *testing.T) {
	env := newEnv(t, lambdart.Config{})
	res, err := invoke(t, env, map[string]any{"action": "error", "message": "bad input"})
	if err != nil {
		t.Fatal(err)
	}
	if fe := res.FunctionError; fe == nil || fe.Type != "validationError" || fe.Message != "bad input" || res.Payload != nil {
		t.Fatalf("FunctionError %v, payload %q; want validationError: bad input", fe, res.Payload)
	}
	if next, _ := mustInvoke(t, env, map[string]any{"action": "echo"}); next.ColdStart {
		t.Error("a returned error restarted the process; Lambda keeps it")
	}
}

func TestPanicReportsAndRestarts(t *testing.T) {
	env := newEnv(t, lambdart.Config{})
	res, err := invoke(t, env, map[string]any{"action": "panic", "message": "boom"})
	if err != nil {
		t.Fatal(err)
	}
	if fe := res.FunctionError; fe == nil || fe.Type != "string" || fe.Message != "boom" || !bytes.Contains(fe.Payload, []byte("stackTrace")) {
		t.Fatalf("FunctionError %v (payload %s), want the panic with its stack", fe, res.FunctionError.Payload)
	}
	// aws-lambda-go exits after reporting a panic; the next event goes to a new process.
	if next, _ := mustInvoke(t, env, map[string]any{"action": "echo"}); !next.ColdStart {
		t.Error("invocation after a panic was not a cold start")
	}
}

func TestTimeoutKillsAndColdStartsAgain(t *testing.T) {
	// The echo invocations around the overrunning one must finish within the timeout too:
	// Lambda's default 3 s leaves a loaded machine room, and only the sleep waits it out.
	env := newEnv(t, lambdart.Config{Timeout: lambdart.DefaultTimeout})
	_, out := mustInvoke(t, env, map[string]any{"action": "echo"})
	res, err := invoke(t, env, map[string]any{"action": "sleep", "sleepMs": 60_000})
	if !errors.Is(err, lambdart.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if res.RequestID == "" || res.ColdStart {
		t.Errorf("Result after timeout: %+v, want the request id of a warm invocation", res)
	}
	if alive(out.PID) {
		t.Errorf("pid %d still alive after the timeout", out.PID)
	}
	next, out2 := mustInvoke(t, env, map[string]any{"action": "echo"})
	if !next.ColdStart || out2.PID == out.PID || out2.Invocation != 1 {
		t.Errorf("after a timeout: ColdStart %v pid %d (was %d) invocation %d, want a fresh process", next.ColdStart, out2.PID, out.PID, out2.Invocation)
	}
}

func TestCrashIsReportedWithoutWaitingForTheDeadline(t *testing.T) {
	// With a 1 minute timeout, a crash noticed only at the deadline would fail as ErrTimeout
	// (and the suite's timeout would show it), so no timing assertion is needed.
	env := newEnv(t, lambdart.Config{Timeout: time.Minute})
	_, err := invoke(t, env, map[string]any{"action": "exit", "code": 3})
	if !errors.Is(err, lambdart.ErrCrashed) || errors.Is(err, lambdart.ErrTimeout) || errors.Is(err, lambdart.ErrInit) {
		t.Fatalf("err = %v, want ErrCrashed only", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "exiting") {
		t.Errorf("crash error %q should give the exit status and the last output", msg)
	}
	if next, _ := mustInvoke(t, env, map[string]any{"action": "echo"}); !next.ColdStart {
		t.Error("invocation after a crash was not a cold start")
	}
}

// lines collects Output lines and lets a test wait for one.
type lines struct {
	mu  sync.Mutex
	got []string
}

func newLines() *lines { return &lines{} }

func (l *lines) output(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, string(line))
}

// waitFor waits for the line want: up to a minute, a hang guard that a loaded machine does
// not reach (the wait ends as soon as the line is there).
func (l *lines) waitFor(t *testing.T, want string) {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(time.Minute); !slices.Contains(l.snapshot(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no output line %q after %s in %q", want, time.Since(start).Round(time.Millisecond), l.snapshot())
		}
	}
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func TestKillDuringInvocation(t *testing.T) {
	out := newLines()
	env := newEnv(t, lambdart.Config{Timeout: time.Minute, Output: out.output})
	done := make(chan error, 1)
	go func() {
		_, err := invoke(t, env, map[string]any{"action": "sleep", "sleepMs": 60_000})
		done <- err
	}()
	out.waitFor(t, "sleeping")
	pid := env.PID()
	env.Kill()
	if err := <-done; !errors.Is(err, lambdart.ErrCrashed) || !strings.Contains(err.Error(), "Env.Kill") {
		t.Fatalf("err = %v, want ErrCrashed from Kill", err)
	}
	if pid == 0 || alive(pid) || env.PID() != 0 {
		t.Errorf("pid %d: alive %v after Kill, Env.PID %d", pid, alive(pid), env.PID())
	}
	if next, _ := mustInvoke(t, env, map[string]any{"action": "echo"}); !next.ColdStart {
		t.Error("invocation after Kill was not a cold start")
	}
}

func TestContextCanceledMidInvocationKills(t *testing.T) {
	out := newLines()
	env := newEnv(t, lambdart.Config{Timeout: time.Minute, Output: out.output})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := env.Invoke(ctx, []byte(`{"action":"sleep","sleepMs":60000}`))
		done <- err
	}()
	out.waitFor(t, "sleeping")
	pid := env.PID()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if alive(pid) {
		t.Errorf("pid %d alive after its invocation's context ended", pid)
	}
}

func TestOutputLinesFromStdoutAndStderr(t *testing.T) {
	out := newLines()
	env := newEnv(t, lambdart.Config{Output: out.output})
	stdout := []string{"out 1", "out 2", `{"level":"INFO","msg":"json line"}`}
	stderr := []string{"err 1", "err 2"}
	mustInvoke(t, env, map[string]any{"action": "print", "stdout": stdout, "stderr": stderr})
	// Lines travel through pipes and may trail the response; the last of each stream ends
	// the wait.
	for _, last := range []string{stdout[len(stdout)-1], stderr[len(stderr)-1]} {
		out.waitFor(t, last)
	}
	got := out.snapshot()
	for _, stream := range [][]string{stdout, stderr} {
		var order []string
		for _, line := range got {
			if slices.Contains(stream, line) {
				order = append(order, line)
			}
		}
		if !slices.Equal(order, stream) {
			t.Errorf("got %q of %q; want each line once, in order (all output: %q)", order, stream, got)
		}
	}
	if !slices.Contains(got, "init done") {
		t.Errorf("init output missing: %q", got)
	}
}

func TestInitFailures(t *testing.T) {
	t.Run("init error posted", func(t *testing.T) {
		env := newEnv(t, lambdart.Config{Env: map[string]string{"FN_INIT": "error"}})
		_, err := invoke(t, env, map[string]any{"action": "echo"})
		var fe *lambdart.FunctionError
		if !errors.Is(err, lambdart.ErrInit) || !errors.As(err, &fe) || fe.Type != "InitTestError" || fe.Message != "config invalid" {
			t.Fatalf("err = %v, want ErrInit with the posted InitTestError", err)
		}
		if env.PID() != 0 {
			t.Error("process still running after its init error")
		}
	})
	t.Run("exit during init", func(t *testing.T) {
		env := newEnv(t, lambdart.Config{Env: map[string]string{"FN_INIT": "exit"}})
		_, err := invoke(t, env, map[string]any{"action": "echo"})
		if !errors.Is(err, lambdart.ErrInit) || !errors.Is(err, lambdart.ErrCrashed) {
			t.Fatalf("err = %v, want ErrInit and ErrCrashed", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "exit status 2") || !strings.Contains(msg, "missing configuration") {
			t.Errorf("error %q should give the exit status and the last output", msg)
		}
	})
	t.Run("init timeout", func(t *testing.T) {
		env := newEnv(t, lambdart.Config{InitTimeout: 300 * time.Millisecond, Env: map[string]string{"FN_INIT": "sleep"}})
		_, err := invoke(t, env, map[string]any{"action": "echo"})
		if !errors.Is(err, lambdart.ErrInit) || !errors.Is(err, lambdart.ErrTimeout) {
			t.Fatalf("err = %v, want ErrInit and ErrTimeout", err)
		}
		if env.PID() != 0 {
			t.Error("process still running after its init timed out")
		}
	})
}

func TestResponseTooLarge(t *testing.T) {
	env := newEnv(t, lambdart.Config{})
	res, err := invoke(t, env, map[string]any{"action": "big", "size": lambdart.MaxResponseSize})
	if err != nil {
		t.Fatal(err)
	}
	if fe := res.FunctionError; fe == nil || fe.Type != "Function.ResponseSizeTooLarge" || res.Payload != nil {
		t.Fatalf("FunctionError %v, want Function.ResponseSizeTooLarge", fe)
	}
	// Just under the limit (the JSON envelope adds a few hundred bytes) passes.
	if _, out := mustInvoke(t, env, map[string]any{"action": "big", "size": lambdart.MaxResponseSize - 1024}); len(out.Data) != lambdart.MaxResponseSize-1024 {
		t.Errorf("data of %d bytes", len(out.Data))
	}
}

func TestConcurrentInvokesTakeTurns(t *testing.T) {
	env := newEnv(t, lambdart.Config{})
	var wg sync.WaitGroup
	got := make([]int64, 3)
	for i := range got {
		wg.Go(func() {
			res, err := env.Invoke(context.Background(), []byte(`{"action":"sleep","sleepMs":50}`))
			if err != nil || res.FunctionError != nil {
				t.Errorf("invoke: %v %v", err, res.FunctionError)
				return
			}
			var out response
			_ = json.Unmarshal(res.Payload, &out)
			got[i] = out.Invocation
		})
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("invocation numbers %v, want 1, 2, 3 in one process", got)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	baseline := runtime.NumGoroutine()
	env := newEnv(t, lambdart.Config{})
	_, out := mustInvoke(t, env, map[string]any{"action": "echo"})
	env.Close()
	env.Close()
	if alive(out.PID) {
		t.Errorf("pid %d alive after Close", out.PID)
	}
	if _, err := invoke(t, env, map[string]any{"action": "echo"}); !errors.Is(err, lambdart.ErrClosed) {
		t.Errorf("Invoke after Close: %v, want ErrClosed", err)
	}
	// Goroutines end asynchronously after Close; 30 s is a hang guard, not a speed.
	closed := time.Now()
	for runtime.NumGoroutine() > baseline {
		if time.Since(closed) > 30*time.Second {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines %s after Close, %d before:\n%s", runtime.NumGoroutine(), time.Since(closed).Round(time.Millisecond), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewRejectsAMissingBinary(t *testing.T) {
	for _, cfg := range []lambdart.Config{{}, {Binary: filepath.Join(t.TempDir(), "none")}, {Binary: t.TempDir()}} {
		if _, err := lambdart.New(cfg); err == nil || !strings.Contains(err.Error(), "Binary") {
			t.Errorf("New(%+v) = %v, want an error naming Binary", cfg, err)
		}
	}
}

// Credentials that expire are replaced as Lambda replaces an environment: before an
// invocation that could outlast them, the process ends and a new one (a cold start) gets new
// ones; no invocation runs with credentials that expire before it ends. A failure to get
// them fails the invocation as an init failure.
func TestCredentialsAreReplacedBeforeTheyExpire(t *testing.T) {
	var mu sync.Mutex
	expires := map[string]time.Time{}
	const lifetime = 6 * time.Second // with Timeout 2 s: replaced with 3 s left
	env := newEnv(t, lambdart.Config{Timeout: 2 * time.Second, Credentials: func(ctx context.Context) (lambdart.Credentials, error) {
		mu.Lock()
		defer mu.Unlock()
		token := fmt.Sprintf("token-%d", len(expires)+1)
		expires[token] = time.Now().Add(lifetime)
		return lambdart.Credentials{AccessKeyID: "AKID" + token, SecretAccessKey: "secret", SessionToken: token, Expires: expires[token]}, nil
	}})
	var seen []string
	least := lifetime
	start := time.Now()
	for time.Since(start) < 8*time.Second {
		res, out := mustInvoke(t, env, map[string]any{"action": "env", "env": []string{"AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"}})
		token := deref(out.Env["AWS_SESSION_TOKEN"])
		mu.Lock()
		left := time.Until(expires[strings.Trim(token, `"`)])
		mu.Unlock()
		least = min(least, left)
		if left <= 0 || deref(out.Env["AWS_ACCESS_KEY_ID"]) != `"AKID`+strings.Trim(token, `"`)+`"` {
			t.Errorf("an invocation ran with %s (key %s), %v from its expiry", token, deref(out.Env["AWS_ACCESS_KEY_ID"]), left)
		}
		if n := len(seen); n == 0 || seen[n-1] != token {
			if !res.ColdStart {
				t.Errorf("credentials %s without a cold start", token)
			}
			seen = append(seen, token)
		} else if res.ColdStart {
			t.Errorf("a cold start that kept the credentials %s", token)
		}
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Printf("FIGURE lambdart credentials: %d sets in %v (lifetime %v), the least left at an invocation's end %v\n", len(seen), time.Since(start).Round(100*time.Millisecond), lifetime, least.Round(10*time.Millisecond))
	if len(seen) < 2 {
		t.Errorf("credentials used: %v; want them replaced as they expire", seen)
	}

	failing := newEnv(t, lambdart.Config{Credentials: func(context.Context) (lambdart.Credentials, error) {
		return lambdart.Credentials{}, errors.New("AccessDenied: not allowed to assume the role")
	}})
	if _, err := failing.Invoke(context.Background(), []byte(`{}`)); !errors.Is(err, lambdart.ErrInit) || !strings.Contains(err.Error(), "the function's credentials: AccessDenied") {
		t.Errorf("credentials that fail: %v", err)
	}
}
