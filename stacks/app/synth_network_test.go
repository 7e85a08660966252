package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// docs/development.md's "Telemetry" says what a synth contacts: `make synth` nothing, with or
// without credentials; a plain `cdk synth` with credentials one STS GetCallerIdentity (the CLI
// fills CDK_DEFAULT_ACCOUNT with it before it runs the app, and nothing in the CLI turns that
// off), which the app ignores, so both write the same environment-agnostic template; and
// `-c account=... -c region=...` pins the stack. This test runs the pinned CDK CLI all three
// ways against a local stand-in for AWS and holds each part of that paragraph true.
//
// Nothing leaves 127.0.0.1: the credentials are fake, AWS_ENDPOINT_URL sends every AWS SDK
// call to the stand-in, and HTTP(S)_PROXY sends anything else that honours the proxy
// variables there too (recorded as a CONNECT). The Go toolchain runs with GOPROXY=off.
func TestSynthNetworkAndEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three CDK synths (about 30 s each)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cdk := filepath.Join(root, "node_modules", ".bin", "cdk")
	if _, err := os.Stat(cdk); err != nil {
		t.Fatalf("no pinned CDK CLI at %s (make synth-tools installs it): %v", cdk, err)
	}
	makeSynth := makeSynthCommand(t, root)

	type run struct {
		name     string
		command  string // a bash command line; the test appends -o DIR
		terminal bool   // run it at a pseudo-terminal
		aws      *standIn
		outdir   string
	}
	// At a terminal the CLI also asks registry.npmjs.org for a newer version; util-linux's
	// script(1) gives the make synth run one, so that request would be recorded too.
	terminal := false
	if out, err := exec.Command("script", "--version").CombinedOutput(); err == nil && strings.Contains(string(out), "util-linux") {
		terminal = true
	} else {
		t.Log("no util-linux script(1): make synth runs without a terminal, so the CLI's version check is not exercised")
	}
	runs := []*run{
		// The command `make synth` runs, as make prints it: the credentials below are in its
		// environment, and the recipe must keep them from the CLI.
		{name: "make synth", command: makeSynth, terminal: terminal},
		{name: "cdk synth", command: shellQuote(cdk) + " synth --quiet"},
		{name: "cdk synth -c account -c region", command: shellQuote(cdk) + " synth --quiet -c account=" + pinnedAccount + " -c region=eu-west-1"},
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		r.aws = newStandIn(t)
		r.outdir = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := r.command + " -o " + shellQuote(r.outdir)
			if r.terminal {
				line = "script -qec " + shellQuote(line) + " /dev/null"
			}
			cmd := exec.Command("bash", "-c", line)
			cmd.Dir = root
			cmd.Env = synthEnv(root, r.aws.URL(), t.TempDir())
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v after %s:\n%s", r.name, err, time.Since(start).Round(time.Second), out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	makeRun, plain, pinned := runs[0], runs[1], runs[2]

	if got := makeRun.aws.Requests(); len(got) > 0 {
		t.Errorf("make synth, with credentials in its environment, sent (to the AWS endpoint or through the proxy):\n  %s\nits recipe runs %s", strings.Join(got, "\n  "), makeSynth)
	}
	// The control: the stand-in does see what the CLI sends, and docs/development.md's account of a
	// plain synth with credentials still holds. If the CLI stops calling STS here, that document's
	// Telemetry paragraph and the Makefile's comment on CDK_OFFLINE must say so.
	want := []string{"POST / Action=GetCallerIdentity"}
	if got := plain.aws.Requests(); !reflect.DeepEqual(got, want) {
		t.Errorf("cdk synth with credentials sent %q; docs/development.md says it sends %q", got, want)
	}

	const agnostic = "aws://unknown-account/unknown-region"
	for _, c := range []struct {
		r    *run
		want string
	}{
		{makeRun, agnostic},
		// The CLI gave the app CDK_DEFAULT_ACCOUNT=stsAccount and CDK_DEFAULT_REGION=us-east-1.
		{plain, agnostic},
		{pinned, "aws://" + pinnedAccount + "/eu-west-1"},
	} {
		if got := stackEnvironment(t, c.r.outdir); got != c.want {
			t.Errorf("%s: stack environment %s, want %s", c.r.name, got, c.want)
		}
	}
	a, b := readFile(t, makeRun.outdir, stackName+".template.json"), readFile(t, plain.outdir, stackName+".template.json")
	if a != b {
		t.Errorf("make synth and cdk synth with credentials wrote different templates (%d and %d bytes): the template must be the same whoever synthesizes it", len(a), len(b))
	}
}

const (
	stackName = "IdempotentSqsPipeline-dev"
	// What the stand-in STS answers, and what -c account pins: different, so an STS account
	// that reached the stack would show.
	stsAccount    = "111122223333"
	pinnedAccount = "123456789012"
)

// standIn is an HTTP server on 127.0.0.1 that stands in for every AWS endpoint and for any
// proxy, and records each request it gets. It answers STS GetCallerIdentity (with
// stsAccount) and refuses everything else.
type standIn struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []string
}

func newStandIn(t *testing.T) *standIn {
	s := &standIn{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.RequestURI
		action := ""
		if r.Method != http.MethodConnect && r.ParseForm() == nil {
			action = r.PostForm.Get("Action")
		}
		if action != "" {
			line += " Action=" + action
		}
		if target := r.Header.Get("X-Amz-Target"); target != "" {
			line += " X-Amz-Target=" + target
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, line)
		s.mu.Unlock()
		if r.Method == http.MethodPost && action == "GetCallerIdentity" {
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
				`<Arn>arn:aws:iam::%[1]s:user/synth-test</Arn><UserId>AIDASYNTHTEST</UserId><Account>%[1]s</Account>`+
				`</GetCallerIdentityResult><ResponseMetadata><RequestId>synth-test</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, stsAccount)
			return
		}
		http.Error(w, "not served by the synth test's stand-in", http.StatusForbidden)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) URL() string { return s.srv.URL }

func (s *standIn) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// synthEnv is the test's environment for a synth: the caller's, without its own AWS, CDK and
// proxy settings, plus fake credentials that only the stand-in at url hears, and a fresh
// CDK_HOME (the CLI caches the account per access key there; a cached one hides the call),
// which is the temporary directory too: the app, as users run it, leaves its jsii runtime
// there (2 MB), removed with the test's.
func synthEnv(root, url, cdkHome string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch uk := strings.ToUpper(k); {
		case strings.HasPrefix(uk, "AWS_"), strings.HasPrefix(uk, "CDK_"), strings.HasSuffix(uk, "_PROXY"),
			// A make that runs this test passes its jobserver in MAKEFLAGS; the make -n below has none.
			uk == "MAKEFLAGS", uk == "MFLAGS", uk == "MAKELEVEL", uk == "PATH", uk == "GOPROXY":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		// jsii starts the node first on PATH: the pinned Node 22, as the Makefile sets it.
		"PATH="+filepath.Join(root, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1",
		"AWS_ACCESS_KEY_ID=AKIASYNTHTEST",
		"AWS_SECRET_ACCESS_KEY=synth-test",
		"AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL="+url,
		"HTTP_PROXY="+url, "HTTPS_PROXY="+url, "http_proxy="+url, "https_proxy="+url,
		"NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1",
		"CDK_HOME="+cdkHome, "TMPDIR="+cdkHome,
		// The app and its functions compile from the module cache (make unit fills it first).
		"GOPROXY=off",
	)
}

// makeSynthCommand is the CDK CLI command line the Makefile's synth recipe runs (without the
// progress wrapper), as `make -n synth` prints it: the recipe itself, not a copy of it.
func makeSynthCommand(t *testing.T, root string) string {
	cmd := exec.Command("make", "-n", "-s", "--no-print-directory", "synth")
	cmd.Dir = root
	cmd.Env = synthEnv(root, "http://127.0.0.1:9", t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n synth: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.ReplaceAll(string(out), "\\\n", " "), "\n") {
		if !strings.Contains(line, "/node_modules/.bin/cdk synth") {
			continue
		}
		if _, after, ok := strings.Cut(line, " -- "); ok { // scripts/step.sh WHAT HOW-LONG -- COMMAND
			line = after
		}
		return strings.TrimSpace(line)
	}
	t.Fatalf("make -n synth runs no node_modules/.bin/cdk synth:\n%s", out)
	return ""
}

// stackEnvironment is the stack's environment in the cloud assembly's manifest, e.g.
// aws://123456789012/eu-west-1.
func stackEnvironment(t *testing.T, outdir string) string {
	var m struct {
		Artifacts map[string]struct {
			Environment string `json:"environment"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(readFile(t, outdir, "manifest.json")), &m); err != nil {
		t.Fatal(err)
	}
	a, ok := m.Artifacts[stackName]
	if !ok {
		t.Fatalf("%s/manifest.json has no artifact %s", outdir, stackName)
	}
	return a.Environment
}

func readFile(t *testing.T, dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
