package lambdart

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// Runtime API paths and headers (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	pathNext      = "/2018-06-01/runtime/invocation/next"
	pathResponse  = "/2018-06-01/runtime/invocation/{id}/response"
	pathError     = "/2018-06-01/runtime/invocation/{id}/error"
	pathInitError = "/2018-06-01/runtime/init/error"

	headerRequestID   = "Lambda-Runtime-Aws-Request-Id"
	headerDeadline    = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID     = "Lambda-Runtime-Trace-Id"
	headerErrorType   = "Lambda-Runtime-Function-Error-Type"
	// A streamed response that fails midway reports its error in trailers.
	trailerErrorBody = "Lambda-Runtime-Function-Error-Body"
)

// outputTail is how many of the last output lines a crash error quotes.
const outputTail = 10

// invocation is one event on its way through a process.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	arn      string
	traceID  string
	done     chan outcome // buffered 1; the first response or error wins
	handedAt time.Time    // guarded by process.mu
}

type outcome struct {
	payload  []byte
	err      *FunctionError
	duration time.Duration // from hand-out to the response or error
}

// process is one run of the bootstrap binary with the server it talks to. Neither is
// reused: a new process gets a new server.
type process struct {
	env   *Env
	cmd   *exec.Cmd
	srv   *http.Server
	start time.Time

	next         chan *invocation // unbuffered: Invoke hands an event to a waiting /next
	ready        chan struct{}    // closed at the first /next
	readyOnce    sync.Once
	initDuration time.Duration // set before ready is closed
	invocations  atomic.Int64
	exited       chan struct{} // closed once the process, its group and its server are gone
	stdout       *lineWriter
	stderr       *lineWriter

	mu      sync.Mutex
	current *invocation // handed out, not yet answered
	cause   error       // why the process was killed, when it was
	state   string      // how it ended (exit status, signal), after exited
	tail    []string    // last output lines
}

// start launches the binary with a server of its own, in environ. Called with e.mu held.
func (e *Env) start(environ []string) (*process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lambdart: listen for the Runtime API: %w", err)
	}
	p := &process{
		env:    e,
		next:   make(chan *invocation),
		ready:  make(chan struct{}),
		exited: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathNext, p.handleNext)
	mux.HandleFunc("POST "+pathResponse, p.handleResponse)
	mux.HandleFunc("POST "+pathError, p.handleError)
	mux.HandleFunc("POST "+pathInitError, p.handleInitError)
	p.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// A killed process leaves broken connections behind; that is expected, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.stdout, p.stderr = &lineWriter{p: p}, &lineWriter{p: p}
	cmd := exec.Command(e.cfg.Binary)
	cmd.Dir = filepath.Dir(e.cfg.Binary)
	cmd.Env = append(environ[:len(environ):len(environ)], "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	// Bounds Wait when a child the function started still holds the output pipes.
	cmd.WaitDelay = time.Second
	localproc.SetProcessGroup(cmd) // its own group: a kill reaches every process it started
	p.cmd = cmd
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("lambdart: start %s: %w", e.cfg.Binary, err)
	}
	// Serving only now keeps every field above out of reach of the handlers until it is set;
	// a connection the process makes meanwhile waits in the listener's backlog.
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = p.srv.Serve(ln)
	}()
	go p.wait(served)
	return p, nil
}

// wait reaps the process, then ends what it leaves behind: children in its group and the
// server with any request still open.
func (p *process) wait(served <-chan struct{}) {
	err := p.cmd.Wait()
	localproc.SignalGroup(p.cmd, true) // SIGKILL: Lambda gives no grace period without extensions
	p.stdout.flush()
	p.stderr.flush()
	state := p.cmd.ProcessState.String()
	if err != nil && !errors.As(err, new(*exec.ExitError)) {
		state += " (" + err.Error() + ")"
	}
	p.mu.Lock()
	p.state = state
	p.mu.Unlock()
	_ = p.srv.Close()
	<-served
	close(p.exited)
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill records why the process is being killed (the first reason wins) and kills its group.
func (p *process) kill(cause error) {
	p.mu.Lock()
	if p.cause == nil {
		p.cause = cause
	}
	p.mu.Unlock()
	localproc.SignalGroup(p.cmd, true) // SIGKILL: Lambda gives no grace period without extensions
}

// failure is the error for a process that has exited: the reason it was killed or, when
// nobody killed it, a crash quoting its last output.
func (p *process) failure(duringInit bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cause != nil {
		return p.cause
	}
	err := fmt.Errorf("%w: %s", ErrCrashed, p.state)
	if len(p.tail) > 0 {
		err = fmt.Errorf("%w; last output:\n%s", err, strings.Join(p.tail, "\n"))
	}
	if duringInit {
		return fmt.Errorf("%w: %w", ErrInit, err)
	}
	return err
}

func (p *process) handleNext(w http.ResponseWriter, r *http.Request) {
	p.readyOnce.Do(func() {
		p.initDuration = time.Since(p.start)
		close(p.ready)
	})
	var inv *invocation
	select {
	case inv = <-p.next:
	case <-r.Context().Done():
		return
	}
	p.mu.Lock()
	p.current = inv
	inv.handedAt = time.Now()
	p.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(headerRequestID, inv.id)
	h.Set(headerDeadline, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set(headerFunctionARN, inv.arn)
	h.Set(headerTraceID, inv.traceID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload)
}

func (p *process) handleResponse(w http.ResponseWriter, r *http.Request) {
	inv, handedAt := p.take(w, r)
	if inv == nil {
		return
	}
	// Measured here: Invoke may resume only after the response has already arrived.
	elapsed := func() time.Duration { return time.Since(handedAt) }
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseSize+1))
	switch {
	case err != nil:
		// The process went away mid-request; its exit decides the invocation.
		return
	case len(body) > MaxResponseSize:
		fe := &FunctionError{
			Type:    "Function.ResponseSizeTooLarge",
			Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxResponseSize),
		}
		fe.Payload, _ = json.Marshal(fe)
		inv.done <- outcome{err: fe, duration: elapsed()}
		writeJSON(w, http.StatusRequestEntityTooLarge, fe.Type, fe.Message)
		return
	}
	if typ := r.Trailer.Get(headerErrorType); typ != "" {
		fe := &FunctionError{Type: typ}
		if raw, err := base64.StdEncoding.DecodeString(r.Trailer.Get(trailerErrorBody)); err == nil {
			fe = parseFunctionError(raw, typ)
		}
		inv.done <- outcome{err: fe, duration: elapsed()}
	} else {
		inv.done <- outcome{payload: body, duration: elapsed()}
	}
	writeJSON(w, http.StatusAccepted, "", "")
}

func (p *process) handleError(w http.ResponseWriter, r *http.Request) {
	inv, handedAt := p.take(w, r)
	if inv == nil {
		return
	}
	// Measured here: Invoke may resume only after the response has already arrived.
	elapsed := func() time.Duration { return time.Since(handedAt) }
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxResponseSize))
	if err != nil {
		return
	}
	inv.done <- outcome{err: parseFunctionError(body, r.Header.Get(headerErrorType)), duration: elapsed()}
	writeJSON(w, http.StatusAccepted, "", "")
}

// handleInitError ends the process, as Lambda ends an environment whose init failed.
func (p *process) handleInitError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, MaxResponseSize))
	fe := parseFunctionError(body, r.Header.Get(headerErrorType))
	writeJSON(w, http.StatusAccepted, "", "")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	p.kill(fmt.Errorf("%w: %w", ErrInit, fe))
}

// take claims the invocation a response or error names; only the one handed out, once.
func (p *process) take(w http.ResponseWriter, r *http.Request) (*invocation, time.Time) {
	id := r.PathValue("id")
	p.mu.Lock()
	inv := p.current
	if inv == nil || inv.id != id {
		p.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, "InvalidRequestID", fmt.Sprintf("request %q is not the invocation in progress", id))
		return nil, time.Time{}
	}
	p.current = nil
	handedAt := inv.handedAt
	p.mu.Unlock()
	return inv, handedAt
}

func parseFunctionError(body []byte, headerType string) *FunctionError {
	fe := &FunctionError{}
	if json.Unmarshal(body, fe) != nil {
		fe.Message = string(body)
	}
	if fe.Type == "" {
		fe.Type = headerType
	}
	if fe.Type == "" {
		fe.Type = "Unhandled"
	}
	fe.Payload = body
	return fe
}

func writeJSON(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if errorType == "" {
		_, _ = io.WriteString(w, `{"status":"OK"}`)
		return
	}
	body, _ := json.Marshal(map[string]string{"errorType": errorType, "errorMessage": message})
	_, _ = w.Write(body)
}

// lineWriter splits one output stream into lines for Config.Output. exec copies each stream
// from its own goroutine, so writes to one lineWriter never overlap.
type lineWriter struct {
	p   *process
	buf []byte
}

// maxLine cuts a line that never ends, so one runaway write cannot grow the buffer forever.
const maxLine = 256 << 10

func (w *lineWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	rest := w.buf
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		w.p.line(bytes.TrimSuffix(rest[:i], []byte("\r")))
		rest = rest[i+1:]
	}
	if len(rest) > maxLine {
		w.p.line(rest)
		rest = nil
	}
	w.buf = append(w.buf[:0], rest...)
	return len(b), nil
}

// flush emits an unterminated last line; called after the stream has closed.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.p.line(w.buf)
		w.buf = nil
	}
}

func (p *process) line(b []byte) {
	line := bytes.Clone(b)
	p.mu.Lock()
	p.tail = append(p.tail, string(line))
	if len(p.tail) > outputTail {
		p.tail = p.tail[len(p.tail)-outputTail:]
	}
	p.mu.Unlock()
	if out := p.env.cfg.Output; out != nil {
		p.env.outMu.Lock()
		defer p.env.outMu.Unlock()
		out(line)
	}
}
