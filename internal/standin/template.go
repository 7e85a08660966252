// The template model: a synthesized stack's template read into one Template, each resource
// by its type's reader (readers: queues and mappings in queues.go, functions in
// functions.go, schedules in schedules.go, tables, topics, buckets and secrets in
// resources.go, alarms through package alarm), then checked as a whole; its parameters and
// the names it gives.

package standin

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// Resource types the kit deploys or runs.
const (
	typeNestedStack  = "AWS::CloudFormation::Stack"
	typeQueue        = "AWS::SQS::Queue"
	typeTable        = "AWS::DynamoDB::Table"
	typeGlobalTable  = "AWS::DynamoDB::GlobalTable" // CDK's TableV2
	typeFunction     = "AWS::Lambda::Function"
	typeMapping      = "AWS::Lambda::EventSourceMapping"
	typeSchedule     = "AWS::Scheduler::Schedule"
	typeInvokeConfig = "AWS::Lambda::EventInvokeConfig"
	typeBucket       = "AWS::S3::Bucket"
	typeBucketEvents = "Custom::S3BucketNotifications" // what bucket.AddEventNotification writes
	typeTopic        = "AWS::SNS::Topic"
	typeSubscription = "AWS::SNS::Subscription"
	typeSecret       = "AWS::SecretsManager::Secret"
	typeAlarm        = "AWS::CloudWatch::Alarm"
	typeComposite    = "AWS::CloudWatch::CompositeAlarm"
)

// Template is the part of a synthesized stack that runs: every resource keyed by logical id.
type Template struct {
	Name   string // the stack name (file name without .template.json)
	Queues map[string]Queue
	Tables map[string]Table
	// buckets are the S3 buckets, by logical id; BucketEvents their notifications.
	buckets      map[string]bucket
	BucketEvents []BucketEvents
	// Applied are the functions that only serve what the kit does itself (CDK's handler of
	// bucket notifications), by logical id: not run, and not listed as not run.
	Applied map[string]string
	// Topics are the SNS topics, by logical id; Subscriptions their subscriptions.
	Topics        map[string]Topic
	Subscriptions []Subscription
	// Secrets are the Secrets Manager secrets, by logical id: the kit answers GetSecretValue
	// for each (package local).
	Secrets   map[string]Secret
	Functions map[string]Function
	Mappings  []Mapping
	Schedules []Schedule
	// SendSchedules are the schedules whose target is SQS SendMessage itself (the heartbeats).
	SendSchedules []SendSchedule
	// Alarms and Composites are the stack's CloudWatch alarms (package alarm, internal/standin/alarm, evaluates them).
	Alarms     []alarm.Alarm
	Composites []alarm.Composite
	// InvokeConfigs are the functions' asynchronous invocation settings, by function.
	InvokeConfigs map[string]InvokeConfig
	// Outputs are the stack's outputs, their values still CloudFormation expressions.
	Outputs map[string]any
	// Exports are the names of the outputs the stack exports (what another stack's
	// Fn::ImportValue reads), by output name; the names are still CloudFormation
	// expressions (CDK's include the stack's name).
	Exports map[string]any
	// Nested are the stack's nested stacks whose templates are in the cloud assembly (CDK's
	// NestedStack): package local runs each as a stack of its own.
	Nested []NestedStack
	// Parameters are the stack's parameters (CfnParameter), by name.
	Parameters map[string]Parameter
	// Clashes are the physical names this template gives (QueueName, TableName, TopicName,
	// BucketName) that another stack of the same run gives too: those get the stack's suffix
	// locally, every other given name is kept as it is. nil (a harness that deploys one
	// template several times side by side): every name gets the suffix.
	Clashes map[string]bool
	// types is every resource's type, by logical id: what an error about a reference the
	// kit cannot resolve names.
	types map[string]string
	// otherSources lists the event source mappings that do not read an SQS queue (a
	// DynamoDB or Kinesis stream, Kafka, MQ), for NotRun.
	otherSources []string
	// NotApplied lists the function and event source mapping properties that may matter in
	// AWS and that the kit does not apply (reserved concurrency, a VPC, layers, a disabled
	// mapping); Deploy adds them to its Ignored.
	NotApplied []string
}

// NestedStack is an AWS::CloudFormation::Stack whose template is a file of the cloud assembly,
// as CDK writes a NestedStack.
type NestedStack struct {
	LogicalID    string
	TemplateFile string         // relative to the assembly directory
	Parameters   map[string]any // the nested template's parameters, as expressions of this stack
	Path         string         // the NestedStack construct's path ("Parent/Workers")
}

// Parameter is a stack parameter: its type, default value (nil without one) and the value
// the kit uses (UseParameters).
type Parameter struct {
	Name    string
	Type    string
	Default any
	// value is what Ref of the parameter gives locally (a string, or a list for the list
	// types), nil when it has none: no Default and none given.
	value any
}

// UseParameters gives each parameter its local value: the one in given, by name, else its
// Default (not for an SSM parameter, whose Default names the value, not it), and a mapping
// number that refers to a parameter (its batch size, window or maximum concurrency) the
// parameter's value; a parameter without one there is an error.
func (t *Template) UseParameters(given map[string]string) error {
	for name, p := range t.Parameters {
		v, ok := given[name]
		if !ok && p.Default != nil && !p.fromSSM() {
			v, ok = cfn.Scalar(p.Default), true
		}
		p.value = nil
		if ok {
			p.value = v
			if strings.Contains(p.Type, "List<") || strings.Contains(p.Type, "CommaDelimitedList") {
				var list []any
				for _, e := range strings.Split(v, ",") {
					list = append(list, strings.TrimSpace(e))
				}
				p.value = list
			}
		}
		t.Parameters[name] = p
	}
	for i := range t.Schedules {
		t.Schedules[i].resolve(t.staticString)
	}
	for i, m := range t.Mappings {
		for _, n := range []struct {
			into *int
			path []string
		}{{&t.Mappings[i].BatchSize, []string{"BatchSize"}}, {&t.Mappings[i].WindowSeconds, []string{"MaximumBatchingWindowInSeconds"}},
			{&t.Mappings[i].MaxConcurrency, []string{"ScalingConfig", "MaximumConcurrency"}}} {
			ref := cfn.RefTarget(cfn.Dig(m.props, n.path...))
			p, ok := t.Parameters[ref]
			if !ok {
				continue
			}
			v, _ := p.value.(string)
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("mapping %s: %s refers to parameter %s, which has no number for the local run (%q): give it one with Options.Parameters[%q] or pipelinectl local up --parameter %s=N",
					m.LogicalID, strings.Join(n.path, "."), ref, v, ref, ref)
			}
			*n.into = int(f)
		}
	}
	return nil
}

// GivenNames are the physical names the template gives its queues, tables, topics, buckets
// and secrets (QueueName, TableName, TopicName, BucketName, Name), each with the logical id
// of the resource that gives it.
func (t *Template) GivenNames() map[string]string {
	out := map[string]string{}
	for id, q := range t.Queues {
		if name, ok := q.Props["QueueName"].(string); ok && !q.standIn && q.shared == "" {
			out[name] = id
		}
	}
	for id, tb := range t.Tables {
		if name, ok := tb.Props["TableName"].(string); ok {
			out[name] = id
		}
	}
	for id, tp := range t.Topics {
		if name, ok := tp.Props["TopicName"].(string); ok {
			out[name] = id
		}
	}
	for id, b := range t.buckets {
		if name, ok := b.Props["BucketName"].(string); ok {
			out[name] = id
		}
	}
	for id, sc := range t.Secrets {
		if name, ok := sc.Props["Name"].(string); ok {
			out[name] = id
		}
	}
	return out
}

// fromSSM reports whether the parameter's value is read from Systems Manager Parameter Store
// at deploy time (type AWS::SSM::Parameter::Value<...>): its Default names a parameter there,
// it is not the value.
func (p Parameter) fromSSM() bool { return strings.HasPrefix(p.Type, "AWS::SSM::Parameter::Value<") }

// LoadAssembly reads the one stack template in a cloud assembly directory (cdk.out).
func LoadAssembly(dir string) (*Template, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.template.json"))
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("%s: want exactly one *.template.json, found %d (synthesize with `make e2e`)", dir, len(files))
	}
	return LoadTemplate(files[0])
}

// resource is one resource of a template, as LoadTemplate reads it.
type resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// errNotHeld is a reader's answer for a resource the kit does not create after all.
var errNotHeld = errors.New("not created locally")

// reader reads one resource of its type into t; doc is the whole template's resources.
type reader func(t *Template, id string, r resource, doc map[string]resource) error

// readers are the resource types the kit creates or applies, each with its reader.
var readers = map[string]reader{
	typeQueue: readQueue, typeBucket: readBucket, typeBucketEvents: readBucketEvents, typeTopic: readTopic,
	typeSubscription: readSubscription, typeTable: readTable, typeGlobalTable: readTable, typeFunction: readFunction,
	typeMapping: readMapping, typeSchedule: readSchedule, typeInvokeConfig: readInvokeConfig, typeAlarm: readAlarm,
	typeComposite: readComposite, typeNestedStack: readNestedStack, typeSecret: readSecret,
	"AWS::CDK::Metadata": func(*Template, string, resource, map[string]resource) error { return nil },
}

// LoadTemplate reads a synthesized template and checks that every part the kit needs is
// there and understood: an unknown shape is an error, never a silently different topology.
// Each resource is read by its type's reader (readers); a type without one is counted in
// NotApplied as not created locally.
func LoadTemplate(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]resource
		Outputs   map[string]struct {
			Value  any
			Export struct{ Name any }
		}
		Parameters map[string]struct {
			Type    string
			Default any
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &Template{
		Name:          strings.TrimSuffix(filepath.Base(path), ".template.json"),
		Queues:        map[string]Queue{},
		Tables:        map[string]Table{},
		Topics:        map[string]Topic{},
		Secrets:       map[string]Secret{},
		buckets:       map[string]bucket{},
		Applied:       map[string]string{},
		Functions:     map[string]Function{},
		InvokeConfigs: map[string]InvokeConfig{},
		Outputs:       map[string]any{},
		Parameters:    map[string]Parameter{},
		Exports:       map[string]any{},
		types:         map[string]string{},
	}
	for name, o := range doc.Outputs {
		t.Outputs[name] = o.Value
		if o.Export.Name != nil {
			t.Exports[name] = o.Export.Name
		}
	}
	for name, p := range doc.Parameters {
		t.Parameters[name] = Parameter{Name: name, Type: p.Type, Default: p.Default}
	}
	for id, r := range doc.Resources {
		t.types[id] = r.Type
	}
	others := map[string]int{}
	for _, id := range slices.Sorted(maps.Keys(doc.Resources)) { // deterministic mapping and schedule order
		r := doc.Resources[id]
		read, ok := readers[r.Type]
		if !ok {
			others[r.Type]++
			continue
		}
		switch err := read(t, id, r, doc.Resources); {
		case errors.Is(err, errNotHeld):
			others[r.Type]++
		case err != nil:
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(others) > 0 { // IAM, KMS, log groups, dashboards, autoscaling, your own
		var parts []string
		for _, typ := range slices.Sorted(maps.Keys(others)) {
			parts = append(parts, fmt.Sprintf("%s x%d", typ, others[typ]))
		}
		t.NotApplied = append(t.NotApplied, "not created locally: "+strings.Join(parts, ", "))
	}
	return t, t.check()
}

// readAlarm reads a metric alarm.
func readAlarm(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	a, err := alarm.Parse(id, p)
	if err != nil {
		return err
	}
	t.Alarms = append(t.Alarms, a)
	return nil
}

// readComposite reads a composite alarm.
func readComposite(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	c, err := alarm.ParseComposite(id, p)
	if err != nil {
		return err
	}
	t.Composites = append(t.Composites, c)
	return nil
}

// readNestedStack reads a nested stack whose template the assembly holds (errNotHeld for one it does not).
func readNestedStack(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	file, _ := r.Metadata["aws:asset:path"].(string)
	cdkPath, _ := r.Metadata["aws:cdk:path"].(string)
	if file == "" || !strings.HasSuffix(file, ".json") {
		return errNotHeld // a template the assembly does not hold (a TemplateURL of its own)
	}
	params, _ := p["Parameters"].(map[string]any)
	t.Nested = append(t.Nested, NestedStack{LogicalID: id, TemplateFile: file, Parameters: params,
		Path: strings.TrimSuffix(cdkPath[:max(strings.LastIndex(cdkPath, "/"), 0)], ".NestedStack")})
	return nil
}

func (t *Template) check() error {
	var problems []string
	for _, m := range t.Mappings {
		if _, ok := t.Queues[m.Queue]; !ok && m.SourceArn == nil {
			problems = append(problems, fmt.Sprintf("mapping %s: source %q is not a queue of this stack", m.LogicalID, m.Queue))
		}
		if _, ok := t.Functions[m.Function]; !ok && m.external == "" && m.unrunnable == "" {
			problems = append(problems, fmt.Sprintf("mapping %s: function %q is not in this stack", m.LogicalID, m.Function))
		}
	}
	for _, s := range t.Schedules {
		if _, ok := t.Functions[s.Function]; !ok {
			problems = append(problems, fmt.Sprintf("schedule %s: target %q is not a function of this stack", s.LogicalID, s.Function))
		}
	}
	for _, s := range t.SendSchedules {
		if _, ok := t.Queues[s.Queue]; !ok {
			problems = append(problems, fmt.Sprintf("schedule %s: sends to %q, not a queue of this stack", s.LogicalID, s.Queue))
		}
	}
	for id, q := range t.Queues {
		if dlq := q.deadLetterQueue(); dlq != "" {
			if _, ok := t.Queues[dlq]; !ok {
				problems = append(problems, fmt.Sprintf("queue %s: dead-letter queue %q is not in this stack", id, dlq))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("template %s: %s", t.Name, strings.Join(problems, "; "))
	}
	return nil
}
