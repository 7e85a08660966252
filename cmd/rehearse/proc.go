package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// command runs one program in a process group of its own, so that Ctrl-C (ctx) or the end of
// the run stops it and everything it started (the CDK CLI starts node, go run and the app).
// Its stdout and stderr go to logs/<log>.log in the work directory; stdout is also returned.
func (r *rehearsal) command(ctx context.Context, log string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	dir := ""
	if name == r.cdk {
		dir = r.opts.dir
	}
	return r.commandIn(ctx, dir, log, stdin, name, args...)
}

// commandIn is command in the directory dir ("": the current one).
func (r *rehearsal) commandIn(ctx context.Context, dir, log string, stdin io.Reader, name string, args ...string) ([]byte, error) {
	path := filepath.Join(r.work, "logs", log+".log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprintf(f, "$ %s %s\n", name, strings.Join(args, " "))
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = r.env
	if name == r.ctl && r.ctlEnv != nil {
		cmd.Env = r.ctlEnv
	}
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Stdout = io.MultiWriter(&stdout, f)
	cmd.Stderr = f
	localproc.SetProcessGroup(cmd)
	cmd.Cancel = func() error { localproc.SignalGroup(cmd, false); return nil }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	err = cmd.Wait()
	// Whatever the group left behind (a child that outlived its parent) goes with it.
	localproc.SignalGroup(cmd, true)
	if err != nil {
		if ctx.Err() != nil {
			return stdout.Bytes(), ctx.Err()
		}
		return stdout.Bytes(), fmt.Errorf("%s %s: %w; the end of its log %s:\n%s", filepath.Base(name), firstArg(args), err, rel(path), tail(path, 15))
	}
	return stdout.Bytes(), nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// tail is the last n lines of a file, indented.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// rel is path relative to the working directory when it is below it.
func rel(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// emulator is a running fakecloud.
type emulator struct {
	proc *localproc.Process
	url  string
	log  string // where its output goes when it stops
}

// startEmulator starts fakecloud on a free loopback port for an account and region, in a
// process group of its own (on Linux the kernel also ends it if the rehearsal is killed), and
// waits until it answers its health check.
func (r *rehearsal) startEmulator(ctx context.Context, bin, account, region string) (*emulator, error) {
	port, err := localproc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// Not CommandContext: the emulator outlives each step; stop() ends it.
	// --iam strict: every SQS, DynamoDB, Lambda, KMS and STS call is checked against the
	// caller's identity policies. The rehearsal's own calls and the CDK CLI's use fakecloud's
	// root identity (test/test), which bypasses the checks, as an administrator would; the
	// operators' pipelinectl runs under roles holding only what `pipelinectl policy` prints
	// (step "operate as the operators", iam.go).
	cmd := exec.Command(bin, "--addr", addr, "--account-id", account, "--region", region, "--iam", "strict")
	cmd.Env = r.env
	p, err := localproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	e := &emulator{proc: p, url: "http://" + addr, log: filepath.Join(r.work, "logs", "fakecloud.log")}
	ready, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	last, err := p.WaitReady(ready, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/_fakecloud/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		e.stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s did not answer %s/_fakecloud/health (%v; last: %v); its output in %s:\n%s",
			bin, e.url, err, last, rel(e.log), tail(e.log, 15))
	}
	return e, nil
}

// stop ends the emulator's process group (SIGTERM, then SIGKILL after 5 s) and writes what
// it printed to its log.
func (e *emulator) stop() {
	if e == nil {
		return
	}
	e.proc.Stop()
	_ = os.MkdirAll(filepath.Dir(e.log), 0o755)
	_ = os.WriteFile(e.log, []byte(e.proc.Output()), 0o644)
}

// findTool is the first candidate given, which must be an executable file, else the
// defaults' first that is one, else the name looked up on PATH. given may be "".
func findTool(name, given string, defaults ...string) (string, error) {
	if given != "" {
		if st, err := os.Stat(given); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", errors.New("not an executable file")
		}
		return filepath.Abs(given)
	}
	for _, c := range defaults {
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return filepath.Abs(c)
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", errors.New(name + " not found")
	}
	return filepath.Abs(p)
}
