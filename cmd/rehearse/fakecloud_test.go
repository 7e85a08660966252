//go:build rehearse

// These tests run the rehearsal itself on fakecloud (make rehearse runs them): they need the
// emulator (FAKECLOUD or on PATH) and the CDK CLI (node_modules/.bin at the repository's root).
// Without either they fail; they never skip.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	bin  string // the rehearse binary
	root string // the repository
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rehearse-bin")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "rehearse")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	root, _ = filepath.Abs("../..")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rehearsal is one run of the binary, its stdout read line by line as it comes.
type rehearsalRun struct {
	cmd   *exec.Cmd
	lines chan string
	all   *bytes.Buffer
	out   io.ReadCloser
	work  string
}

func start(t *testing.T, args ...string) *rehearsalRun {
	t.Helper()
	if os.Getenv("FAKECLOUD") == "" {
		if _, err := exec.LookPath("fakecloud"); err != nil {
			t.Fatal("no fakecloud: set FAKECLOUD or put it on PATH (make rehearse does)")
		}
	}
	work := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--cdk", filepath.Join(root, "node_modules", ".bin", "cdk"), "--work", work}, args...)...)
	cmd.Dir = root
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rehearsalRun{cmd: cmd, lines: make(chan string, 100), all: &bytes.Buffer{}, work: work, out: out}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			r.all.WriteString(s.Text() + "\n")
			r.lines <- s.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = io.Copy(io.Discard, out) })
	return r
}

// closeOutput closes the pipe the run writes to, as a reader that died would.
func (r *rehearsalRun) closeOutput() {
	r.out.Close()
}

// waitLine waits (up to 5 minutes: a cold synth compiles the app) for a line starting with prefix.
func (r *rehearsalRun) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(5 * time.Minute)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("the run ended before a line %q:\n%s", prefix, r.all)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			t.Fatalf("no line %q in 5 minutes:\n%s", prefix, r.all)
		}
	}
}

// wait waits for the run's end and returns its exit code and whole output.
func (r *rehearsalRun) wait(t *testing.T) (int, string) {
	t.Helper()
	for range r.lines {
	}
	err := r.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, r.all.String()
}

// marked lists the processes whose environment carries the run's marker.
func marked(work string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	want := []byte(markerVar + "=" + work + "\x00")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, want) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			pids = append(pids, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return pids
}

// Ctrl-C while a step runs a process tree (the CDK CLI under make, node, go run) stops the run
// with exit 3, says where it stopped and that nothing is left running, and leaves no process
// of the run behind: not the emulator, not a grandchild.
func TestInterrupt(t *testing.T) {
	for _, tc := range []struct {
		after, during string // the line after which the signal is sent, and the step it lands in
		sig           syscall.Signal
		closeOutput   bool // what read the output (| tee) went with the Ctrl-C
	}{
		{"tools", "synth", syscall.SIGINT, false},
		{"fakecloud", "bootstrap", syscall.SIGINT, false},
		{"deploy", "", syscall.SIGINT, true}, // seed, operate or update synth: the output is not read
		{"update change set", "update deploy", syscall.SIGTERM, false},
	} {
		t.Run(tc.after+" then "+tc.sig.String(), func(t *testing.T) {
			// --from HEAD: the first synth goes to the work directory, not to the repository's cdk.out.
			r := start(t, "--make", "--from", "HEAD", "--update", "consumerTimeout=20s")
			r.waitLine(t, tc.after+" ")
			if tc.closeOutput {
				r.closeOutput()
			}
			// The signal lands once the next step runs a process of the run (a step runs several
			// in turn; a moment between two has none).
			// The emulator alone does not count: the signal must find a step's process tree.
			var running []string
			for deadline := time.Now().Add(30 * time.Second); len(running) == 0 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				running = slices.DeleteFunc(marked(r.work), func(p string) bool { return strings.Contains(p, "fakecloud --addr") })
			}
			if len(running) == 0 {
				t.Fatalf("no process of a step in 30 s after %q: nothing to stop, the test would prove nothing", tc.after)
			}
			t.Logf("%d processes of the run at the signal, e.g. %s", len(running), running[0])
			sent := time.Now()
			if err := r.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code, out := r.wait(t)
			took := time.Since(sent)
			t.Logf("exit %d %s after the signal", code, took.Round(time.Millisecond))
			if code != exitInterrupted {
				t.Errorf("exit %d; want %d:\n%s", code, exitInterrupted, out)
			}
			for _, want := range []string{"rehearse: interrupted during " + tc.during + " ", "nothing is left running", "rerun the same command to start over"} {
				if !tc.closeOutput && !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
			if left := marked(r.work); len(left) > 0 {
				t.Errorf("processes of the run left after it ended:\n%s", strings.Join(left, "\n"))
			}
			if took > time.Minute {
				t.Errorf("the run took %s to stop", took)
			}
		})
	}
}

// An update that renames the idempotency table's logical id (CloudFormation would create a new,
// empty table) fails the rehearsal, naming the table, before anything is deployed twice.
func TestTableLogicalIDChangeFails(t *testing.T) {
	asm := filepath.Join(t.TempDir(), "asm")
	synth := exec.Command(filepath.Join(root, "node_modules", ".bin", "cdk"), "synth", "--quiet", "-o", asm)
	synth.Dir = root
	synth.Env = offlineEnv(os.Environ())
	if out, err := synth.CombinedOutput(); err != nil {
		t.Fatalf("cdk synth: %v\n%s", err, out)
	}
	renamed := filepath.Join(t.TempDir(), "renamed")
	if err := os.CopyFS(renamed, os.DirFS(asm)); err != nil {
		t.Fatal(err)
	}
	stacks, err := readAssembly(renamed)
	if err != nil {
		t.Fatal(err)
	}
	var tableID string
	for _, s := range stacks {
		for id, r := range s.Res {
			if r.Type == "AWS::DynamoDB::Table" {
				tableID = id
			}
		}
		path := filepath.Join(s.Dir, s.Template)
		b, _ := os.ReadFile(path)
		if tableID == "" {
			t.Fatal("no table in the reference stack")
		}
		// Renamed everywhere, references included: a template CloudFormation accepts.
		var check map[string]any
		out := strings.ReplaceAll(string(b), `"`+tableID+`"`, `"IdempotencyTableRenamed"`)
		if err := json.Unmarshal([]byte(out), &check); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, "--assembly", asm, "--update-assembly", renamed)
	code, out := r.wait(t)
	want := tableID + " (AWS::DynamoDB::Table) is removed or renamed"
	if code != exitFailed || !strings.Contains(out, "update synth       FAIL") || !strings.Contains(out, want) {
		t.Errorf("exit %d; want %d with %q at update synth:\n%s", code, exitFailed, want, out)
	}
	if left := marked(r.work); len(left) > 0 {
		t.Errorf("processes of the run left after it failed:\n%s", strings.Join(left, "\n"))
	}
}
