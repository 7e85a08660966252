package local

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// The start's first stage, read: the assembly's manifest, each stack's template (a nested
// stack's too) and the sources of its functions, with the parameters given. Nothing is
// resolved across stacks yet (resolve.go) and nothing planned (plan.go).

// assembly is what read returns: the stacks of the run in order (each top-level stack
// followed by its nested ones), each with its template and its functions' sources, and the
// stand-ins made for the queues a stack imports (Kit.StandIns).
type assembly struct {
	refs      []cfn.StackRef
	templates []*standin.Template
	sources   []map[string]cfn.Source
	standIns  []string
	// planned is each stack as deployed here will be, once resolve linked the stacks: names,
	// URLs and ARNs of the shape the backends give, with the other stacks' exports and the
	// nested stacks' outputs (resolve.go).
	planned []*standin.Deployment
}

// stacksOf is the stacks of the assembly that Options.Stacks names (every one by default).
func stacksOf(opts Options) ([]cfn.StackRef, error) {
	all, err := cfn.Stacks(opts.Assembly)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local: %s is not a cloud assembly (no manifest.json): run `cdk synth` (or `cdk synth -o DIR`) first", opts.Assembly)
	}
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	refs, err := standin.PickStacks(all, opts.Stacks)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return refs, nil
}

// read reads the stacks opts picks, each stack's template and the sources of its functions,
// with the parameters given, and makes a stand-in for each queue a stack imports. Each nested
// stack whose template the assembly holds (CDK's NestedStack) becomes a stack of the run,
// right after the stack it is nested in.
func read(opts Options) (*assembly, error) {
	refs, err := stacksOf(opts)
	if err != nil {
		return nil, err
	}
	a := &assembly{}
	for i := 0; i < len(refs); i++ { // refs grows by the nested stacks found
		ref := refs[i]
		fail := func(err error) (*assembly, error) {
			return nil, fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
		}
		t, err := standin.LoadTemplate(filepath.Join(ref.Dir, ref.TemplateFile))
		if err != nil {
			return fail(err)
		}
		own := ownsPath(ref, t.Nested)
		src, err := cfn.ReadSources(ref.Dir, ref.Artifact(), own)
		if err != nil {
			return fail(err)
		}
		a.templates, a.sources = append(a.templates, t), append(a.sources, src)
		for j, n := range t.Nested {
			name := n.Path[strings.LastIndex(n.Path, "/")+1:]
			refs = slices.Insert(refs, i+1+j, cfn.StackRef{ID: ref.ID + "/" + n.LogicalID, DisplayName: ref.DisplayName + "/" + name,
				StackName: ref.StackName + "-" + name, Dir: ref.Dir, TemplateFile: n.TemplateFile, Environment: ref.Environment,
				Parent: ref.ID, ParentResource: n.LogicalID, Path: n.Path})
		}
		if ref.Parent != "" {
			continue // its parameters are the parent's values (nestedParameters); it imports no queue of ours
		}
		if err := t.UseParameters(opts.Parameters); err != nil { // an imported queue's ARN may be one
			return fail(err)
		}
		existing, err := cfn.ReadExistingQueues(ref.Dir, ref.ID, own)
		if err != nil {
			return fail(err)
		}
		for _, mapping := range slices.Sorted(maps.Keys(existing)) {
			notes, err := t.StandInQueue(mapping, existing[mapping])
			if err != nil {
				return fail(err)
			}
			for _, n := range notes {
				a.standIns = append(a.standIns, ref.DisplayName+": "+n)
			}
		}
	}
	a.refs = refs
	return a, nil
}

// ownsPath reports the construct paths of ref's own resources: those under its construct
// path, not under one of its nested stacks' (a nested stack's metadata is in its top
// stack's, and its logical ids may be its parent's too).
func ownsPath(ref cfn.StackRef, nested []standin.NestedStack) func(path string) bool {
	return func(path string) bool {
		if ref.Path != "" && !strings.HasPrefix(path, "/"+ref.Path+"/") {
			return false
		}
		return !slices.ContainsFunc(nested, func(n standin.NestedStack) bool { return strings.HasPrefix(path, "/"+n.Path+"/") })
	}
}
