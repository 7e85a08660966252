// Queues and the event source mappings that read them, as the kit reads them from a
// template: which function a mapping invokes (or why it cannot run one), its batch size,
// window, concurrency and filters; the pipelines they make (a queue, its DLQ, its consumer
// and the scheduled function that sends to it); what is not run, and why.

package standin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/eventfilter"
)

// Event source mapping properties the kit applies, and those with no local meaning.
var (
	mappingPropsApplied = map[string]bool{
		"EventSourceArn": true, "FunctionName": true, "BatchSize": true, "MaximumBatchingWindowInSeconds": true,
		"ScalingConfig": true, "FunctionResponseTypes": true, "Enabled": true, "FilterCriteria": true,
	}
	mappingPropsNoEffect = map[string]bool{"Tags": true, "MetricsConfig": true, "KmsKeyArn": true}
	// mappingPropsNotApplied may matter in AWS and are listed in NotApplied: the kit polls
	// as the default mode does.
	mappingPropsNotApplied = map[string]string{"ProvisionedPollerConfig": "provisioned mode: the kit polls as the default mode does"}
)

// Queue is an AWS::SQS::Queue's properties.
type Queue struct {
	LogicalID string
	Props     map[string]any
	standIn   bool   // made by StandInQueue, for a queue the stack imports
	shared    string // set by LinkQueue: the local name of another stack's queue this one is
}

// Fifo reports whether the queue is a FIFO queue.
func (q Queue) Fifo() bool { b, _ := q.Props["FifoQueue"].(bool); return b }

// deadLetterQueue is the logical id the redrive policy points at, "" without one.
func (q Queue) deadLetterQueue() string {
	target := cfn.Dig(q.Props, "RedrivePolicy", "deadLetterTargetArn")
	if q.standIn {
		return queueNameOf(cfn.StaticString(target))
	}
	return cfn.RefTarget(target)
}

// MaxReceiveCount is the redrive policy's maxReceiveCount, 0 without one.
func (q Queue) MaxReceiveCount() int {
	n, _ := cfn.Dig(q.Props, "RedrivePolicy", "maxReceiveCount").(float64)
	return int(n)
}

// VisibilityTimeout is the queue's visibility timeout: its VisibilityTimeout property, or
// SQS's default of 30 seconds without one.
func (q Queue) VisibilityTimeout() time.Duration {
	if _, ok := q.Props["VisibilityTimeout"]; !ok {
		return 30 * time.Second
	}
	return time.Duration(cfn.Float(q.Props["VisibilityTimeout"])) * time.Second
}

// Mapping is an AWS::Lambda::EventSourceMapping from a queue to a function.
type Mapping struct {
	LogicalID string
	Queue     string // logical id
	// SourceArn is EventSourceArn when it does not refer to a queue of the template (a
	// queue the stack imports): a string or an expression of pseudo parameters. Queue is ""
	// until StandInQueue names the local queue that stands in for it.
	SourceArn any
	Function  string // logical id; "" for a function the stack does not create (external)
	// external names a function the stack does not create (an existing function the
	// mapping points at by name or ARN): the kit runs nothing for it, the queue is created.
	external       string
	BatchSize      int
	WindowSeconds  int
	MaxConcurrency int
	// unrunnable says why the mapping's FunctionName leads to no function the kit can run
	// (a reference to a resource that is not a function, alias or version), "" when it does.
	unrunnable     string
	ReportFailures bool // FunctionResponseTypes has ReportBatchItemFailures
	// Filters are the patterns of the mapping's FilterCriteria, nil for none: a record that
	// matches none of them is deleted from the queue and never delivered, as Lambda does.
	Filters  []string
	criteria *eventfilter.Criteria // Filters compiled, nil for none
	Disabled bool                  // Enabled: false: the kit runs no poller for it

	props map[string]any // as in the template, for the numbers a parameter gives
}

// Delivers reports whether Lambda delivers a record, as the JSON of its event record, through
// m's filter criteria: it matches one of them, or m has none.
func (m Mapping) Delivers(record []byte) bool {
	return m.criteria == nil || m.criteria.Match(record)
}

// readQueue reads a queue.
func readQueue(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Queues[id] = Queue{LogicalID: id, Props: p}
	return nil
}

// readMapping reads an event source mapping: an SQS one with its settings and filters, another listed as not run.
func readMapping(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	if what := notSQS(t, p["EventSourceArn"]); what != "" { // a stream, Kafka, MQ: not a pipeline
		t.otherSources = append(t.otherSources, fmt.Sprintf("not run locally: mapping %s, whose source is %s, not an SQS queue", id, what))
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if why, ok := mappingPropsNotApplied[k]; ok {
			t.NotApplied = append(t.NotApplied, "mapping "+id+" "+k+" ("+why+")")
			continue
		}
		if !mappingPropsApplied[k] && !mappingPropsNoEffect[k] {
			return fmt.Errorf("mapping %s: property %s is not applied by the local kit (package local): the consumer would see "+
				"other records than in AWS; remove it, or report it to the project so the kit learns it", id, k)
		}
	}
	m := Mapping{
		LogicalID:      id,
		Queue:          cfn.RefTarget(p["EventSourceArn"]),
		BatchSize:      cfn.Int(p, "BatchSize", 10),
		WindowSeconds:  cfn.Int(p, "MaximumBatchingWindowInSeconds", 0),
		MaxConcurrency: int(cfn.Float(cfn.Dig(p, "ScalingConfig", "MaximumConcurrency"))),
	}
	if _, param := t.Parameters[m.Queue]; m.Queue == "" || param {
		// A queue the stack does not create: imported, or given by a parameter (a
		// nested stack's, from its parent: package local links it).
		m.Queue, m.SourceArn = "", p["EventSourceArn"]
	}
	var err error
	if m.Filters, err = filterPatterns(p["FilterCriteria"]); err != nil {
		return fmt.Errorf("mapping %s: %w", id, err)
	}
	if m.Filters != nil { // Lambda refuses the mapping on an invalid pattern
		if m.criteria, err = eventfilter.Compile(m.Filters); err != nil {
			return fmt.Errorf("mapping %s: FilterCriteria, which Lambda would refuse: %w", id, err)
		}
	}
	m.Function, m.external, m.unrunnable = mappedFunction(p["FunctionName"], func(id string) (string, any) {
		return doc[id].Type, doc[id].Properties["FunctionName"]
	}, t.Parameters)
	if enabled, ok := p["Enabled"].(bool); ok && !enabled {
		m.Disabled = true
		t.NotApplied = append(t.NotApplied, "mapping "+id+" is disabled (Enabled: false): its queue is not polled")
	}
	types, _ := p["FunctionResponseTypes"].([]any)
	m.ReportFailures = slices.Contains(types, any("ReportBatchItemFailures"))
	m.props = p
	t.Mappings = append(t.Mappings, m)
	return nil
}

// Pipelines pairs each processing queue (a queue with an event source mapping) with its
// consumer, DLQ ("" when the queue has no redrive policy) and the dispatcher whose QUEUE_URL
// names it.
func (t *Template) Pipelines() ([]Pipeline, error) {
	var out []Pipeline
	for _, m := range t.Mappings {
		if m.external != "" || m.unrunnable != "" {
			continue // listed by NotRun
		}
		if m.Queue == "" {
			return nil, fmt.Errorf("mapping %s: its source %s is a queue the stack imports, and the cloud assembly does not describe it: "+
				"synthesize again (`cdk synth`) with this version of the constructs, which records it", m.LogicalID, cfn.StaticString(m.SourceArn))
		}
		q := t.Queues[m.Queue]
		p := Pipeline{Queue: m.Queue, DLQ: q.deadLetterQueue(), Consumer: m.Function, Mapping: m, Fifo: q.Fifo()}
		for id, f := range t.Functions { // a scheduled function sending to the queue
			url := f.Env[contract.EnvQueueURL]
			if _, err := t.ScheduleFor(id); err == nil && (cfn.RefTarget(url) == m.Queue || q.standIn && queueNameOf(t.staticString(url)) == m.Queue) {
				p.Dispatcher = id
			}
		}
		out = append(out, p)
	}
	return out, nil // none: a stack of other resources (a shared table, a topic)
}

// NotRun lists the event source mappings the kit runs nothing for: those of a source other
// than an SQS queue, and those onto a function the stack does not create (an existing
// function, by name or ARN), whose queues are created.
func (t *Template) NotRun() []string {
	out := slices.Clone(t.otherSources)
	for _, m := range t.Mappings {
		switch {
		case m.external != "":
			out = append(out, fmt.Sprintf("not run locally: %s (a function the stack does not create), mapped to %s by %s; the queue is created",
				m.external, MappingSource(m), m.LogicalID))
		case m.unrunnable != "":
			out = append(out, fmt.Sprintf("not run locally: mapping %s of %s: %s; the queue is created", m.LogicalID, MappingSource(m), m.unrunnable))
		}
	}
	return out
}

// MappingSource names a mapping's queue: its logical id, or the imported queue's name.
func MappingSource(m Mapping) string {
	if m.Queue != "" {
		return "queue " + m.Queue
	}
	if name := queueNameOf(cfn.StaticString(m.SourceArn)); name != "" {
		return "queue " + name
	}
	return "the queue " + jsonish(m.SourceArn)
}

// notSQS describes a mapping's source when it is not an SQS queue ("" when it is, or may be:
// a queue the stack imports through an expression the kit reads later).
func notSQS(t *Template, src any) string {
	if src == nil {
		return "not an ARN (a self-managed Kafka cluster)"
	}
	if id := cfn.RefTarget(src); id != "" {
		if typ, ok := t.types[id]; ok && typ != typeQueue {
			return id + " (" + typ + ")"
		}
		return ""
	}
	if parts := strings.Split(cfn.StaticString(src), ":"); len(parts) >= 6 && parts[0] == "arn" && parts[2] != "sqs" {
		return strings.Join(parts, ":")
	}
	return ""
}

// mappedFunction follows a mapping's FunctionName to the function of the template it
// invokes, through every form CDK writes: Ref or Fn::GetAtt of the function; a version
// (fn.CurrentVersion()), {"Fn::Join": ["", [{"Ref": fn}, ":", {"Fn::GetAtt": [version,
// "Version"]}]]}; an alias's name cut from its ARN, {"Fn::Join": ["", [{"Fn::Select": [6,
// {"Fn::Split": [":", {"Ref": alias}]}]}, ":live"]]} (alias.AddEventSource); a function
// referred to by its ARN (Fn::Select and Fn::Split of its Fn::GetAtt Arn). Every resource the
// expression names must lead to the same function. It returns the function's logical id; or
// external, a function the stack does not create (a name, an ARN, a parameter); or why the
// expression leads to no one function. resource gives a logical id's type ("" for none) and
// FunctionName property.
func mappedFunction(v any, resource func(id string) (typ string, functionName any), params map[string]Parameter) (fn, external, why string) {
	var found, unknown []string
	var follow func(v any, depth int) string
	follow = func(v any, depth int) string {
		if depth > 3 { // alias -> version -> function at most
			return "its FunctionName leads through more than two aliases or versions"
		}
		for _, id := range cfn.References(v) {
			if _, param := params[id]; param {
				return "param"
			}
			typ, next := resource(id)
			switch typ {
			case "": // not in the template, which CloudFormation refuses: check says so
				unknown = append(unknown, id)
			case typeFunction:
				if !slices.Contains(found, id) {
					found = append(found, id)
				}
			case "AWS::Lambda::Alias", "AWS::Lambda::Version":
				if why := follow(next, depth+1); why != "" {
					return why
				}
			default:
				return fmt.Sprintf("its FunctionName refers to %s (%s), not a Lambda function, alias or version", id, typ)
			}
		}
		return ""
	}
	why = follow(v, 0)
	switch {
	case len(unknown) > 0:
		return unknown[0], "", ""
	case why == "param" || why == "" && len(found) == 0: // an existing function, by name, ARN or parameter
		return "", functionNameOf(v), ""
	case why != "":
		return "", "", why
	case len(found) > 1:
		b, _ := json.Marshal(v)
		return "", "", fmt.Sprintf("its FunctionName %s leads to functions %s: want one", b, strings.Join(found, ", "))
	}
	return found[0], "", ""
}

// filterPatterns reads a mapping's FilterCriteria: the Pattern of each of its Filters.
func filterPatterns(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	filters, _ := cfn.Dig(v, "Filters").([]any)
	var out []string
	for i, f := range filters {
		pattern, ok := cfn.Dig(f, "Pattern").(string)
		if !ok {
			b, _ := json.Marshal(f)
			return nil, fmt.Errorf("FilterCriteria.Filters[%d] %s: want a Pattern string (the local kit does not evaluate intrinsics in a filter)", i, b)
		}
		out = append(out, pattern)
	}
	return out, nil
}

// functionNameOf renders a mapping's FunctionName that is not a function of the stack: a
// name, an ARN (its name and qualifier) or an expression.
func functionNameOf(v any) string {
	s := cfn.StaticString(v)
	if s == "" {
		b, _ := json.Marshal(v)
		return "function " + string(b)
	}
	if parts := strings.Split(s, ":"); len(parts) >= 7 && parts[0] == "arn" && parts[2] == "lambda" {
		s = strings.Join(parts[6:], ":")
	}
	return "function " + s
}

// Pipeline is one queue's slice of the topology, by logical id.
type Pipeline struct {
	Queue, DLQ, Consumer, Dispatcher string
	Mapping                          Mapping
	Fifo                             bool
}
