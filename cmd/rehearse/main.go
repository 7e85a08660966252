// Command rehearse deploys a CDK app the way the README deploys the reference stack, on
// fakecloud (a local AWS emulator with a CloudFormation engine), without an account:
//
//	synth, bootstrap, diff, deploy, the deployed functions run under their roles (the local
//	kit attached to the stacks: verify, a message, a bad one, the dispatchers, a heartbeat),
//	the operator commands (pipelinectl with --stack and with --outputs), an update with a
//	changed setting that must keep every stateful resource and what is in it, the functions
//	run again, pipelinectl under the roles it prints, destroy, and a check of what destroy
//	kept and deleted. The emulator checks every call against IAM (--iam strict).
//
// Each step prints one line with its result and how long it took; any mismatch fails the
// run (exit 1). Ctrl-C stops every process it started and exits 3. The emulator keeps its
// state in memory, so nothing is left anywhere after a run; the work directory keeps the
// assemblies, the outputs file and each command's log.
//
//	go run ./cmd/rehearse                                  # this repository's app (cdk.json)
//	go run ./cmd/rehearse --app 'go run ./app' --update stage=rehearsal
//	go run ./cmd/rehearse --assembly cdk.out               # a synthesized cloud assembly
//
// It needs the fakecloud binary (--fakecloud, $FAKECLOUD, or on PATH) and the CDK CLI (--cdk,
// node_modules/.bin/cdk, or on PATH). What an emulator cannot prove (SSE-KMS on queues,
// quotas, the deployed arm64 code itself) is in docs/development.md, "Rehearse a deploy
// without an account".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // a step failed or found a mismatch
	exitUsage       = 2
	exitInterrupted = 3 // Ctrl-C or SIGTERM: everything started was stopped
)

type options struct {
	app, assembly string   // what to deploy: an app command (default cdk.json's), or an assembly
	dir           string   // where the CDK CLI runs (the app's cdk.json)
	update        []string // context (key=value) for the update's synth
	updateAsm     string   // or an assembly to update to
	from          string   // deploy the app as it was at this git commit first, then update to today's
	context       []string // context for both synths
	setup         []string // shell commands run against the emulator before the deploy
	fakecloud     string
	cdk           string
	pipelinectl   string // a built pipelinectl; default: built from this module
	viaMake       bool   // diff, deploy and destroy as the README's make targets
	work          string
	keep          bool              // leave the emulator running at the end, for a look around
	messages      map[string]string // pipeline -> the body of the run step's good message ($KEY its key)
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const usage = `rehearse: deploy a CDK app on fakecloud, without an AWS account, as the README deploys it

  rehearse [--app CMD | --assembly DIR] [--update KEY=VALUE ...] [flags]

Steps (one line each): synth, fakecloud, bootstrap, diff, deploy, run, seed, operate --stack,
operate --outputs, update (synth, diff, stateful check, deploy, data kept, run), operate as the
operators, destroy, leftovers. "run" runs the deployed functions with their roles' credentials
(pipelinectl local's kit attached to the stacks): verify --stack, a message and a bad one to
each pipeline, each dispatcher fired, a heartbeat.

  --dir DIR            where the CDK CLI runs: the app's directory, with its cdk.json (default .)
  --app CMD            the CDK app to synthesize (default: cdk.json's "app" in --dir)
  --assembly DIR       deploy this cloud assembly (cdk synth's output) instead of synthesizing
  --context KEY=VALUE  context for every synth (repeatable)
  --update KEY=VALUE   context the update's synth adds (repeatable); without it the update
                       redeploys the same app and must change nothing
  --update-assembly DIR  with --assembly: the assembly to update to
  --from REF           deploy the app as it was at this git commit first (HEAD, main, a
                       release tag), then update to the working tree's: a change that would
                       replace a table or lose its data fails before it merges
  --setup CMD          a shell command run against the emulator after bootstrap, before the
                       deploy (repeatable): create what the app imports, as your account has it
                       (AWS_ENDPOINT_URL and test credentials are set; e.g. aws dynamodb create-table)
  --message PIPELINE=BODY  the body of the message the run step sends to that pipeline, with
                       $KEY where its idempotency key goes (repeatable; default
                       {"idempotencyKey":"$KEY"}): what your consumer accepts
  --fakecloud PATH     the emulator (default $FAKECLOUD, else fakecloud on PATH)
  --cdk PATH           the CDK CLI (default node_modules/.bin/cdk, else cdk on PATH)
  --pipelinectl PATH   the operator CLI to run (default: go build of it in the current module;
                       outside this repository, go install .../cmd/pipelinectl@VERSION and name it)
  --make               run diff, deploy and destroy as this repository's make targets
  --work DIR           where assemblies, outputs and logs go (default .cache/rehearse)
  --keep               at the end, passed or failed, keep the emulator running for a look
                       around until Ctrl-C (its address is printed)

Exit: 0 every step passed; 1 a step failed (its log is named); 2 usage; 3 interrupted.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("rehearse", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.app, "app", "", "")
	fs.StringVar(&o.assembly, "assembly", "", "")
	fs.StringVar(&o.dir, "dir", ".", "")
	fs.Var((*listFlag)(&o.update), "update", "")
	fs.Var((*listFlag)(&o.context), "context", "")
	fs.Var((*listFlag)(&o.setup), "setup", "")
	fs.StringVar(&o.updateAsm, "update-assembly", "", "")
	fs.StringVar(&o.from, "from", "", "")
	fs.StringVar(&o.fakecloud, "fakecloud", os.Getenv("FAKECLOUD"), "")
	fs.StringVar(&o.cdk, "cdk", "", "")
	fs.StringVar(&o.pipelinectl, "pipelinectl", "", "")
	fs.BoolVar(&o.viaMake, "make", false, "")
	fs.StringVar(&o.work, "work", filepath.Join(".cache", "rehearse"), "")
	fs.BoolVar(&o.keep, "keep", false, "")
	var messages []string
	fs.Var((*listFlag)(&messages), "message", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "rehearse: %v (rehearse -h lists the flags)\n", err)
		return exitUsage
	}
	if err := o.check(fs.Args(), messages); err != nil {
		fmt.Fprintf(stderr, "rehearse: %v\n", err)
		return exitUsage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Ctrl-C at a terminal also ends what reads the output (| tee, | grep): a write to that
	// closed pipe must fail, not kill the run before it stopped what it started. (Notify, not
	// Ignore: an ignored signal would stay ignored in every child.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	r := &rehearsal{opts: o, out: stdout, started: time.Now()}
	err := r.run(ctx)
	interrupted := ctx.Err() != nil
	r.close(ctx)
	switch {
	case interrupted:
		fmt.Fprintf(stdout, "rehearse: interrupted during %s after %s: %s; rerun the same command to start over\n",
			r.step, since(r.started), r.leftBehind())
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stdout, "rehearse: FAILED at %s after %s: %v\n  %s\n", r.step, since(r.started), err, r.leftBehind())
		return exitFailed
	}
	fmt.Fprintf(stdout, "rehearse: every step passed in %s; %s\n", since(r.started), r.leftBehind())
	return exitOK
}

func (o *options) check(rest, messages []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q (rehearse -h lists the flags)", rest[0])
	}
	o.messages = map[string]string{}
	for _, m := range messages {
		name, body, ok := strings.Cut(m, "=")
		if !ok || name == "" || !strings.Contains(body, "$KEY") {
			return fmt.Errorf("--message %q: want PIPELINE=BODY, the body with $KEY where the message's idempotency key goes", m)
		}
		o.messages[name] = body
	}
	if o.app != "" && o.assembly != "" {
		return errors.New("--app and --assembly both given: give one (an app is synthesized; an assembly is deployed as it is)")
	}
	if o.updateAsm != "" && o.assembly == "" {
		return errors.New("--update-assembly needs --assembly (with an app, give --update KEY=VALUE)")
	}
	if o.assembly != "" && o.from != "" {
		return errors.New("--from needs an app to synthesize at that commit; with --assembly, give --update-assembly")
	}
	if o.assembly != "" && (len(o.update) > 0 || len(o.context) > 0) {
		return errors.New("--update and --context need an app to synthesize; with --assembly, give --update-assembly")
	}
	for _, kv := range append(append([]string{}, o.update...), o.context...) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("context %q: want KEY=VALUE", kv)
		}
	}
	if o.viaMake && (o.app != "" || o.assembly != "" || o.dir != ".") {
		return errors.New("--make runs this repository's make targets on its own app; leave out --app, --assembly and --dir")
	}
	for _, p := range []*string{&o.assembly, &o.updateAsm, &o.dir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fmt.Errorf("%s: no such directory", *p)
		}
		*p = abs
	}
	return nil
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
