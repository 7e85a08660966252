package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// rehearsal is one run: its steps, what they found, and what it started.
type rehearsal struct {
	opts    options
	out     io.Writer
	started time.Time
	step    string

	work                string // absolute
	env                 []string
	cdk, ctl, fakecloud string
	account, region     string
	emu                 *emulator
	aws                 *awsClients
	v1, v2              []stack
	outputsFile         string
	fromCommit          string // --from, resolved
	outputs             map[string]map[string]string
	seeds               []seed
	physical            map[string]map[string]deployed // stack -> logical id -> what the last deploy made
	physicalV1          map[string]map[string]deployed // what the first deploy made, which the update must keep
	offline             []string                       // the environment before the emulator: synths run with it
	// ctlEnv, when set, is the environment pipelinectl runs with instead of env: an
	// operator role's credentials (iam.go).
	ctlEnv []string
	roles  int // operator roles created so far, for unique names
}

type deployed struct{ Type, Physical string }

type step struct {
	name string
	fn   func(context.Context) (string, error)
}

func (r *rehearsal) run(ctx context.Context) error {
	steps := []step{
		{"tools", r.tools},
		{"synth", func(ctx context.Context) (string, error) { return r.synth(ctx, "v1", r.opts.assembly, nil, &r.v1) }},
		{"fakecloud", r.startEmulator1},
		{"bootstrap", r.bootstrap},
		{"setup", r.setup},
		{"diff", func(ctx context.Context) (string, error) { return r.diff(ctx, "v1") }},
		{"deploy", func(ctx context.Context) (string, error) { return r.deploy(ctx, "v1", r.v1) }},
		{"run", func(ctx context.Context) (string, error) { return r.runFunctions(ctx, "v1", r.v1) }},
		{"seed", r.seed},
		{"operate --stack", func(ctx context.Context) (string, error) { return r.operate(ctx, false) }},
		{"operate --outputs", func(ctx context.Context) (string, error) { return r.operate(ctx, true) }},
		{"update synth", r.updateSynth},
		{"update diff", func(ctx context.Context) (string, error) { return r.diff(ctx, "v2") }},
		{"update change set", r.changeSet},
		{"update deploy", func(ctx context.Context) (string, error) { return r.deploy(ctx, "v2", r.v2) }},
		{"update kept", r.kept},
		{"update run", func(ctx context.Context) (string, error) { return r.runFunctions(ctx, "v2", r.v2) }},
		{"operate as the operators", r.operateAsOperators},
		{"destroy", r.destroy},
		{"leftovers", r.leftovers},
	}
	for _, s := range steps {
		r.step = s.name
		start := time.Now()
		detail, err := s.fn(ctx)
		took := time.Since(start).Round(100 * time.Millisecond)
		switch {
		case ctx.Err() != nil:
			fmt.Fprintf(r.out, "%-18s %-5s %7s  interrupted\n", s.name, "STOP", took)
			return ctx.Err()
		case err != nil:
			if r.emu != nil {
				select {
				case <-r.emu.proc.Exited():
					err = fmt.Errorf("%w\n  fakecloud had exited (%v) under this step: its output is in %s", err, r.emu.proc.WaitErr(), rel(r.emu.log))
				default:
				}
			}
			fmt.Fprintf(r.out, "%-18s %-5s %7s  %v\n", s.name, "FAIL", took, err)
			return err
		}
		fmt.Fprintf(r.out, "%-18s %-5s %7s  %s\n", s.name, "ok", took, detail)
	}
	return nil
}

// close stops the emulator. With --keep it first waits for Ctrl-C, so that a person can look
// around (the emulator cannot outlive the run: the kernel ends it with its parent).
func (r *rehearsal) close(ctx context.Context) {
	if r.opts.keep && r.emu != nil && ctx.Err() == nil {
		fmt.Fprintf(r.out, "rehearse: --keep: fakecloud runs at %s (AWS_ENDPOINT_URL=%s, any credentials) until Ctrl-C\n", r.emu.url, r.emu.url)
		<-ctx.Done()
	}
	r.emu.stop()
	r.emu = nil
}

// leftBehind says what is where after the run.
func (r *rehearsal) leftBehind() string {
	if r.work == "" {
		return "nothing was started"
	}
	left := "nothing is left running"
	if r.aws != nil { // the emulator ran
		left += " (fakecloud stopped; its state was in memory, so every stack went with it)"
	}
	return left + "; logs, assemblies and outputs in " + rel(r.work)
}

// tools finds the CDK CLI and fakecloud and builds pipelinectl.
func (r *rehearsal) tools(ctx context.Context) (string, error) {
	var err error
	if r.work, err = filepath.Abs(r.opts.work); err != nil {
		return "", err
	}
	if err := claimWork(r.work); err != nil {
		return "", err
	}
	for _, d := range []string{"logs", "v1", "v2", "bin", "base", "base.tar"} {
		if err := os.RemoveAll(filepath.Join(r.work, d)); err != nil {
			return "", err
		}
	}
	r.outputsFile = filepath.Join(r.work, "outputs.json")
	_ = os.Remove(r.outputsFile)
	r.env = append(offlineEnv(os.Environ()), markerVar+"="+r.work)
	r.offline = r.env
	if r.cdk, err = findTool("cdk", r.opts.cdk, filepath.Join("node_modules", ".bin", "cdk")); err != nil && r.opts.cdk != "" {
		return "", fmt.Errorf("--cdk %s: %w", r.opts.cdk, err)
	} else if err != nil {
		return "", errors.New("the CDK CLI not found: give --cdk PATH, or install it (npm install aws-cdk; make synth-tools does it here)")
	}
	if r.fakecloud, err = findTool("fakecloud", r.opts.fakecloud); err != nil && r.opts.fakecloud != "" {
		return "", fmt.Errorf("--fakecloud (or FAKECLOUD) %s: %w", r.opts.fakecloud, err)
	} else if err != nil {
		return "", errors.New("fakecloud not found: give --fakecloud PATH or FAKECLOUD=PATH, or put it on PATH; " +
			"install it with `cargo install fakecloud --version 0.51.0 --locked` (40-60 min on 2 cores; make fakecloud does it)")
	}
	r.ctl = r.opts.pipelinectl
	if r.ctl == "" {
		r.ctl = filepath.Join(r.work, "bin", "pipelinectl")
		if _, err := r.command(ctx, "tools", nil, "go", "build", "-o", r.ctl, "github.com/idempotent-sqs/pipeline/cmd/pipelinectl"); err != nil {
			return "", fmt.Errorf("building pipelinectl in this module failed (give --pipelinectl PATH, e.g. after go install github.com/idempotent-sqs/pipeline/cmd/pipelinectl@VERSION): %w", err)
		}
	}
	return fmt.Sprintf("cdk %s, fakecloud %s, pipelinectl %s", rel(r.cdk), rel(r.fakecloud), rel(r.ctl)), nil
}

// workMarker is the file that makes a directory the rehearsal's to clear.
const workMarker = ".rehearse-work"

// claimWork makes sure dir is the rehearsal's: new, empty, or holding its marker. A run
// clears what an earlier one left there, and never a directory of someone else's.
func claimWork(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, workMarker)); err != nil {
			return fmt.Errorf("--work %s holds files a rehearsal did not write (no %s): give an empty or new directory", rel(dir), workMarker)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, workMarker), []byte("made by cmd/rehearse; the next run clears this directory\n"), 0o644)
}

// markerVar is in the environment of every process a run starts, the emulator too, with the
// run's work directory: grep -l REHEARSE_WORK=DIR /proc/*/environ finds them (the tests do).
const markerVar = "REHEARSE_WORK"

// offlineEnv is the environment every command runs with: nothing of the caller's AWS
// configuration (no credentials, profile or endpoint can reach a real account), no instance
// metadata, no CDK version check.
func offlineEnv(environ []string) []string {
	var env []string
	noProxy := "127.0.0.1,localhost"
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "CDK_DEFAULT_"):
			continue
		case k == "NO_PROXY" || k == "no_proxy":
			if v != "" && !strings.Contains(noProxy, v) {
				noProxy += "," + v
			}
			continue
		}
		env = append(env, kv)
	}
	// The CDK CLI's telemetry and notices are off whatever the app's cdk.json says, and the
	// emulator on loopback is never reached through a proxy.
	return append(env, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=true",
		"NO_PROXY="+noProxy, "no_proxy="+noProxy)
}

// synth writes the assembly dir (v1 or v2) from the app, or copies the given assembly, and
// names its schedules for the emulator.
func (r *rehearsal) synth(ctx context.Context, dir, assembly string, extra []string, into *[]stack) (string, error) {
	// Every synth sees the same environment, the one before the emulator: no credentials or
	// region of the emulator's get into the app (CDK_DEFAULT_ACCOUNT, lookups).
	env := r.env
	r.env = r.offline
	defer func() { r.env = env }()
	out := filepath.Join(r.work, dir)
	// The app's directory: with --from, the first synth is of the app as it was at that commit
	// (what is deployed today, which the update must upgrade).
	appDir, from := r.opts.dir, dir == "v1" && r.opts.from != ""
	if from {
		var err error
		if appDir, err = r.checkout(ctx); err != nil {
			return "", err
		}
	}
	switch {
	case assembly != "":
		if err := os.CopyFS(out, os.DirFS(assembly)); err != nil {
			return "", fmt.Errorf("copying the assembly %s: %w", assembly, err)
		}
	case r.opts.viaMake && dir == "v1" && !from:
		// The README's line: make synth writes cdk.out (and its reviewer's report).
		if _, err := r.command(ctx, "synth-"+dir, nil, "make", "-s", "--no-print-directory", "synth"); err != nil {
			return "", err
		}
		if err := os.CopyFS(out, os.DirFS("cdk.out")); err != nil {
			return "", fmt.Errorf("copying cdk.out: %w", err)
		}
	default:
		args := []string{"synth", "--quiet", "-o", out}
		if r.opts.app != "" {
			args = append(args, "--app", r.opts.app)
		}
		for _, kv := range append(append([]string{}, r.opts.context...), extra...) {
			args = append(args, "-c", kv)
		}
		if _, err := r.commandIn(ctx, appDir, "synth-"+dir, nil, r.cdk, args...); err != nil {
			return "", err
		}
	}
	stacks, err := readAssembly(out)
	if err != nil {
		return "", err
	}
	if err := checkAssets(out); err != nil {
		return "", err
	}
	if len(stacks) == 0 {
		return "", fmt.Errorf("the assembly %s has no stack", rel(out))
	}
	named, err := nameSchedules(stacks)
	if err != nil {
		return "", err
	}
	if named > 0 { // what is deployed is the named copy
		if stacks, err = readAssembly(out); err != nil {
			return "", err
		}
	}
	*into = stacks
	n := 0
	for _, s := range stacks {
		n += len(s.Res)
	}
	detail := fmt.Sprintf("%s: %d resources", stackNames(stacks), n)
	if from {
		detail = fmt.Sprintf("at %s (%s), ", r.opts.from, r.fromCommit) + detail
	}
	if named > 0 {
		detail += fmt.Sprintf("; %d schedules named for fakecloud (its generated names are too long)", named)
	}
	return detail, nil
}

func stackNames(stacks []stack) string {
	names := make([]string, len(stacks))
	for i, s := range stacks {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func (r *rehearsal) startEmulator1(ctx context.Context) (string, error) {
	var err error
	if r.account, r.region, err = env(r.v1); err != nil {
		return "", err
	}
	if r.emu, err = r.startEmulator(ctx, r.fakecloud, r.account, r.region); err != nil {
		return "", err
	}
	r.aws = newClients(r.emu.url, r.region)
	r.env = append(r.env, "AWS_ENDPOINT_URL="+r.emu.url, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_REGION="+r.region, "AWS_DEFAULT_REGION="+r.region)
	return fmt.Sprintf("%s, account %s, region %s (process %d)", r.emu.url, r.account, r.region, r.emu.proc.PID()), nil
}

func (r *rehearsal) bootstrap(ctx context.Context) (string, error) {
	target := "aws://" + r.account + "/" + r.region
	// --app names the assembly: without it, the CLI would run the app of the cdk.json it finds,
	// with bundling off, into its cdk.out, overwriting what the user synthesized there.
	if _, err := r.command(ctx, "bootstrap", nil, r.cdk, "bootstrap", "--app", filepath.Join(r.work, "v1"), target); err != nil {
		return "", err
	}
	bucket := "cdk-hnb659fds-assets-" + r.account + "-" + r.region
	if err := r.allowPlainHTTPToBucket(ctx, bucket); err != nil {
		return "", err
	}
	return target + "; for fakecloud's plain HTTP, " + bucket + " without its insecure-transport Deny (iam.go)", nil
}

// checkout writes the repository's tree at --from into the work directory (git archive: the
// repository itself is not touched, no worktree is registered) and returns the app's directory
// in it.
func (r *rehearsal) checkout(ctx context.Context) (string, error) {
	top, err := r.commandIn(ctx, r.opts.dir, "checkout", nil, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("--from %s needs the app in a git repository: %w", r.opts.from, err)
	}
	toplevel := strings.TrimSpace(string(top))
	commit, err := r.commandIn(ctx, toplevel, "checkout", nil, "git", "rev-parse", "--short", r.opts.from+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("--from %s: no such commit: %w", r.opts.from, err)
	}
	r.fromCommit = strings.TrimSpace(string(commit))
	base := filepath.Join(r.work, "base")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	archive := filepath.Join(r.work, "base.tar")
	if _, err := r.commandIn(ctx, toplevel, "checkout", nil, "git", "archive", "--format=tar", "-o", archive, r.fromCommit); err != nil {
		return "", err
	}
	if _, err := r.commandIn(ctx, base, "checkout", nil, "tar", "-xf", archive); err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(r.opts.dir)
	if err != nil {
		return "", err
	}
	if toplevel, err = filepath.EvalSymlinks(toplevel); err != nil {
		return "", err
	}
	sub, err := filepath.Rel(toplevel, dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(base, sub), nil
}

// setup runs the --setup commands: what the app imports must exist before it deploys.
func (r *rehearsal) setup(ctx context.Context) (string, error) {
	if len(r.opts.setup) == 0 {
		return "nothing to create (--setup)", nil
	}
	for _, c := range r.opts.setup {
		if _, err := r.command(ctx, "setup", nil, "sh", "-c", c); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d commands (logs/setup.log)", len(r.opts.setup)), nil
}

// cdkOrMake runs a README line: `make <target> VAR=...` with --make, else the CDK CLI with
// the same flags.
func (r *rehearsal) cdkOrMake(ctx context.Context, log, target, dir string) ([]byte, error) {
	asm := filepath.Join(r.work, dir)
	if r.opts.viaMake {
		args := []string{"-s", "--no-print-directory", target, "CDK_APP=" + asm}
		switch target {
		case "deploy":
			args = append(args, "REQUIRE_APPROVAL=never", "OUTPUTS_FILE="+r.outputsFile)
		case "destroy":
			args = append(args, "FORCE=true")
		}
		return r.command(ctx, log, nil, "make", args...)
	}
	var args []string
	switch target {
	case "diff":
		args = []string{"diff", "--app", asm, "**"}
	case "deploy":
		args = []string{"deploy", "--app", asm, "**", "--require-approval", "never", "--outputs-file", r.outputsFile}
	case "destroy":
		args = []string{"destroy", "--app", asm, "**", "--force"}
	}
	return r.command(ctx, log, nil, r.cdk, args...)
}

func (r *rehearsal) diff(ctx context.Context, dir string) (string, error) {
	if _, err := r.cdkOrMake(ctx, "diff-"+dir, "diff", dir); err != nil {
		return "", err
	}
	// The CLI writes the diff to stderr; the log has both.
	b, _ := os.ReadFile(filepath.Join(r.work, "logs", "diff-"+dir+".log"))
	var add, change, remove int
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "[+] AWS::"):
			add++
		case strings.HasPrefix(line, "[~] AWS::"):
			change++
		case strings.HasPrefix(line, "[-] AWS::"):
			remove++
		}
	}
	how := "cdk diff"
	if r.opts.viaMake {
		how = "make diff"
	}
	return fmt.Sprintf("%s: %d to add, %d to change, %d to remove (logs/diff-%s.log)", how, add, change, remove, dir), nil
}

// deploy deploys the assembly dir and checks that every stack is complete with every resource
// of its template.
func (r *rehearsal) deploy(ctx context.Context, dir string, stacks []stack) (string, error) {
	if _, err := r.cdkOrMake(ctx, "deploy-"+dir, "deploy", dir); err != nil {
		return "", err
	}
	phys := map[string]map[string]deployed{}
	var parts []string
	for _, s := range stacks {
		d, err := r.aws.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(s.Name)})
		if err != nil {
			return "", fmt.Errorf("stack %s after the deploy: %w", s.Name, err)
		}
		if len(d.Stacks) == 0 {
			return "", fmt.Errorf("stack %s after the deploy: DescribeStacks returned no stack", s.Name)
		}
		status := string(d.Stacks[0].StackStatus)
		if status != "CREATE_COMPLETE" && status != "UPDATE_COMPLETE" {
			return "", fmt.Errorf("stack %s is %s after the deploy: %s", s.Name, status, aws.ToString(d.Stacks[0].StackStatusReason))
		}
		if phys[s.Name], err = r.aws.resources(ctx, s.Name); err != nil {
			return "", err
		}
		var missing []string
		conditional := 0
		for id, t := range s.Res {
			if t.Condition != "" {
				conditional++
				continue
			}
			if _, ok := phys[s.Name][id]; !ok {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return "", fmt.Errorf("stack %s is %s without %s", s.Name, status, strings.Join(missing, ", "))
		}
		parts = append(parts, fmt.Sprintf("%s %s, %d of %d resources", s.Name, status, len(phys[s.Name]), len(s.Res)-conditional))
	}
	r.physical = phys
	if dir == "v1" {
		r.physicalV1 = phys
	}
	b, err := os.ReadFile(r.outputsFile)
	if err != nil {
		return "", fmt.Errorf("the outputs file: %w", err)
	}
	if err := json.Unmarshal(b, &r.outputs); err != nil {
		return "", fmt.Errorf("the outputs file %s: %w", rel(r.outputsFile), err)
	}
	return strings.Join(parts, "; ") + "; outputs in " + rel(r.outputsFile), nil
}

func (r *rehearsal) updateSynth(ctx context.Context) (string, error) {
	asm := r.opts.updateAsm
	if asm == "" {
		asm = r.opts.assembly
	}
	detail, err := r.synth(ctx, "v2", asm, r.opts.update, &r.v2)
	if err != nil {
		return "", err
	}
	if bad := replacements(r.v1, r.v2); len(bad) > 0 {
		return "", fmt.Errorf("the update would replace or remove stateful resources:\n  %s", strings.Join(bad, "\n  "))
	}
	changed := 0
	for i, s := range r.v1 {
		if i < len(r.v2) && !reflect.DeepEqual(s.Res, r.v2[i].Res) {
			for id, res := range r.v2[i].Res {
				if !reflect.DeepEqual(s.Res[id], res) {
					changed++
				}
			}
		}
	}
	what := "the same app again"
	if len(r.opts.update) > 0 {
		what = strings.Join(r.opts.update, " ")
	} else if r.opts.updateAsm != "" {
		what = r.opts.updateAsm
	}
	asked := len(r.opts.update) > 0 || r.opts.updateAsm != ""
	switch {
	case asked && changed == 0:
		return "", fmt.Errorf("%s changes no resource: the update would prove nothing (a misspelt context key?)", what)
	case !asked && changed > 0 && r.opts.from == "":
		return "", fmt.Errorf("the same app synthesized twice gives %s: the app is not deterministic", plural(changed, "changed resource"))
	}
	return fmt.Sprintf("%s: %s change, no stateful resource is replaced or removed; %s", what, plural(changed, "resource"), detail), nil
}

// changeSet asks CloudFormation (the emulator's engine) for the update's change set and fails
// on a stateful resource it would remove or replace.
func (r *rehearsal) changeSet(ctx context.Context) (string, error) {
	asm := filepath.Join(r.work, "v2")
	name := "rehearse-update"
	if _, err := r.command(ctx, "changeset", nil, r.cdk, "deploy", "--app", asm, "**", "--require-approval", "never",
		"--no-execute", "--change-set-name", name); err != nil {
		return "", err
	}
	var bad []string
	n := 0
	for i, s := range r.v2 {
		var changes []cfntypes.Change
		in := &cloudformation.DescribeChangeSetInput{StackName: aws.String(s.Name), ChangeSetName: aws.String(name)}
		for {
			cs, err := r.aws.cfn.DescribeChangeSet(ctx, in)
			var nf *cfntypes.ChangeSetNotFoundException
			if errors.As(err, &nf) && i < len(r.v1) && reflect.DeepEqual(r.v1[i].Res, s.Res) {
				break // the CLI makes no change set for a stack whose template is the same
			}
			if err != nil {
				return "", fmt.Errorf("stack %s's change set: %w", s.Name, err)
			}
			if cs.Status != cfntypes.ChangeSetStatusCreateComplete {
				return "", fmt.Errorf("stack %s's change set is %s: %s", s.Name, cs.Status, aws.ToString(cs.StatusReason))
			}
			changes = append(changes, cs.Changes...)
			if cs.NextToken == nil {
				break
			}
			in.NextToken = cs.NextToken
		}
		for _, c := range changes {
			rc := c.ResourceChange
			if rc == nil {
				continue
			}
			n++
			if _, ok := stateful[aws.ToString(rc.ResourceType)]; !ok {
				continue
			}
			// Replacement "Conditional" is not judged: fakecloud 0.51.0 reports every change
			// as a Modify with a conditional replacement; the templates were compared above.
			if rc.Action == cfntypes.ChangeActionRemove || rc.Replacement == cfntypes.ReplacementTrue {
				bad = append(bad, fmt.Sprintf("%s %s (%s): %s, replacement %s", s.Name, aws.ToString(rc.LogicalResourceId), aws.ToString(rc.ResourceType), rc.Action, rc.Replacement))
			}
		}
		_, _ = r.aws.cfn.DeleteChangeSet(ctx, &cloudformation.DeleteChangeSetInput{StackName: aws.String(s.Name), ChangeSetName: aws.String(name)})
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("the change set removes or replaces stateful resources:\n  %s", strings.Join(bad, "\n  "))
	}
	return fmt.Sprintf("%d changes, none removes or replaces a stateful resource", n), nil
}

// moved lists the stateful resources of before that now have another physical id or none:
// CloudFormation replaced or removed them.
func moved(before, now map[string]map[string]deployed) []string {
	var bad []string
	for _, st := range sortedKeys(before) {
		for _, id := range sortedKeys(before[st]) {
			d := before[st][id]
			if _, ok := stateful[d.Type]; !ok {
				continue
			}
			if n, ok := now[st][id]; !ok {
				bad = append(bad, fmt.Sprintf("%s %s (%s) %s is no longer in the stack", st, id, d.Type, d.Physical))
			} else if n.Physical != d.Physical {
				bad = append(bad, fmt.Sprintf("%s %s (%s) was %s, is now %s: replaced", st, id, d.Type, d.Physical, n.Physical))
			}
		}
	}
	return bad
}

// kept checks, after the update, that every stateful resource is the one deployed before
// (same physical id), that the records and DLQ messages seeded before are there, and that the
// stacks run the new templates.
func (r *rehearsal) kept(ctx context.Context) (string, error) {
	bad := moved(r.physicalV1, r.physical)
	count := 0
	for _, byID := range r.physicalV1 {
		for _, d := range byID {
			if _, ok := stateful[d.Type]; ok {
				count++
			}
		}
	}
	// pipelinectl finds the table and the DLQs by the outputs: they must still name the
	// resources that hold the records and messages.
	tables := map[string]bool{}
	for _, sd := range r.seeds {
		out := r.outputs[sd.stack]
		if now := cmp.Or(out[sd.pipeline+outTableName], out[outTableName]); sd.table != "" && now != sd.table && !tables[sd.stack+sd.table] {
			tables[sd.stack+sd.table] = true // one table of a stack: said once
			bad = append(bad, fmt.Sprintf("%s's output %s (or %s) names %q after the update, was %q", sd.stack, sd.pipeline+outTableName, outTableName, now, sd.table))
		}
		if out[sd.pipeline+outDLQURL] != sd.dlq {
			bad = append(bad, fmt.Sprintf("%s's output %s names %q after the update, was %q", sd.stack, sd.pipeline+outDLQURL, out[sd.pipeline+outDLQURL], sd.dlq))
		}
	}
	records, messages, err := r.checkSeeds(ctx)
	if err != nil {
		bad = append(bad, err.Error())
	}
	for i, s := range r.v2 {
		t, err := r.aws.cfn.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(s.Name)})
		if err != nil {
			return "", err
		}
		var deployed struct{ Resources map[string]resource }
		if err := json.Unmarshal([]byte(aws.ToString(t.TemplateBody)), &deployed); err != nil {
			return "", fmt.Errorf("stack %s's template: %w", s.Name, err)
		}
		var differ []string
		for _, id := range sortedKeys(r.v2[i].Res) {
			if !reflect.DeepEqual(deployed.Resources[id], r.v2[i].Res[id]) {
				differ = append(differ, id)
			}
		}
		if len(differ) > 0 {
			bad = append(bad, fmt.Sprintf("stack %s does not run the updated template: %s differ", s.Name, strings.Join(differ, ", ")))
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("the update lost or replaced:\n  %s", strings.Join(bad, "\n  "))
	}
	return fmt.Sprintf("%s the same, %s and %s still there, the stacks run the new templates",
		plural(count, "stateful resource"), plural(records, "record"), plural(messages, "DLQ message")), nil
}

func (r *rehearsal) destroy(ctx context.Context) (string, error) {
	if _, err := r.cdkOrMake(ctx, "destroy", "destroy", "v2"); err != nil {
		return "", err
	}
	for _, s := range r.v2 {
		d, err := r.aws.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(s.Name)})
		switch {
		case err != nil && strings.Contains(err.Error(), "does not exist"):
		case err != nil:
			return "", fmt.Errorf("stack %s after destroy: %w", s.Name, err)
		case len(d.Stacks) > 0 && d.Stacks[0].StackStatus != cfntypes.StackStatusDeleteComplete:
			return "", fmt.Errorf("stack %s is %s after destroy", s.Name, d.Stacks[0].StackStatus)
		}
	}
	return stackNames(r.v2) + " deleted", nil
}

// leftovers checks what destroy left against the templates' deletion policies: every
// retained stateful resource is still there, every other one is gone.
func (r *rehearsal) leftovers(ctx context.Context) (string, error) {
	keptBy, goneBy := map[string]int{}, map[string]int{}
	var bad []string
	for _, s := range r.v2 {
		for _, id := range sortedKeys(s.Res) {
			t := s.Res[id]
			if _, ok := stateful[t.Type]; !ok {
				continue
			}
			d, ok := r.physical[s.Name][id]
			if !ok {
				continue
			}
			there, err := r.aws.exists(ctx, t.Type, d.Physical)
			if err != nil {
				return "", fmt.Errorf("%s %s: %w", s.Name, id, err)
			}
			switch want := retained(t); {
			case there && want:
				keptBy[kind(t.Type)]++
			case !there && !want:
				goneBy[kind(t.Type)]++
			case want:
				bad = append(bad, fmt.Sprintf("%s %s (%s) has DeletionPolicy %s but is gone", s.Name, id, t.Type, t.DeletionPolicy))
			default:
				bad = append(bad, fmt.Sprintf("%s %s (%s) is still there (%s) though its stack deletes it", s.Name, id, t.Type, d.Physical))
			}
		}
	}
	if len(bad) > 0 {
		return "", fmt.Errorf("destroy left the wrong things:\n  %s", strings.Join(bad, "\n  "))
	}
	return "kept " + counts(keptBy) + "; deleted " + counts(goneBy), nil
}

// counts is "1 table, 2 queues" from kind -> count.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "nothing"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, plural(m[k], k))
	}
	return strings.Join(parts, ", ")
}

// plural is "1 queue", "2 queues".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
