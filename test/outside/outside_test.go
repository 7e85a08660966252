// Package outside proves that a Go module outside this repository can run its own pipeline
// on the local kit: testdata/billing is a billing team's app (its own consumer writing its
// own invoices table, reading a queue and DLQ that exist already), put in a module of its own in a temporary directory with a replace
// to this checkout, synthesized with the CDK CLI, and tested with its own 30-line test.
package outside

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/internal/netguard"
)

func TestAnOutsideModuleRunsItsPipelineLocally(t *testing.T) {
	t.Parallel() // two modules, two kits: they wait on builds and servers, not on each other
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := newModule(t, "billing", t.TempDir(), root, "")

	start := time.Now()
	synth(t, dir, root)
	fmt.Printf("FIGURE outside module: cdk synth (bundles its consumer) in %v\n", time.Since(start).Round(100*time.Millisecond))

	// As on a user's machine: no jar directories given, an empty user cache. The cold run
	// fetches DynamoDB Local and ElasticMQ with Maven into it (from the local Maven
	// repository, which make tools filled), the warm one finds them there.
	cache := t.TempDir()
	// The go command's build cache stays where it is (its default is in the user cache
	// directory too): a user's machine has one, and an empty one would time the compile of
	// the AWS SDK, not the kit.
	gocache := strings.TrimSpace(runOut(t, dir, nil, "go", "env", "GOCACHE"))
	userEnv := []string{"DYNAMODB_LOCAL_DIR=", "ELASTICMQ_DIR=", "XDG_CACHE_HOME=" + cache, "GOCACHE=" + gocache}
	for _, run := range []string{"cold", "warm"} {
		start := time.Now()
		out := runOut(t, dir, userEnv, "go", "test", "-count=1", "-v", "./app/")
		for _, jar := range []string{"*/dynamodb-local-*/DynamoDBLocal*.jar", "*/elasticmq-*/elasticmq-server_*.jar"} {
			if m, _ := filepath.Glob(filepath.Join(cache, jar)); len(m) == 0 {
				t.Errorf("%s run: no %s in the user cache %s: the kit did not install the servers there", run, jar, cache)
			}
		}
		if !strings.Contains(out, "--- PASS: TestInvoicesOnceLocally") {
			t.Fatalf("the billing module's own test did not pass:\n%s", out)
		}
		how := map[string]string{"cold": "cold (an empty user cache: the kit fetches both servers with Maven)", "warm": "warm (the servers in the user cache)"}[run]
		fmt.Printf("FIGURE outside module: its local test (100 invoices x 3 + 3 bad: 100 rows, 3 dead letters with reasons, DLQ alarm in ALARM), %s: %v\n",
			how, time.Since(start).Round(100*time.Millisecond))
	}
	fmt.Printf("FIGURE outside module: the user's test function is %d lines\n", funcLines(t, filepath.Join(dir, "app", "local_test.go"), "TestInvoicesOnceLocally"))
}

// newModule copies testdata/name (or name, a path with a slash) into a module of its own under parent, requiring this one
// (at root) at the versions this checkout pins (the module proxy here serves no version
// lists, so nothing may be left for `go mod tidy` to look up), and returns its directory.
// With tool, it adds pipelinectl as a tool of the module first, while go.sum still has every
// sum the tool needs (this machine reaches no checksum database), either way docs/local.md
// gives: "get" as for the published module (go get -tool), "edit" as from a checkout the
// module replaces it with (go mod edit -tool, then go mod tidy).
func newModule(t testing.TB, name, parent, root, tool string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	if strings.Contains(name, "/") { // a directory of this repository's, e.g. one of its examples
		src, name = name, filepath.Base(name)
	}
	dir := filepath.Join(parent, name)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	_, requires, _ := strings.Cut(string(mod), "\nrequire ")
	requires, _, _ = strings.Cut(requires, "\ntool ")
	// An app's own requirements beyond this module's, at the exact versions it names (the
	// module proxy here lists no versions): testdata/NAME/go.mod.require, a line each.
	if extra, err := os.ReadFile(filepath.Join(src, "go.mod.require")); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(extra)), "\n") {
			requires = "(\n\t" + strings.TrimSpace(line) + strings.TrimPrefix(requires, "(")
		}
	}
	gomod := "module example.com/" + name + "\n\ngo 1.26\n\nrequire github.com/idempotent-sqs/pipeline v0.0.0\n\nrequire " + requires +
		"\nreplace github.com/idempotent-sqs/pipeline => " + root + "\n"
	write(t, filepath.Join(dir, "go.mod"), gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))
	switch tool {
	case "get":
		// GOPROXY=off: go get asks the proxy whether the package path is a module of its
		// own before it takes the module the app requires; the proxy of this machine
		// refuses such version lists (403) where the public one answers 404.
		run(t, dir, []string{"GOPROXY=off"}, "go", "get", "-tool", "github.com/idempotent-sqs/pipeline/cmd/pipelinectl")
	case "edit":
		run(t, dir, nil, "go", "mod", "edit", "-tool", "github.com/idempotent-sqs/pipeline/cmd/pipelinectl")
	}
	run(t, dir, nil, "go", "mod", "tidy")
	return dir
}

// synth runs the CDK CLI's synth in dir, offline, into dir/cdk.out. The apps' cdk.json are
// as users write them, without "cli-telemetry": false or "notices": false, so the CLI's
// telemetry sender, its notices and its version check are turned off here, from the
// environment and the command line: a test contacts no endpoint. The network guard holds it
// to that: a connection the CLI or any Node process under it tries fails the test.
func synth(t testing.TB, dir, root string) {
	t.Helper()
	g := netguard.New(t)
	// The apps, as their authors wrote them, do not call jsii.Close, so each leaves its jsii
	// runtime in the temporary directory: the test's own, removed with it.
	env := append(slices.Clone(synthEnv), "TMPDIR="+t.TempDir())
	run(t, dir, append(env, g.Env()...), filepath.Join(root, "node_modules", ".bin", "cdk"), "synth", "--quiet", "--no-notices", "-o", "cdk.out")
	g.Check(t, "cdk synth in "+filepath.Base(dir))
}

// synthEnv is what synth adds to the environment: no credentials, no telemetry, no version
// check, and no CDK template validator (CDK_VALIDATION=false: 5-10 CPU seconds a synth that
// only reports; the templates, which are what the kit runs, are the same).
var synthEnv = []string{"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
	"CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=true", "CDK_VALIDATION=false",
	"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_PROFILE="}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), fs.FileMode(0o644)); err != nil {
		t.Fatal(err)
	}
}

func run(t testing.TB, dir string, env []string, name string, args ...string) {
	t.Helper()
	runOut(t, dir, env, name, args...)
}

func runOut(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "PWD="+dir) // as a shell that cd'ed there, a path through a link kept

	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return out.String()
}

// funcLines counts the lines of func name in path, from its signature to its closing brace.
func funcLines(t *testing.T, path, name string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "func "+name+"(") {
			in = true
		}
		if in {
			n++
			if line == "}" {
				return n
			}
		}
	}
	t.Fatalf("no func %s in %s", name, path)
	return 0
}

// localUp starts `go tool pipelinectl local up ARGS` in dir, as from a shell that cd'ed there
// with env added, and waits up to limit for it to say it is up. The caller stops it
// (stopWithCtrlC; proc.Stop at the latest).
func localUp(t *testing.T, dir string, env []string, limit time.Duration, args ...string) (*exec.Cmd, *localproc.Process) {
	t.Helper()
	up := exec.Command("go", append([]string{"tool", "pipelinectl", "local", "up"}, args...)...)
	up.Dir, up.Env = dir, append(append(os.Environ(), "PWD="+dir), env...)
	proc, err := localproc.Start(up)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Stop)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	if err := proc.WaitOutput(ctx, "Ctrl-C stops everything."); err != nil {
		t.Fatalf("go tool pipelinectl local up %s: %v\n%s", strings.Join(args, " "), err, proc.Output())
	}
	return up, proc
}

// stopWithCtrlC interrupts cmd (proc) as Ctrl-C at a terminal does, its whole process group,
// and checks that it exits 0 and leaves none of the processes it had started, of which there
// were at least atLeast.
func stopWithCtrlC(t *testing.T, cmd *exec.Cmd, proc *localproc.Process, atLeast int) {
	t.Helper()
	started := localproc.Descendants(proc.PID())
	if err := syscall.Kill(-proc.PID(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-proc.Exited()
	var left []int
	for _, pid := range started {
		if localproc.Alive(pid) {
			left = append(left, pid)
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 || len(left) > 0 || len(started) < atLeast {
		t.Errorf("after Ctrl-C: exit %d, %d of its %d processes left: %v\n%s", code, len(left), len(started), left, proc.Output())
	}
}
