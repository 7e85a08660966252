// Package localproc runs a local server process for tests: the part that dynamolocal and
// sqslocal (and any other emulator started from a TestMain) share, so that each of them only
// says how to run its server and how to ask it whether it is ready.
//
// A server is started on a port FreePort picked, in its own process group (so Stop ends it
// together with everything it started, and on Linux the kernel kills it if the test binary
// dies first), with the last OutputLimit bytes of its stdout and stderr kept for failure
// messages:
//
//	port, err := localproc.FreePort()
//	...
//	p, err := localproc.Start(exec.Command(bin, "-port", strconv.Itoa(port)))
//	...
//	last, err := p.WaitReady(ctx, func(ctx context.Context) error { return ping(ctx, port) })
//	if errors.Is(err, localproc.ErrExited) { ... p.WaitErr(), p.Output() ... }
//	defer p.Stop()
//
// Errors are returned unwrapped or as sentinels, so that each caller keeps its own messages.
// ModuleRoot finds the module root, under whose .cache `make tools` installs the servers.
package localproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// OutputLimit is how much of the process's output Output keeps: the last 64 KiB.
const OutputLimit = 64 << 10

// StopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const StopGrace = 5 * time.Second

// stopGrace is StopGrace, shortened by tests.
var stopGrace = StopGrace

// The WaitReady probe runs every probeInterval, each call bounded by probeTimeout.
const (
	probeInterval = 100 * time.Millisecond
	probeTimeout  = 2 * time.Second
)

// ErrExited is what WaitReady returns when the process exits before the probe succeeds: a
// server that could not bind its port, say, which a caller may retry on a fresh port.
var ErrExited = errors.New("process exited")

// Process is a started server process. Its methods are safe for concurrent use.
type Process struct {
	cmd      *exec.Cmd
	out      *tailBuffer
	exited   chan struct{} // closed when the process has exited
	waitErr  error         // valid after exited is closed
	stopOnce sync.Once
}

// Start starts cmd in its own process group with its stdout and stderr captured (see Output),
// and waits for it in the background. cmd's SysProcAttr, Stdout and Stderr are replaced. The
// error is cmd.Start's, unwrapped.
func Start(cmd *exec.Cmd) (*Process, error) {
	out := &tailBuffer{max: OutputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	SetProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// WaitReady calls probe until it returns nil (then WaitReady returns nil, nil), the process
// exits (ErrExited) or ctx is done (ctx.Err()). Each call gets at most 2 s; a failed call is
// retried after 100 ms. last is probe's last error, for the message of a caller that gives up.
func (p *Process) WaitReady(ctx context.Context, probe func(context.Context) error) (last, err error) {
	tick := time.NewTicker(probeInterval)
	defer tick.Stop()
	for {
		callCtx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := probe(callCtx)
		cancel()
		if err == nil {
			return nil, nil
		}
		last = err
		select {
		case <-p.exited:
			return last, ErrExited
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// Server describes a server process for WaitAnswering's errors.
type Server struct {
	Pkg      string // the package starting it, which begins each message ("dynamolocal")
	Name     string // what it is ("DynamoDB Local (java)", "elasticmq")
	Call     string // the call probe makes ("ListTables")
	Endpoint string // where probe calls it
	Dir      string // where it is installed, for a process that exits at once
}

// WaitAnswering is WaitReady with the error a person can act on: the server exited before
// it answered (its exit status and output, and where its install is), or did not answer
// within ctx (how long it was asked, the last error and its output).
func (p *Process) WaitAnswering(ctx context.Context, s Server, probe func(context.Context) error) error {
	start := time.Now()
	last, err := p.WaitReady(ctx, probe)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrExited):
		return fmt.Errorf("%s: %s exited before it answered (%v): %w; output:\n%s\n(check the install in %s, or run `make tools`)",
			s.Pkg, s.Name, p.WaitErr(), err, p.Output(), s.Dir)
	default:
		return fmt.Errorf("%s: %s did not answer %s at %s within %s: %w (last error: %v); output:\n%s",
			s.Pkg, s.Name, s.Call, s.Endpoint, time.Since(start).Round(time.Millisecond), err, last, p.Output())
	}
}

// WaitOutput waits until the process's output contains want. A process that exits first,
// or ctx ending first, is an error with its exit status and its output: a test waiting for
// a process to say something fails at once with what the process said, never hangs.
func (p *Process) WaitOutput(ctx context.Context, want string) error {
	said := func(context.Context) error {
		if strings.Contains(p.Output(), want) {
			return nil
		}
		return errNotYet
	}
	_, err := p.WaitReady(ctx, said)
	switch {
	case err == nil || said(ctx) == nil: // it may have said it just before it exited
		return nil
	case errors.Is(err, ErrExited):
		return fmt.Errorf("the process exited (%v) before it printed %q; its output:\n%s", p.WaitErr(), want, p.Output())
	}
	return fmt.Errorf("the process did not print %q (%v); its output so far:\n%s", want, err, p.Output())
}

var errNotYet = errors.New("not yet")

// Stop sends SIGTERM to the process group, SIGKILL after StopGrace if the process still
// runs, and returns once the process has exited. It is safe to call more than once.
func (p *Process) Stop() { p.StopWithin(stopGrace) }

// StopWithin is Stop with its own grace between SIGTERM and SIGKILL, for a process with
// work to finish on its way out (a JVM writing its class-data archive).
func (p *Process) StopWithin(grace time.Duration) {
	p.stopOnce.Do(func() {
		SignalGroup(p.cmd, false)
		select {
		case <-p.exited:
			return
		case <-time.After(grace):
		}
		SignalGroup(p.cmd, true)
		<-p.exited
	})
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitErr is cmd.Wait's result; valid once Exited is closed, nil before.
func (p *Process) WaitErr() error {
	select {
	case <-p.exited:
		return p.waitErr
	default:
		return nil
	}
}

// PID is the process's id, which is also its process group's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Args is the command line the process was started with.
func (p *Process) Args() []string { return p.cmd.Args }

// Output is what the process printed so far on stdout and stderr (the last OutputLimit bytes).
func (p *Process) Output() string { return p.out.String() }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: it binds port 0 and
// releases what the kernel gave. Another process can take it before the server binds it, so a
// server that exits at once (ErrExited from WaitReady) is worth retrying on a fresh port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ModuleRoot is the nearest directory at or above dir that holds a go.mod, and false when
// there is none up to the file system's root. Callers pass os.Getwd(): `go test` runs a test
// binary in its package's directory, anywhere below the root.
func ModuleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// tailBuffer keeps the last max bytes written to it; a process writes from two pipes at once.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
