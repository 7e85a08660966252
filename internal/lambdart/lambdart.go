// Package lambdart runs a real Lambda bootstrap binary under a local implementation of the
// Lambda Runtime API, so end-to-end tests and benchmarks exercise the binaries that are
// deployed (built for the host with Build) rather than calling handlers in-process.
//
// An Env is one execution environment: at most one process, one invocation at a time.
// Invoke starts the process when none is running (a cold start), hands it the event through
// GET /2018-06-01/runtime/invocation/next and waits for its response or error. As on Lambda,
// a timeout kills the process, a process that exits mid-invocation fails that invocation
// at once, and the next Invoke starts a fresh process:
//
//	env, err := lambdart.New(lambdart.Config{Binary: bin, Timeout: 5 * time.Second})
//	if err != nil { t.Fatal(err) }
//	t.Cleanup(env.Close)
//	res, err := env.Invoke(ctx, []byte(`{"Records":[]}`))
//	// err: errors.Is ErrTimeout, ErrCrashed, ErrInit or ErrClosed, or the ctx error.
//	// res.FunctionError: the function returned (or panicked with) an error.
//
// Each process gets its own loopback HTTP server on a free port, closed when the process
// exits, so a request a killed process left behind can never take the next process's event.
// The process runs in its own process group, which is killed as a whole.
package lambdart

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors of Invoke; check them with errors.Is. A failed init wraps ErrInit together with
// the cause (ErrCrashed when the process exited, ErrTimeout when it never asked for an event,
// or the *FunctionError it posted to /runtime/init/error).
var (
	// ErrTimeout: no response by the deadline (or no first /next within Config.InitTimeout).
	// The process was killed.
	ErrTimeout = errors.New("lambdart: timed out")
	// ErrCrashed: the process exited (or was killed with Kill) before responding.
	ErrCrashed = errors.New("lambdart: runtime process exited")
	// ErrInit: the process failed before asking for its first event.
	ErrInit = errors.New("lambdart: init failed")
	// ErrClosed: the Env was closed.
	ErrClosed = errors.New("lambdart: environment closed")
)

// Lambda's figures that the Env reproduces.
const (
	// MaxResponseSize is the largest response payload a synchronous invocation may return;
	// the value is the one Lambda's Function.ResponseSizeTooLarge message names.
	MaxResponseSize = 6291556
	// AccountID appears in the function ARN handed to the runtime.
	AccountID = "123456789012"
	// DefaultTimeout is Lambda's default function timeout.
	DefaultTimeout = 3 * time.Second
	// DefaultInitTimeout is Lambda's limit on the init phase of an on-demand function.
	DefaultInitTimeout = 10 * time.Second
	// DefaultMemoryMB is Lambda's default memory size.
	DefaultMemoryMB = 128
	// DefaultRegion is the region the function is told it runs in.
	DefaultRegion = "us-east-1"
	// DefaultFunctionName names the function when Config.FunctionName is empty.
	DefaultFunctionName = "function"
)

// Config describes one function. Zero values take the defaults noted.
type Config struct {
	// Binary is the path of the bootstrap executable (required). The process runs in its
	// directory, which is also LAMBDA_TASK_ROOT.
	Binary string
	// Env is the function's environment, as the template sets it. It is applied over the
	// variables Lambda sets itself (so a test may replace the dummy credentials or the
	// region), except AWS_LAMBDA_RUNTIME_API, which is always the Env's own server. Nothing
	// is inherited from the test process.
	Env map[string]string
	// FunctionName. Default DefaultFunctionName.
	FunctionName string
	// Timeout of one invocation, from the moment the event is handed out. Default
	// DefaultTimeout.
	Timeout time.Duration
	// InitTimeout bounds the time from process start to its first /next. Default
	// DefaultInitTimeout.
	InitTimeout time.Duration
	// MemoryMB is reported in AWS_LAMBDA_FUNCTION_MEMORY_SIZE; nothing enforces it.
	// Default DefaultMemoryMB.
	MemoryMB int
	// Region sets AWS_REGION and AWS_DEFAULT_REGION. Default DefaultRegion.
	Region string
	// Credentials, when set, gives each process its AWS credentials as it starts
	// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, over Env's), as Lambda
	// gives an execution environment its role's. When they expire, the process is replaced
	// as Lambda replaces an environment: before an invocation that could outlast them (less
	// than 1.5 Timeouts left), the process is ended and a new one (a cold start) gets new
	// credentials. An error fails the invocation with ErrInit.
	Credentials func(ctx context.Context) (Credentials, error)
	// Output receives each line the process writes to stdout or stderr, without the line
	// break. Calls never overlap, and line is the callee's to keep. Lines arrive through
	// pipes, so one written just before a response may arrive just after Invoke returns.
	// Default: lines are dropped (the last few still appear in ErrCrashed messages).
	Output func(line []byte)
}

// Credentials are AWS credentials for a process, and when they expire (zero: never).
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time
}

// Result is the outcome of one invocation. With an error, it holds what was known by then
// (RequestID and Deadline once the event was handed out, ColdStart, InitDuration).
type Result struct {
	// RequestID is the Lambda-Runtime-Aws-Request-Id handed to the runtime.
	RequestID string
	// Payload is the response body; nil when FunctionError is set.
	Payload []byte
	// FunctionError is the error the function reported (a returned error or a recovered
	// panic), or Function.ResponseSizeTooLarge.
	FunctionError *FunctionError
	// Deadline is the Lambda-Runtime-Deadline-Ms handed to the runtime.
	Deadline time.Time
	// Duration runs from handing out the event to receiving the response or error; it is
	// zero when neither arrived.
	Duration time.Duration
	// ColdStart is set when this invocation was the process's first.
	ColdStart bool
	// InitDuration is, for a cold start, the time from process start to its first /next.
	InitDuration time.Duration
}

// FunctionError is an error a function reported to the Runtime API.
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
	// Payload is the body as the runtime posted it (with stackTrace, when it sent one).
	Payload []byte `json:"-"`
}

func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Env is one execution environment. Its methods are safe for concurrent use; concurrent
// Invoke calls run one after the other, as on one Lambda execution environment.
type Env struct {
	cfg     Config
	environ []string // everything but AWS_LAMBDA_RUNTIME_API
	slot    chan struct{}
	outMu   sync.Mutex // serializes cfg.Output

	mu      sync.Mutex
	proc    *process
	expires time.Time // proc's credentials' (Config.Credentials), zero when they do not expire
	closed  bool
}

// New checks cfg and returns an Env with no process yet; the first Invoke starts one.
func New(cfg Config) (*Env, error) {
	if cfg.Binary == "" {
		return nil, errors.New("lambdart: Config.Binary is empty; set it to the bootstrap executable (see Build)")
	}
	bin, err := filepath.Abs(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("lambdart: Config.Binary: %w", err)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("lambdart: Config.Binary %s is not an executable file (%v)", bin, err)
	}
	cfg.Binary = bin
	if cfg.Timeout < 0 || cfg.InitTimeout < 0 || cfg.MemoryMB < 0 {
		return nil, fmt.Errorf("lambdart: negative Timeout %v, InitTimeout %v or MemoryMB %d", cfg.Timeout, cfg.InitTimeout, cfg.MemoryMB)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.InitTimeout == 0 {
		cfg.InitTimeout = DefaultInitTimeout
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = DefaultMemoryMB
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.FunctionName == "" {
		cfg.FunctionName = DefaultFunctionName
	}
	return &Env{cfg: cfg, environ: environ(cfg), slot: make(chan struct{}, 1)}, nil
}

// environ is what Lambda sets for an OS-only runtime (provided.al2023), then cfg.Env.
func environ(cfg Config) []string {
	dir := filepath.Dir(cfg.Binary)
	vars := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LANG":                            "en_US.UTF-8",
		"TZ":                              ":UTC",
		"_HANDLER":                        filepath.Base(cfg.Binary),
		"LAMBDA_TASK_ROOT":                dir,
		"LAMBDA_RUNTIME_DIR":              dir,
		"AWS_REGION":                      cfg.Region,
		"AWS_DEFAULT_REGION":              cfg.Region,
		"AWS_LAMBDA_FUNCTION_NAME":        cfg.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(cfg.MemoryMB),
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + cfg.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + randomHex(16),
		// Static dummy credentials: the SDK must never look further (profiles, IMDS).
		"AWS_ACCESS_KEY_ID":     "AKIDLAMBDART",
		"AWS_SECRET_ACCESS_KEY": "lambdart",
		"AWS_SESSION_TOKEN":     "lambdart",
	}
	maps.Copy(vars, cfg.Env)
	delete(vars, "AWS_LAMBDA_RUNTIME_API")
	env := make([]string, 0, len(vars)+1)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// FunctionARN is the Lambda-Runtime-Invoked-Function-Arn handed to the runtime.
func (e *Env) FunctionARN() string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", e.cfg.Region, AccountID, e.cfg.FunctionName)
}

// Invoke runs one invocation with payload as the event, starting the process first if none
// is running. A function error is a Result with FunctionError and a nil error. The error is
// ErrTimeout, ErrCrashed, ErrInit or ErrClosed (see their docs), or ctx's error: when ctx
// ends after the event was handed out, the process is killed (it cannot be given another
// event while it works on this one); before that, a starting process is left to finish init.
func (e *Env) Invoke(ctx context.Context, payload []byte) (Result, error) {
	var res Result
	select {
	case e.slot <- struct{}{}:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	defer func() { <-e.slot }()

	// A warm process that exits between invocations (say after reporting a panic) never
	// got this event: start another once, as Lambda would.
	for attempt := 0; ; attempt++ {
		p, err := e.process(ctx)
		if err != nil {
			return res, err
		}
		if err := e.awaitInit(ctx, p); err != nil {
			return res, err
		}
		res, err = e.run(ctx, p, payload, res)
		if errors.Is(err, errNotDelivered) && attempt == 0 {
			res = Result{}
			continue
		}
		if errors.Is(err, errNotDelivered) {
			err = p.failure(false)
		}
		return res, err
	}
}

// errNotDelivered: the process exited before it took the event.
var errNotDelivered = errors.New("process exited before taking the event")

// process returns the running process, starting one when there is none, or when the
// running one's credentials could expire before an invocation ends (Config.Credentials).
// It is called between invocations (Invoke holds the slot).
func (e *Env) process(ctx context.Context) (*process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.proc != nil && !e.proc.hasExited() {
		if e.expires.IsZero() || time.Until(e.expires) >= e.cfg.Timeout*3/2 {
			return e.proc, nil
		}
		e.proc.kill(errRetired)
		<-e.proc.exited
	}
	env := e.environ
	e.expires = time.Time{}
	if e.cfg.Credentials != nil {
		c, err := e.cfg.Credentials(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: the function's credentials: %w", ErrInit, err)
		}
		env = append(slices.DeleteFunc(slices.Clone(env), func(v string) bool {
			return strings.HasPrefix(v, "AWS_ACCESS_KEY_ID=") || strings.HasPrefix(v, "AWS_SECRET_ACCESS_KEY=") || strings.HasPrefix(v, "AWS_SESSION_TOKEN=")
		}), "AWS_ACCESS_KEY_ID="+c.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey, "AWS_SESSION_TOKEN="+c.SessionToken)
		e.expires = c.Expires
	}
	p, err := e.start(env)
	if err != nil {
		return nil, err
	}
	e.proc = p
	return p, nil
}

// errRetired ends a process whose credentials are about to expire.
var errRetired = errors.New("lambdart: its credentials expire: replaced by a new process")

// awaitInit waits for p's first /next.
func (e *Env) awaitInit(ctx context.Context, p *process) error {
	select {
	case <-p.ready:
		return nil
	default:
	}
	timer := time.NewTimer(time.Until(p.start.Add(e.cfg.InitTimeout)))
	defer timer.Stop()
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return p.failure(true)
	case <-timer.C:
		p.kill(fmt.Errorf("%w: %w: no request for an event within %v of process start", ErrInit, ErrTimeout, e.cfg.InitTimeout))
		<-p.exited
		return p.failure(true)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run hands the event to the ready process p and waits for the outcome.
func (e *Env) run(ctx context.Context, p *process, payload []byte, res Result) (Result, error) {
	inv := &invocation{
		id:       newRequestID(),
		payload:  payload,
		deadline: time.Now().Add(e.cfg.Timeout),
		arn:      e.FunctionARN(),
		traceID:  newTraceID(),
		done:     make(chan outcome, 1),
	}
	timer := time.NewTimer(time.Until(inv.deadline))
	defer timer.Stop()
	timedOut := func() (Result, error) {
		p.kill(fmt.Errorf("%w: request %s: no response after %v (Lambda: Task timed out)", ErrTimeout, inv.id, e.cfg.Timeout))
		<-p.exited
		return res, p.failure(false)
	}

	select {
	case p.next <- inv:
	case <-p.exited:
		return res, errNotDelivered
	case <-timer.C:
		return timedOut()
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if p.invocations.Add(1) == 1 {
		res.ColdStart, res.InitDuration = true, p.initDuration
	}
	res.RequestID, res.Deadline = inv.id, inv.deadline.Truncate(time.Millisecond)

	finish := func(o outcome) (Result, error) {
		res.Duration = o.duration
		res.Payload, res.FunctionError = o.payload, o.err
		return res, nil
	}
	select {
	case o := <-inv.done:
		return finish(o)
	case <-p.exited:
		// A runtime may respond and exit at once; the response still counts.
		select {
		case o := <-inv.done:
			return finish(o)
		default:
		}
		return res, p.failure(false)
	case <-timer.C:
		return timedOut()
	case <-ctx.Done():
		p.kill(fmt.Errorf("request %s: %w", inv.id, ctx.Err()))
		<-p.exited
		return res, p.failure(false)
	}
}

// Kill kills the running process, if any, with its process group, and waits for it to
// exit. An invocation in progress fails with ErrCrashed; the next Invoke cold-starts.
func (e *Env) Kill() {
	e.mu.Lock()
	p := e.proc
	e.mu.Unlock()
	if p != nil {
		p.kill(fmt.Errorf("%w: killed by Env.Kill", ErrCrashed))
		<-p.exited
	}
}

// Close kills the process and stops its server; later Invokes fail with ErrClosed. It
// returns once everything the Env started has ended and is safe to call more than once.
func (e *Env) Close() {
	e.mu.Lock()
	e.closed = true
	p := e.proc
	e.mu.Unlock()
	if p != nil {
		p.kill(ErrClosed)
		<-p.exited
	}
}

// PID is the process id of the running process, or 0 when none runs.
func (e *Env) PID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc == nil || e.proc.hasExited() {
		return 0
	}
	return e.proc.cmd.Process.Pid
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID has the X-Ray format Lambda hands out.
func newTraceID() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randomHex(12), randomHex(8))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
