package local

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// stackPlan is what Start will do with one stack, decided before anything starts: which
// pipelines run, where each of their functions' programs comes from, and what is not run
// and why.
type stackPlan struct {
	ref       cfn.StackRef
	t         *standin.Template
	pipelines []standin.Pipeline // those that run
	code      map[string]code    // by function logical id, for the functions of pipelines
	notRun    []string
}

// code is where a function's program comes from: its Go source, which the kit builds for
// this machine, or a bootstrap executable in the cloud assembly, which it runs as it is.
type code struct {
	src       *cfn.Source
	bootstrap string
}

// plan decides what runs of the stack: every pipeline whose consumer the kit can run, with
// its dispatcher when that can run too.
func plan(ref cfn.StackRef, t *standin.Template, sources map[string]cfn.Source) (*stackPlan, error) {
	ps, err := t.Pipelines()
	if err != nil {
		return nil, err
	}
	sp := &stackPlan{ref: ref, t: t, code: map[string]code{}, notRun: t.NotRun()}
	for _, p := range ps {
		c, why, err := codeFor(ref, t, sources, p.Consumer)
		if err != nil {
			return nil, err
		}
		if why != "" {
			sp.notRun = append(sp.notRun, fmt.Sprintf("not run locally: function %s, mapped to %s: %s; the queue is created", p.Consumer, standin.MappingSource(p.Mapping), why))
			if p.Dispatcher != "" {
				sp.notRun = append(sp.notRun, fmt.Sprintf("not run locally: function %s, which sends to queue %s on its schedule: the queue's consumer is not run", p.Dispatcher, p.Queue))
			}
			continue
		}
		sp.code[p.Consumer] = c
		if p.DLQ == "" {
			t.NotApplied = append(t.NotApplied, "queue "+p.Queue+" has no redrive policy: a record that keeps failing is received again "+
				"until the queue's retention period ends, as in AWS, and no dead-letter queue shows it")
		}
		if p.Dispatcher != "" {
			c, why, err := codeFor(ref, t, sources, p.Dispatcher)
			if err != nil {
				return nil, err
			}
			if why != "" {
				sp.notRun = append(sp.notRun, fmt.Sprintf("not run locally: function %s, which sends to queue %s on its schedule: %s", p.Dispatcher, p.Queue, why))
				p.Dispatcher = ""
			} else {
				sp.code[p.Dispatcher] = c
			}
		}
		sp.pipelines = append(sp.pipelines, p)
	}
	for _, id := range slices.Sorted(maps.Keys(t.Functions)) {
		if !slices.ContainsFunc(ps, func(p standin.Pipeline) bool { return id == p.Consumer || id == p.Dispatcher }) {
			sp.notRun = append(sp.notRun, "not run locally: function "+id+", not a pipeline's consumer or dispatcher")
		}
	}
	return sp, nil
}

// codeFor finds the program of function id: the source the constructs recorded, else a
// bootstrap executable for this machine in its code asset. why says why it cannot run.
func codeFor(ref cfn.StackRef, t *standin.Template, sources map[string]cfn.Source, id string) (c code, why string, err error) {
	if src, ok := sources[id]; ok {
		return code{src: &src}, "", nil
	}
	f := t.Functions[id]
	switch {
	case f.Image:
		why = "it is a container image function; the local kit runs Go source the constructs recorded and bootstrap executables"
	case f.Runtime != "" && !strings.HasPrefix(f.Runtime, "provided"):
		why = fmt.Sprintf("its runtime is %s; the local kit runs Go source the constructs recorded and bootstrap executables "+
			"(runtime provided.al2023 or provided.al2: Go, Rust)", f.Runtime)
	case f.Asset == "":
		why = "its code is not an asset of the cloud assembly (inline code, or an S3 object the app names): there is nothing here to run"
	default:
		path := filepath.Join(ref.Dir, f.Asset, "bootstrap")
		if why = checkBootstrap(path); why == "" {
			return code{bootstrap: path}, "", nil
		}
	}
	if _, ours := f.Env["IDEMPOTENCY_TABLE_NAME"]; ours { // a consumer of these constructs, synthesized by an older version
		return code{}, "", fmt.Errorf("function %s: the cloud assembly does not say where its source is; "+
			"synthesize it again (`cdk synth`) with this version of the constructs, which records it", id)
	}
	return code{}, why, nil
}

// lambdaArch names a Go architecture as Lambda does.
var lambdaArch = map[string]string{"amd64": "x86_64", "arm64": "arm64"}

// checkBootstrap says why the executable at path cannot run on this machine, "" when it can.
func checkBootstrap(path string) string {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "its code asset has no file named bootstrap, which Lambda's provided runtimes run"
	}
	if err != nil {
		return err.Error()
	}
	f, err := elf.Open(path)
	if err != nil {
		return "its bootstrap is not a Linux executable (ELF): the local kit runs those only"
	}
	defer f.Close()
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	here := runtime.GOOS + "/" + runtime.GOARCH
	switch {
	case arch == "":
		return fmt.Sprintf("its bootstrap is built for %v, not a Lambda architecture", f.Machine)
	case runtime.GOOS != "linux":
		return fmt.Sprintf("its bootstrap is a Linux executable and this machine is %s: the local kit runs a bootstrap as it is only on Linux", here)
	case arch != runtime.GOARCH:
		return fmt.Sprintf("its bootstrap is built for %s and this machine is %s (%s): give the function Architecture %s "+
			"(for a GoFunction, awslambda.Architecture_%s()) to run it here", lambdaArch[arch], lambdaArch[runtime.GOARCH], here,
			lambdaArch[runtime.GOARCH], strings.ToUpper(lambdaArch[runtime.GOARCH]))
	case info.Mode()&0o111 == 0:
		return "its bootstrap is not executable (no x permission)"
	}
	return ""
}

// checkEnv resolves, against a plan of each stack, with the overrides and parameters given,
// every running function's environment and every queue's attributes, and reports all it
// cannot resolve at once.
func checkEnv(plans []*stackPlan, overrides map[string]string) error {
	deps := make([]*standin.Deployment, len(plans))
	for i, sp := range plans {
		deps[i] = standin.Planned(sp.t, stackSuffix(sp.ref))
		deps[i].StackName, deps[i].Overrides = sp.ref.StackName, overrides
		deps[i].Import = func(name string) (any, error) { return importValue(deps, name) }
	}
	var lines []string
	say := func(stack string, err error) {
		for _, l := range strings.Split(err.Error(), "\n") {
			lines = append(lines, "  - stack "+stack+", "+l)
		}
	}
	for i, sp := range plans {
		for _, id := range slices.Sorted(maps.Keys(sp.t.Queues)) {
			if _, err := deps[i].QueueAttributes(sp.t.Queues[id]); err != nil {
				say(sp.ref.DisplayName, err)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(sp.code)) {
			if _, err := deps[i].Env(id); err != nil {
				say(sp.ref.DisplayName, err) // one line per variable
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("local: %d values the kit cannot resolve:\n%s", len(lines), strings.Join(lines, "\n"))
}

// importValue is the value of the export name among deps' stacks (Fn::ImportValue).
func importValue(deps []*standin.Deployment, name string) (any, error) {
	for _, d := range deps {
		for _, out := range slices.Sorted(maps.Keys(d.Template.Exports)) {
			if export, err := d.Resolve(d.Template.Exports[out]); err == nil && export == name {
				return d.Resolve(d.Template.Outputs[out])
			}
		}
	}
	return nil, standin.UnresolvedImport(name)
}

// checkNames refuses Options.Env keys that name no function, and Options.Parameters that
// name no parameter, of the stacks.
func checkNames(plans []*stackPlan, opts Options) error {
	fns, params := map[string]bool{}, map[string]bool{}
	for _, sp := range plans {
		for id := range sp.t.Functions {
			fns[id] = true
		}
		for name := range sp.t.Parameters {
			params[name] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Env)) {
		if fn, _, ok := strings.Cut(k, "."); ok && !fns[fn] {
			return fmt.Errorf("local: Options.Env[%q]: no function %s in the stacks; name one by its logical id (%s)", k, fn, strings.Join(slices.Sorted(maps.Keys(fns)), ", "))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Parameters)) {
		if !params[k] {
			have := slices.Sorted(maps.Keys(params))
			return fmt.Errorf("local: Options.Parameters[%q]: no stack has a parameter %s; they have %s", k, k, cmp.Or(strings.Join(have, ", "), "none"))
		}
	}
	return nil
}

func stackSuffix(ref cfn.StackRef) string {
	return strings.Trim(nameSafe.ReplaceAllString(ref.DisplayName, "-"), "-")
}
