//go:build unix

package localproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts sh -c script with the write end of a pipe as its fd 3, which every process
// the script starts inherits, and waits until the script prints "started". Reading the
// returned read end gives EOF once every process of the group has exited (a zombie holds no
// files), without /proc and whoever reaps the orphans.
func startGroup(t *testing.T, script string) (*Process, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cmd := exec.Command("sh", "-c", script)
	cmd.ExtraFiles = []*os.File{w}
	p, err := Start(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	_, err = p.WaitReady(t.Context(), func(context.Context) error {
		if !strings.Contains(p.Output(), "started\n") {
			return errors.New("not started")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the script never started: %v; output %q", err, p.Output())
	}
	return p, r
}

// waitGroupGone fails the test unless every holder of the pipe startGroup made has exited
// within 30 s: a signal to a group reaches its members asynchronously, and later still on a
// loaded machine. The read returns at EOF, so the bound costs nothing when they are gone.
func waitGroupGone(t *testing.T, r *os.File) {
	t.Helper()
	start := time.Now()
	if err := r.SetReadDeadline(start.Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read from the group's pipe = %d, %v after %s; want EOF: a process of the group still runs",
			n, err, time.Since(start).Round(time.Millisecond))
	}
}

func TestStopEndsTheProcessGroup(t *testing.T) {
	p, r := startGroup(t, `sleep 60 & echo started; wait`)
	start := time.Now()
	p.Stop()
	if d := time.Since(start); d >= StopGrace {
		t.Errorf("Stop took %v: SIGTERM should have ended the shell", d)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	var exit *exec.ExitError
	if err := p.WaitErr(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("WaitErr() = %v, want death by SIGTERM", err)
	}
	waitGroupGone(t, r) // the background sleep too
	p.Stop()            // a second Stop returns at once
}

func TestStopKillsAGroupThatIgnoresSIGTERM(t *testing.T) {
	defer func(d time.Duration) { stopGrace = d }(stopGrace)
	stopGrace = 200 * time.Millisecond
	p, r := startGroup(t, `trap '' TERM; sleep 60 & echo started; wait`)
	start := time.Now()
	p.Stop()
	if d := time.Since(start); d < stopGrace {
		t.Errorf("Stop took %v, less than the grace period %v: did SIGTERM work after all?", d, stopGrace)
	}
	var exit *exec.ExitError
	if err := p.WaitErr(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("WaitErr() = %v, want death by SIGKILL", err)
	}
	waitGroupGone(t, r)
}

func TestWaitReadyRetriesUntilTheProbeSucceeds(t *testing.T) {
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	calls := 0
	last, err := p.WaitReady(t.Context(), func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("probe called without a deadline")
		}
		calls++
		if calls < 3 {
			return fmt.Errorf("not yet (%d)", calls)
		}
		return nil
	})
	if err != nil || last != nil || calls != 3 {
		t.Errorf("WaitReady = %v, %v after %d calls; want nil, nil after 3", last, err, calls)
	}
	if p.WaitErr() != nil {
		t.Errorf("WaitErr() = %v while the process runs", p.WaitErr())
	}
}

func TestWaitReadyReportsAnExit(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "echo to stdout; echo to stderr >&2; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	last, err := p.WaitReady(t.Context(), func(context.Context) error { return errors.New("refused") })
	if !errors.Is(err, ErrExited) || last == nil || last.Error() != "refused" {
		t.Fatalf("WaitReady = %v, %v; want the probe's error and ErrExited", last, err)
	}
	var exit *exec.ExitError
	if err := p.WaitErr(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("WaitErr() = %v, want exit status 3", err)
	}
	for _, want := range []string{"to stdout\n", "to stderr\n"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("Output() = %q lacks %q", p.Output(), want)
		}
	}
}

func TestWaitReadyGivesUpWithTheContext(t *testing.T) {
	p, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	last, err := p.WaitReady(ctx, func(context.Context) error { return errors.New("refused") })
	if !errors.Is(err, context.DeadlineExceeded) || last == nil || last.Error() != "refused" {
		t.Errorf("WaitReady = %v, %v; want the probe's error and DeadlineExceeded", last, err)
	}
}

func TestStartError(t *testing.T) {
	_, err := Start(exec.Command("/nonexistent/server"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start = %v, want cmd.Start's error unwrapped", err)
	}
}

// A process that exits before it says what a test waits for fails the wait at once, with
// its exit status and output; one that says it, even just before it exits, passes.
func TestWaitOutput(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "echo starting; echo 'no port' >&2; exit 2"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	start := time.Now()
	err = p.WaitOutput(t.Context(), "Up in")
	if err == nil || !strings.Contains(err.Error(), `the process exited (exit status 2) before it printed "Up in"; its output:`) ||
		!strings.Contains(err.Error(), "no port") {
		t.Errorf("WaitOutput of a process that exits = %v", err)
	}
	t.Logf("failed %v after the start", time.Since(start).Round(time.Millisecond))
	p2, err := Start(exec.Command("sh", "-c", "echo 'Up in 1s'"))
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Stop()
	<-p2.Exited()
	if err := p2.WaitOutput(t.Context(), "Up in"); err != nil {
		t.Errorf("WaitOutput of a process that said it and exited = %v", err)
	}
	p3, err := Start(exec.Command("sleep", "60"))
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := p3.WaitOutput(ctx, "Up in"); err == nil || !strings.Contains(err.Error(), `the process did not print "Up in" (context deadline exceeded)`) {
		t.Errorf("WaitOutput past its deadline = %v", err)
	}
}
