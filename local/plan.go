package local

import (
	"archive/zip"
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/contract"
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
	planned   *standin.Deployment // the stack as the resolve stage planned it (resolve.go)
	// visibility is the visibility timeout each running pipeline's queue gets here, by its
	// mapping's logical id (Options.VisibilityTimeout; 0 keeps the template's): create sets
	// it on the kit's queues, an attached run's poller asks for it.
	visibility map[string]time.Duration
}

// code is where a function's program comes from: its Go source, which the kit builds for
// this machine (src, the constructs' record; rebuilt, an executable for another machine
// built again), or an executable in the cloud assembly, which it runs as it is: a file of
// an asset directory (bootstrap), or a member of a zip asset (zip, member), which the kit
// extracts first.
type code struct {
	src         *cfn.Source
	rebuilt     *rebuild
	bootstrap   string
	zip, member string
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
		if why, ok := t.Applied[id]; ok {
			t.NotApplied = append(t.NotApplied, "function "+id+": "+why)
			continue
		}
		if !slices.ContainsFunc(ps, func(p standin.Pipeline) bool { return id == p.Consumer || id == p.Dispatcher }) {
			sp.notRun = append(sp.notRun, "not run locally: function "+id+", not a pipeline's consumer or dispatcher")
		}
	}
	return sp, nil
}

// codeFor finds the program of function id: the source the constructs recorded, else the
// executable in its code asset (bootstrap; for go1.x the handler's name), as it is when it
// runs on this machine, else built for this machine from the main package it records when
// that package is in the app's module. why says why it cannot run.
func codeFor(ref cfn.StackRef, t *standin.Template, sources map[string]cfn.Source, id string) (c code, why string, err error) {
	if src, ok := sources[id]; ok {
		return code{src: &src}, "", nil
	}
	f := t.Functions[id]
	exe := "bootstrap"
	switch {
	case f.Image:
		why = "it is a container image function; the local kit runs Go source the constructs recorded and bootstrap executables"
	case f.Runtime == "go1.x":
		exe = cmp.Or(f.Handler, "main")
	case f.Runtime != "" && !strings.HasPrefix(f.Runtime, "provided"):
		why = fmt.Sprintf("its runtime is %s; the local kit runs Go source the constructs recorded and executables "+
			"(runtime provided.al2023 or provided.al2: Go, Rust; go1.x)", f.Runtime)
	}
	if why == "" && f.Asset == "" {
		why = "its code is not an asset of the cloud assembly (inline code, or an S3 object the app names): there is nothing here to run"
	}
	if why == "" {
		if c, why = assetCode(ref, f.Asset, exe); why == "" {
			if c.rebuilt != nil {
				t.NotApplied = append(t.NotApplied, "function "+id+": "+c.rebuilt.say())
			}
			if f.Runtime == "go1.x" {
				t.NotApplied = append(t.NotApplied, "function "+id+": runtime go1.x, which Lambda no longer accepts for new functions "+
					"(creation disabled since 2024-02-08): run here as it is; move it to provided.al2023 with the binary named bootstrap")
			}
			return c, "", nil
		}
	}
	if _, ours := f.Env[contract.EnvTableName]; ours { // a consumer of these constructs, synthesized by an older version
		return code{}, "", fmt.Errorf("function %s: the cloud assembly does not say where its source is; "+
			"synthesize it again (`cdk synth`) with this version of the constructs, which records it", id)
	}
	return code{}, why, nil
}

// assetCode is the executable exe of a code asset (a directory, or a zip file CDK copied
// as it is): as it is when it runs here, else its main package built for this machine.
func assetCode(ref cfn.StackRef, asset, exe string) (code, string) {
	path := filepath.Join(ref.Dir, asset)
	c := code{bootstrap: filepath.Join(path, exe)}
	missing := "its code asset has no file named bootstrap, which Lambda's provided runtimes run"
	if exe != "bootstrap" {
		missing = fmt.Sprintf("its code asset has no file named %s, which its handler names", exe)
	}
	var b []byte
	var mode fs.FileMode
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return code{}, missing
	case err != nil:
		return code{}, err.Error()
	case info.IsDir():
		info, err := os.Stat(c.bootstrap)
		if errors.Is(err, fs.ErrNotExist) {
			if src, _ := filepath.Glob(filepath.Join(path, "*.go")); len(src) > 0 && exe == "bootstrap" {
				return code{}, sourceOnly(src)
			}
			return code{}, missing
		}
		if err == nil {
			mode = info.Mode()
			b, err = os.ReadFile(c.bootstrap)
		}
		if err != nil {
			return code{}, err.Error()
		}
	default: // a zip file
		c = code{zip: path, member: exe}
		if b, mode, err = zipMember(path, exe); err != nil {
			return code{}, err.Error()
		}
	}
	why, arch := checkExecutable(exe, b, mode)
	if arch == "" || why == "" {
		return c, why
	}
	return buildFor(ref, b, arch, why)
}

// sourceOnly says why a code asset holding Go source (files) and no bootstrap cannot run:
// Lambda would not run it either, and the build that makes the bootstrap.
func sourceOnly(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return fmt.Sprintf("its code asset holds Go source (%s) and no bootstrap, which Lambda's provided runtimes run, so Lambda would not run it either: "+
		"build it before cdk synth in the directory Code.fromAsset names, with `GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -tags lambda.norpc -o bootstrap .` "+
		"(GOARCH=arm64 for an arm64 function), or make it a GoFunction, whose bundling builds it", strings.Join(names, ", "))
}

// archFix is the way out for an executable built for another architecture than this machine's.
func archFix() string {
	here := lambdaArch[runtime.GOARCH]
	return fmt.Sprintf("give the function Architecture %s (for a GoFunction, awslambda.Architecture_%s()) to run it here", here, strings.ToUpper(here))
}

// zipMember reads the file name of the zip file at path, and its mode.
func zipMember(path, name string) ([]byte, fs.FileMode, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, 0, fmt.Errorf("its code asset %s is not a zip file Lambda would take: %v", filepath.Base(path), err)
	}
	defer z.Close()
	f, err := z.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("its zip file has no file named %s at its top, which Lambda's runtime runs", name)
	}
	defer f.Close()
	info, _ := f.Stat()
	b, err := io.ReadAll(f)
	return b, info.Mode(), err
}

// modfilePath is the module path a go.mod declares.
func modfilePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// lambdaArch names a Go architecture as Lambda does.
var lambdaArch = map[string]string{"amd64": "x86_64", "arm64": "arm64"}

// checkExecutable says why the executable named name, b (of file mode mode), cannot run on
// this machine, "" when it can; arch is the Go architecture of a Linux executable for
// another one.
func checkExecutable(name string, b []byte, mode fs.FileMode) (why, arch string) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return "its " + name + " is not a Linux executable (ELF): the local kit runs those only", ""
	}
	defer f.Close()
	arch = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	here := runtime.GOOS + "/" + runtime.GOARCH
	switch {
	case arch == "":
		return fmt.Sprintf("its %s is built for %v, not a Lambda architecture", name, f.Machine), ""
	case runtime.GOOS != "linux":
		return fmt.Sprintf("its %s is a Linux executable and this machine is %s: the local kit runs one as it is only on Linux", name, here), arch
	case arch != runtime.GOARCH:
		return fmt.Sprintf("its %s is built for %s and this machine is %s (%s)", name, lambdaArch[arch], lambdaArch[runtime.GOARCH], here), arch
	case mode&0o111 == 0:
		return "its " + name + " is not executable (no x permission)", ""
	}
	return "", ""
}

// checkEnv resolves, against a plan of each stack, with the overrides and parameters given,
// every queue attribute and every variable of every function that would run, and says what
// has no local value, all at once, before anything starts. A function with such a variable
// does not run: it is listed (notRun, by stack display name) with each variable and how to
// give it a value, and the rest runs. With nothing left to run, or a queue attribute
// without a value, the run is refused with every line.
func checkEnv(plans []*stackPlan, overrides map[string]string) (notRun []string, err error) {
	deps := make([]*standin.Deployment, len(plans))
	for i, sp := range plans {
		deps[i] = sp.planned
		deps[i].Overrides = overrides
	}
	var lines []string
	say := func(stack string, err error) {
		for _, l := range strings.Split(err.Error(), "\n") {
			lines = append(lines, "  - stack "+stack+", "+l)
		}
	}
	fatal := false
	unresolved := make([]map[string]error, len(plans)) // by function logical id
	for i, sp := range plans {
		for _, id := range slices.Sorted(maps.Keys(sp.t.Queues)) {
			if _, err := deps[i].QueueAttributes(sp.t.Queues[id]); err != nil {
				say(sp.ref.DisplayName, err)
				fatal = true
			}
		}
		unresolved[i] = map[string]error{}
		for _, id := range slices.Sorted(maps.Keys(sp.code)) {
			if _, err := deps[i].Env(id); err != nil {
				say(sp.ref.DisplayName, err) // one line per variable
				unresolved[i][id] = err
			}
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	running := 0
	for i, sp := range plans {
		for _, p := range sp.pipelines {
			if unresolved[i][p.Consumer] == nil && !p.Mapping.Disabled {
				running++
			}
		}
	}
	if fatal || running == 0 {
		return nil, fmt.Errorf("local: %d values the kit cannot resolve:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for i, sp := range plans {
		if len(unresolved[i]) == 0 {
			continue
		}
		because := func(id string) string {
			return strings.ReplaceAll(strings.TrimPrefix(unresolved[i][id].Error(), "function "+id+": "), "\nfunction "+id+": ", "; ")
		}
		var keep []standin.Pipeline
		for _, p := range sp.pipelines {
			if unresolved[i][p.Consumer] != nil {
				notRun = append(notRun, fmt.Sprintf("%s: not run locally: function %s, mapped to %s: %s; the queue is created",
					sp.ref.DisplayName, p.Consumer, standin.MappingSource(p.Mapping), because(p.Consumer)))
				delete(sp.code, p.Consumer)
				if p.Dispatcher == "" {
					continue
				}
				notRun = append(notRun, fmt.Sprintf("%s: not run locally: function %s, which sends to queue %s on its schedule: the queue's consumer is not run", sp.ref.DisplayName, p.Dispatcher, p.Queue))
				delete(sp.code, p.Dispatcher)
				continue
			}
			if p.Dispatcher != "" && unresolved[i][p.Dispatcher] != nil {
				notRun = append(notRun, fmt.Sprintf("%s: not run locally: function %s, which sends to queue %s on its schedule: %s",
					sp.ref.DisplayName, p.Dispatcher, p.Queue, because(p.Dispatcher)))
				delete(sp.code, p.Dispatcher)
				p.Dispatcher = ""
			}
			keep = append(keep, p)
		}
		sp.pipelines = keep
	}
	return notRun, nil
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
		if !params[k] && !strings.HasPrefix(k, "/") { // "/app/x": a Systems Manager parameter (ssmValues)
			have := slices.Sorted(maps.Keys(params))
			return fmt.Errorf("local: Options.Parameters[%q]: no stack has a parameter %s; they have %s", k, k, cmp.Or(strings.Join(have, ", "), "none"))
		}
	}
	return nil
}

// planAll is the start's third stage: it plans each stack of a (what runs, and what cannot
// with why: Kit.NotRun), and refuses an assembly in which no pipeline would run.
func planAll(a *assembly, opts Options) (plans []*stackPlan, notRun []string, err error) {
	refs := a.refs
	plans = make([]*stackPlan, len(refs))
	var names []string
	running := 0
	for i, t := range a.templates {
		if plans[i], err = plan(refs[i], t, a.sources[i]); err != nil {
			return nil, nil, fmt.Errorf("local: stack %s: %w", refs[i].DisplayName, err)
		}
		plans[i].planned = a.planned[i]
		plans[i].visibility = map[string]time.Duration{}
		for _, p := range plans[i].pipelines {
			plans[i].visibility[p.Mapping.LogicalID] = visibility(opts.VisibilityTimeout, t, p)
			if !p.Mapping.Disabled {
				running++
			}
		}
		names = append(names, refs[i].DisplayName)
		for _, n := range plans[i].notRun {
			notRun = append(notRun, refs[i].DisplayName+": "+n)
		}
	}
	if running == 0 {
		why := ""
		if len(notRun) > 0 {
			why = ":\n  - " + strings.Join(notRun, "\n  - ")
		}
		return nil, nil, fmt.Errorf("local: no pipeline to run: none of the stacks %s has an SQS event source mapping onto a function the kit can run%s", strings.Join(names, ", "), why)
	}
	return plans, notRun, nil
}

// visibility is the visibility timeout a pipeline's queue gets here: given (Options.VisibilityTimeout),
// else the consumer's timeout and the batching window a record may wait through first, when
// the template's is longer; 0 keeps the template's.
func visibility(given time.Duration, t *standin.Template, p standin.Pipeline) time.Duration {
	visibility := given
	held := time.Duration(t.Functions[p.Consumer].Timeout+p.Mapping.WindowSeconds) * time.Second
	if visibility == 0 && t.Queues[p.Queue].VisibilityTimeout() > held {
		visibility = held
	}
	return visibility
}
