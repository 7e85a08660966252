// Package netguard holds the commands a test runs to the promise that tests contact no
// endpoint. A Node hook (guard.js), loaded through NODE_OPTIONS into the command and every
// Node process it starts (the CDK CLI, its telemetry sender, the jsii kernel of a Go app),
// writes each TCP connection they try to a log and refuses it before it leaves the machine.
// The test then fails on any line of the log, naming the process that tried:
//
//	g := netguard.New(t)
//	cmd.Env = append(cmd.Env, g.Env()...)
//	... run it ...
//	g.Check(t, "cdk synth")
//
// It sees Node's connections only; the Go processes the tests run get their endpoints from
// the test (AWS_ENDPOINT_URL and the like).
package netguard

import (
	_ "embed"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

//go:embed guard.js
var hook []byte

// Guard is the record of one test's Node commands.
type Guard struct {
	hook, log string
}

// New writes the hook into a temporary directory of t.
func New(t testing.TB) *Guard {
	t.Helper()
	dir := t.TempDir()
	g := &Guard{hook: filepath.Join(dir, "guard.js"), log: filepath.Join(dir, "connections.log")}
	if err := os.WriteFile(g.hook, hook, 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// Env is what a command's environment adds for the guard: NODE_OPTIONS (the caller's own
// options kept) requiring the hook, and the log's path.
func (g *Guard) Env() []string {
	opts := strings.TrimSpace(os.Getenv("NODE_OPTIONS") + ` --require "` + g.hook + `"`)
	return []string{"NODE_OPTIONS=" + opts, "NETGUARD_LOG=" + g.log}
}

// Wait waits until every Node process the commands started has ended, detached ones too
// (the CDK CLI's telemetry sender outlives the CLI), for at most limit. It returns the ones
// still running then.
func (g *Guard) Wait(limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		running := g.running()
		if len(running) == 0 || time.Now().After(deadline) {
			return running
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// running is the processes that said they started and neither said they ended nor exist.
func (g *Guard) running() []string {
	b, err := os.ReadFile(g.log + ".procs")
	if err != nil {
		return nil
	}
	started := map[string]string{} // pid -> its line
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "start":
			started[f[1]] = strings.TrimSpace(line)
		case len(f) == 2 && f[0] == "exit":
			delete(started, f[1])
		}
	}
	var out []string
	for pid, line := range started {
		n, err := strconv.Atoi(pid)
		if err == nil && syscall.Kill(n, 0) == syscall.ESRCH {
			continue // ended without its exit handler (killed)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// Attempts is every connection tried so far, one per line: host:port and the Node process.
func (g *Guard) Attempts() []string {
	b, err := os.ReadFile(g.log)
	if err != nil {
		return nil // no connection was tried
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// Check fails t when the commands run so far tried any connection, naming what ran them. It
// first waits for their Node processes to end, detached ones too, for up to a minute.
func (g *Guard) Check(t testing.TB, what string) {
	t.Helper()
	start := time.Now()
	if left := g.Wait(time.Minute); len(left) > 0 {
		t.Errorf("%s: Node processes still running %v after it ended (the test cannot tell what they send):\n  %s", what, time.Since(start).Round(time.Second), strings.Join(left, "\n  "))
	}
	if a := g.Attempts(); len(a) > 0 {
		t.Errorf("%s tried to contact an endpoint (refused by the test; a test contacts none):\n  %s", what, strings.Join(a, "\n  "))
	}
}
