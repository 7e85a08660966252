package main

import (
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
	physical            map[string]map[string]deployed // stack -> logical id -> what was deployed
	passed              bool
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
		{"seed", r.seed},
		{"operate --stack", func(ctx context.Context) (string, error) { return r.operate(ctx, false) }},
		{"operate --outputs", func(ctx context.Context) (string, error) { return r.operate(ctx, true) }},
		{"update synth", r.updateSynth},
		{"update diff", func(ctx context.Context) (string, error) { return r.diff(ctx, "v2") }},
		{"update change set", r.changeSet},
		{"update deploy", func(ctx context.Context) (string, error) { return r.deploy(ctx, "v2", r.v2) }},
		{"update kept", r.kept},
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
			fmt.Fprintf(r.out, "%-18s %-5s %7s  %v\n", s.name, "FAIL", took, err)
			return err
		}
		fmt.Fprintf(r.out, "%-18s %-5s %7s  %s\n", s.name, "ok", took, detail)
	}
	r.passed = true
	return nil
}

// close stops the emulator, unless --keep asked to leave it for a look around (not after
// Ctrl-C: that stops everything).
func (r *rehearsal) close(interrupted bool) {
	if r.opts.keep && !interrupted {
		return
	}
	r.emu.stop()
	r.emu = nil
}

// leftBehind says what is where after the run.
func (r *rehearsal) leftBehind() string {
	where := "logs, assemblies and outputs in " + rel(r.work)
	if r.work == "" {
		return "nothing was started"
	}
	if r.emu != nil {
		return fmt.Sprintf("fakecloud still runs at %s (process %d; stop it with kill %d); %s",
			r.emu.url, r.emu.proc.PID(), r.emu.proc.PID(), where)
	}
	return "nothing is left running (fakecloud stopped; its state was in memory, so every stack went with it); " + where
}

// tools finds the CDK CLI and fakecloud and builds pipelinectl.
func (r *rehearsal) tools(ctx context.Context) (string, error) {
	var err error
	if r.work, err = filepath.Abs(r.opts.work); err != nil {
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
	if r.cdk, err = findTool("cdk", r.opts.cdk, filepath.Join("node_modules", ".bin", "cdk")); err != nil {
		return "", errors.New("the CDK CLI not found: give --cdk PATH, or install it (npm install aws-cdk; make synth-tools does it here)")
	}
	if r.fakecloud, err = findTool("fakecloud", r.opts.fakecloud); err != nil {
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

// markerVar is in the environment of every process a run starts, the emulator too, with the
// run's work directory: grep -l REHEARSE_WORK=DIR /proc/*/environ finds them (the tests do).
const markerVar = "REHEARSE_WORK"

// offlineEnv is the environment every command runs with: nothing of the caller's AWS
// configuration (no credentials, profile or endpoint can reach a real account), no instance
// metadata, no CDK version check.
func offlineEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "CDK_DEFAULT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "CDK_DISABLE_VERSION_CHECK=1")
}

// synth writes the assembly dir (v1 or v2) from the app, or copies the given assembly, and
// names its schedules for the emulator.
func (r *rehearsal) synth(ctx context.Context, dir, assembly string, extra []string, into *[]stack) (string, error) {
	out := filepath.Join(r.work, dir)
	from := ""
	if dir == "v1" && r.opts.from != "" {
		var err error
		if from, err = r.checkout(ctx); err != nil {
			return "", err
		}
	}
	if from != "" {
		// The app as it was at --from: what is deployed today, which the update must upgrade.
		args := []string{"synth", "--quiet", "-o", out}
		if r.opts.app != "" {
			args = append(args, "--app", r.opts.app)
		}
		for _, kv := range r.opts.context {
			args = append(args, "-c", kv)
		}
		if _, err := r.commandIn(ctx, from, "synth-"+dir, nil, r.cdk, args...); err != nil {
			return "", err
		}
	} else if r.opts.viaMake && dir == "v1" {
		// The README's line: make synth writes cdk.out (and its reviewer's report).
		if _, err := r.command(ctx, "synth-"+dir, nil, "make", "-s", "--no-print-directory", "synth"); err != nil {
			return "", err
		}
		assembly = "cdk.out"
	}
	if from != "" {
		// synthesized above
	} else if assembly != "" {
		if err := os.CopyFS(out, os.DirFS(assembly)); err != nil {
			return "", fmt.Errorf("copying the assembly %s: %w", assembly, err)
		}
	} else {
		args := []string{"synth", "--quiet", "-o", out}
		if r.opts.app != "" {
			args = append(args, "--app", r.opts.app)
		}
		for _, kv := range append(append([]string{}, r.opts.context...), extra...) {
			args = append(args, "-c", kv)
		}
		if _, err := r.command(ctx, "synth-"+dir, nil, r.cdk, args...); err != nil {
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
	if from != "" {
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
	return target, nil
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
	sub, err := filepath.Rel(toplevel, r.opts.dir)
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
		status := string(d.Stacks[0].StackStatus)
		if status != "CREATE_COMPLETE" && status != "UPDATE_COMPLETE" {
			return "", fmt.Errorf("stack %s is %s after the deploy: %s", s.Name, status, aws.ToString(d.Stacks[0].StackStatusReason))
		}
		res, err := r.aws.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(s.Name)})
		if err != nil {
			return "", err
		}
		phys[s.Name] = map[string]deployed{}
		for _, x := range res.StackResources {
			phys[s.Name][aws.ToString(x.LogicalResourceId)] = deployed{Type: aws.ToString(x.ResourceType), Physical: aws.ToString(x.PhysicalResourceId)}
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
	for _, s := range r.v2 {
		cs, err := r.aws.cfn.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String(s.Name), ChangeSetName: aws.String(name)})
		if err != nil {
			// No change set: the CLI found nothing to change in this stack.
			continue
		}
		for _, c := range cs.Changes {
			rc := c.ResourceChange
			if rc == nil {
				continue
			}
			n++
			if _, ok := stateful[aws.ToString(rc.ResourceType)]; !ok {
				continue
			}
			if rc.Action == "Remove" || rc.Replacement == "True" {
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

// kept checks, after the update, that every stateful resource is the one deployed before
// (same physical id), that the records and DLQ messages seeded before are there, and that the
// stacks run the new templates.
func (r *rehearsal) kept(ctx context.Context) (string, error) {
	before := r.physical
	var bad []string
	count := 0
	for _, s := range r.v1 {
		res, err := r.aws.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(s.Name)})
		if err != nil {
			return "", err
		}
		now := map[string]string{}
		for _, x := range res.StackResources {
			now[aws.ToString(x.LogicalResourceId)] = aws.ToString(x.PhysicalResourceId)
		}
		for _, id := range sortedKeys(before[s.Name]) {
			d := before[s.Name][id]
			if _, ok := stateful[d.Type]; !ok {
				continue
			}
			count++
			if now[id] != d.Physical {
				bad = append(bad, fmt.Sprintf("%s %s (%s) was %s, is now %q", s.Name, id, d.Type, d.Physical, now[id]))
			}
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
		if err == nil && len(d.Stacks) > 0 && d.Stacks[0].StackStatus != "DELETE_COMPLETE" {
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
