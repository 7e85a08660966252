//go:build rehearse

// These tests run the rehearsal itself on fakecloud (make rehearse runs them): they need the
// emulator (FAKECLOUD or on PATH) and the CDK CLI (node_modules/.bin at the repository's root).
// Without either they fail; they never skip.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/local"
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
		{"deploy", "run", syscall.SIGINT, false}, // the functions run: the kit's processes, pipelinectl verify
		{"deploy", "", syscall.SIGINT, true},     // run or a later step: the output is not read
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

// synthReference synthesizes this repository's app, as the CDK CLI does, into a temporary
// directory, offline.
func synthReference(t *testing.T) string {
	t.Helper()
	asm := filepath.Join(t.TempDir(), "asm")
	synth := exec.Command(filepath.Join(root, "node_modules", ".bin", "cdk"), "synth", "--quiet", "-o", asm)
	synth.Dir = root
	synth.Env = offlineEnv(os.Environ())
	if out, err := synth.CombinedOutput(); err != nil {
		t.Fatalf("cdk synth: %v\n%s", err, out)
	}
	return asm
}

// An update that renames the idempotency table's logical id (CloudFormation would create a new,
// empty table) fails the rehearsal, naming the table, before anything is deployed twice.
func TestTableLogicalIDChangeFails(t *testing.T) {
	asm := synthReference(t)
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

// A consumer whose role lacks a grant it needs (here dynamodb:UpdateItem on the idempotency
// table, as when a grant is dropped from the constructs) deploys, as it would on AWS, and then
// fails the run step with the AccessDenied that names the action and the table: the
// "works locally, AccessDenied in AWS" failure, caught before a real deploy.
func TestMissingGrantFails(t *testing.T) {
	asm := synthReference(t)
	stacks, err := readAssembly(asm)
	if err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, s := range stacks {
		path := filepath.Join(s.Dir, s.Template)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tmpl map[string]any
		if err := json.Unmarshal(raw, &tmpl); err != nil {
			t.Fatal(err)
		}
		for id, res := range tmpl["Resources"].(map[string]any) {
			r := res.(map[string]any)
			if r["Type"] != "AWS::IAM::Policy" || !strings.Contains(id, "Consumer") {
				continue
			}
			doc := r["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
			statements := doc["Statement"].([]any)
			doc["Statement"] = slices.DeleteFunc(statements, func(st any) bool {
				drop := strings.Contains(fmt.Sprint(st.(map[string]any)["Action"]), "dynamodb:UpdateItem")
				if drop {
					removed++
				}
				return drop
			})
		}
		out, err := json.MarshalIndent(tmpl, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		// The template is published under its sha256: point the manifests at the new one.
		for _, f := range []string{filepath.Join(s.Dir, s.Name+".assets.json"), filepath.Join(s.Dir, "manifest.json")} {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if err := os.WriteFile(f, []byte(strings.ReplaceAll(string(b), sha256hex(raw), sha256hex(out))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if removed == 0 {
		t.Fatal("no consumer policy statement grants dynamodb:UpdateItem: the test would prove nothing")
	}
	t.Logf("removed %d statements granting dynamodb:UpdateItem", removed)
	attachToNothing(t, asm)
	r := start(t, "--assembly", asm)
	code, out := r.wait(t)
	want := regexp.MustCompile(`run +FAIL .*AccessDenied: \S+ is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:[^:]+:\d+:table/\S+`)
	if code != exitFailed || !want.MatchString(out) {
		t.Errorf("exit %d; want %d with the run step failed by %s:\n%s", code, exitFailed, want, out)
	}
	t.Logf("%s", want.FindString(out))
	if left := marked(r.work); len(left) > 0 {
		t.Errorf("processes of the run left after it failed:\n%s", strings.Join(left, "\n"))
	}
}

// attachToNothing attaches the kit to an emulator where the assembly's stacks are not
// deployed: it fails naming the stack and the way out, and leaves nothing running.
func attachToNothing(t *testing.T, asm string) {
	t.Helper()
	fc := os.Getenv("FAKECLOUD")
	if fc == "" {
		fc = "fakecloud"
	}
	port, err := localproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	emu := exec.Command(fc, "--addr", addr, "--account-id", "123456789012", "--region", "us-east-1", "--iam", "strict")
	if err := emu.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { emu.Process.Kill(); emu.Wait() }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/_fakecloud/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fakecloud at %s did not answer in a minute", addr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kit, err := local.Start(ctx, local.Options{Assembly: asm, Attach: &local.Attach{Endpoint: "http://" + addr, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}})
	if err == nil {
		kit.Close()
	}
	want := regexp.MustCompile(`^local: attach: stack IdempotentSqsPipeline-dev \(IdempotentSqsPipeline-dev\): .*; deploy it first \(cdk deploy\)$`)
	if err == nil || !want.MatchString(err.Error()) {
		t.Errorf("the kit attached to an emulator without the stack: %v, want %s", err, want)
	}
}
