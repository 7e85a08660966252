package local

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// The start's second stage, resolve: what a stack's template takes from another stack's,
// planned before anything exists (the names and ARNs the deployments will give): the names
// two stacks both give, a nested stack's parameters from its parent, a queue one stack
// imports from another. Each stack's planned deployment is made once here (again only for a
// stack whose template links a queue of another, whose names that changes), and every value
// is resolved through it (standin.Deployment.Resolve, cfn.Resolver). The same values are
// asked again of the real deployments once created (create.go): nestedParameters,
// nestedOutput and importValue serve both.

// resolve links a's stacks to each other, in place, and plans each: clashes first (the
// names depend on them); then each stack, parents before their nested stacks, its
// parameters from its parent's planned deployment (what plan reads of a template, a
// mapping's batch size from a parameter, has its value) and a queue its parent passes it
// linked, then planned; then the queues one stack imports from another's exports.
func resolve(a *assembly) error {
	clashes(a.refs, a.templates)
	p := newPlanner(a.refs, a.templates)
	for i := range a.refs {
		if err := p.fromParent(i); err != nil {
			return err
		}
		p.plan(i)
	}
	for i := range a.refs {
		if err := p.linkImports(i); err != nil {
			return err
		}
	}
	a.planned = p.deps
	return nil
}

// planner holds each stack's planned deployment (deps, by the index of refs) while the
// resolve stage links the stacks.
type planner struct {
	refs      []cfn.StackRef
	templates []*standin.Template
	deps      []*standin.Deployment
}

func newPlanner(refs []cfn.StackRef, templates []*standin.Template) *planner {
	return &planner{refs: refs, templates: templates, deps: make([]*standin.Deployment, len(refs))}
}

// plan makes stack i's planned deployment (standin.Planned), resolving across stacks as the
// real ones do in create: an Fn::ImportValue from the other stacks' exports, a nested
// stack's outputs from its deployment.
func (p *planner) plan(i int) {
	ref := p.refs[i]
	d := standin.Planned(p.templates[i], stackSuffix(ref))
	d.StackName = ref.StackName
	d.Import = func(name string) (any, error) { return importValue(p.deps, name) }
	d.NestedOutput = func(res, out string) (any, error) { return nestedOutput(p.byID, ref.ID, res, out) }
	p.deps[i] = d
}

// byID is the planned deployment of the stack of id, nil before it is planned.
func (p *planner) byID(id string) *standin.Deployment {
	if i := slices.IndexFunc(p.refs, func(r cfn.StackRef) bool { return r.ID == id }); i >= 0 {
		return p.deps[i]
	}
	return nil
}

// clashes marks, in each template, the physical names it gives (a QueueName, TableName,
// TopicName or BucketName) that another stack of the run gives too, as two stages of one app
// do: those are suffixed with the stack's name locally, and the stack's Ignored says so.
// Every other given name is kept, so that a function that has it as a plain string finds it.
// A name is compared across kinds too (a queue and a topic of one name are suffixed both):
// rarer than a clash, and only less faithful, never wrong.
func clashes(refs []cfn.StackRef, templates []*standin.Template) {
	by := map[string][]int{}
	for i, t := range templates {
		for name := range t.GivenNames() {
			by[name] = append(by[name], i)
		}
	}
	for i, t := range templates {
		t.Clashes = map[string]bool{}
		for name, id := range t.GivenNames() {
			if len(by[name]) < 2 {
				continue
			}
			t.Clashes[name] = true
			var others []string
			for _, j := range by[name] {
				if j != i {
					others = append(others, refs[j].DisplayName)
				}
			}
			here := strings.TrimSuffix(name, ".fifo") + "-" + stackSuffix(refs[i])
			if strings.HasSuffix(name, ".fifo") {
				here += ".fifo"
			}
			t.NotApplied = append(t.NotApplied, fmt.Sprintf("%s's name %s is given by stack %s too: here it is %s (a function that has the name as a plain string misses it)",
				id, name, strings.Join(others, ", "), here))
		}
	}
}

// nameSafe matches what may not be in a local resource name (a stack's name becomes the
// suffix of its queues' and tables' names).
var nameSafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// nestedParameters is the values of a nested stack's parameters: the expressions that its
// AWS::CloudFormation::Stack gives them in the parent's template, resolved with the parent's
// deployment. One the parent cannot resolve is left without a value, and a use of it says so.
func nestedParameters(ref cfn.StackRef, parent *standin.Deployment) map[string]string {
	vals := map[string]string{}
	i := slices.IndexFunc(parent.Template.Nested, func(n standin.NestedStack) bool { return n.LogicalID == ref.ParentResource })
	if i < 0 {
		return vals
	}
	for name, expr := range parent.Template.Nested[i].Parameters {
		v, err := parent.Resolve(expr)
		if err != nil {
			continue
		}
		switch x := v.(type) {
		case string:
			vals[name] = x
		case []any: // a list parameter: CloudFormation passes it comma-delimited
			var parts []string
			for _, e := range x {
				parts = append(parts, fmt.Sprint(e))
			}
			vals[name] = strings.Join(parts, ",")
		default:
			vals[name] = fmt.Sprint(x)
		}
	}
	return vals
}

// fromParent gives nested stack i its parameters from its parent's planned deployment
// (names and ARNs as the real one gives them; Kit.create gives them again from the real
// one), and links each of its mappings whose source is a queue its parent passes it.
func (p *planner) fromParent(i int) error {
	ref := p.refs[i]
	parent := p.byID(ref.Parent)
	if ref.Parent == "" || parent == nil {
		return nil
	}
	if err := p.templates[i].UseParameters(nestedParameters(ref, parent)); err != nil {
		return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
	}
	for _, m := range p.templates[i].Mappings {
		if err := p.linkParent(i, m, parent); err != nil {
			return err
		}
	}
	return nil
}

// nestedOutput is the value of output of the nested stack that the resource of the stack
// parent runs (Fn::GetAtt [resource, Outputs.output]); byID finds a stack's deployment.
func nestedOutput(byID func(string) *standin.Deployment, parent, resource, output string) (any, error) {
	d := byID(parent + "/" + resource)
	if d == nil {
		return nil, fmt.Errorf("Fn::GetAtt %s.Outputs.%s: the nested stack %s is not run", resource, output, resource)
	}
	v, ok := d.Template.Outputs[output]
	if !ok {
		return nil, fmt.Errorf("Fn::GetAtt %s.Outputs.%s: the nested stack has no output %s", resource, output, output)
	}
	return d.Resolve(v)
}

// linkImports makes each event source mapping of stack i whose source is a queue of another
// stack of the run, imported by name (Fn::ImportValue of that stack's export of the queue's
// ARN, as CDK writes a queue passed from one stack to another), read that stack's queue: one
// queue, created by both stacks' deployments under the name the exporting stack gives it.
// Stack i is planned again after a link (its names change).
func (p *planner) linkImports(i int) error {
	t := p.templates[i]
	for _, m := range t.Mappings {
		imp, ok := m.SourceArn.(map[string]any)
		if !ok || len(imp) != 1 || imp["Fn::ImportValue"] == nil {
			continue
		}
		for j, e := range p.templates {
			if j == i {
				continue
			}
			for _, out := range slices.Sorted(maps.Keys(e.Exports)) {
				name, err := p.deps[j].Resolve(e.Exports[out])
				if err != nil || !reflect.DeepEqual(name, imp["Fn::ImportValue"]) {
					continue
				}
				ga, _ := cfn.Dig(e.Outputs, out, "Fn::GetAtt").([]any)
				if len(ga) != 2 || ga[1] != "Arn" {
					continue
				}
				q, _ := ga[0].(string)
				if _, ok := e.Queues[q]; !ok {
					continue
				}
				if err := t.LinkQueue(m.LogicalID, e, q, p.deps[j].QueueName); err != nil {
					return fmt.Errorf("local: stack %s: %w", p.refs[i].DisplayName, err)
				}
				p.plan(i)
			}
		}
	}
	return nil
}

// linkParent links mapping m of the nested stack i, whose source is a parameter its parent
// gives the ARN of one of the parent's queues (a queue passed into a NestedStack), to that
// queue. Any other mapping is left as it is.
func (p *planner) linkParent(i int, m standin.Mapping, parent *standin.Deployment) error {
	ref := p.refs[i]
	param := cfn.RefTarget(m.SourceArn)
	if param == "" {
		return nil
	}
	k := slices.IndexFunc(parent.Template.Nested, func(n standin.NestedStack) bool { return n.LogicalID == ref.ParentResource })
	if k < 0 {
		return nil
	}
	ga, _ := cfn.Dig(parent.Template.Nested[k].Parameters, param, "Fn::GetAtt").([]any)
	if len(ga) != 2 || ga[1] != "Arn" {
		return nil
	}
	q, _ := ga[0].(string)
	if _, ok := parent.Template.Queues[q]; !ok {
		return nil
	}
	if err := p.templates[i].LinkQueue(m.LogicalID, parent.Template, q, parent.QueueName); err != nil {
		return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
	}
	return nil
}

// importValue is the value of the export name among deps' stacks (Fn::ImportValue).
// A stack not planned (or created) yet, nil in deps, exports nothing yet.
func importValue(deps []*standin.Deployment, name string) (any, error) {
	for _, d := range deps {
		if d == nil {
			continue
		}
		for _, out := range slices.Sorted(maps.Keys(d.Template.Exports)) {
			if export, err := d.Resolve(d.Template.Exports[out]); err == nil && export == name {
				return d.Resolve(d.Template.Outputs[out])
			}
		}
	}
	return nil, cfn.UnresolvedImport(name)
}

func stackSuffix(ref cfn.StackRef) string {
	return strings.Trim(nameSafe.ReplaceAllString(ref.DisplayName, "-"), "-")
}
