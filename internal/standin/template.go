package standin

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/eventfilter"
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

// Function properties the kit applies (Environment, Timeout, MemorySize, reported) or that
// have no meaning for a function built from its source and run here; any other is listed
// in NotApplied.
var functionPropsNoEffect = map[string]bool{
	"Environment": true, "Timeout": true, "MemorySize": true, "Handler": true, "Runtime": true, "Code": true, "Role": true,
	"Description": true, "Tags": true, "Architectures": true, "LoggingConfig": true, "TracingConfig": true, "FunctionName": true,
}

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

// InvokeConfig is an AWS::Lambda::EventInvokeConfig: Lambda's retries of an asynchronous
// invocation and where an event goes when they are exhausted.
type InvokeConfig struct {
	LogicalID       string
	maxRetries      int
	OnFailureQueue  string // logical id of the on-failure destination queue, "" for none
	maxEventAgeSecs int
}

// NestedStack is an AWS::CloudFormation::Stack whose template is a file of the cloud assembly,
// as CDK writes a NestedStack.
type NestedStack struct {
	LogicalID    string
	TemplateFile string         // relative to the assembly directory
	Parameters   map[string]any // the nested template's parameters, as expressions of this stack
	Path         string         // the NestedStack construct's path ("Parent/Workers")
}

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
		return queueNameOf(staticString(target))
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

// bucket is an AWS::S3::Bucket's properties.
type bucket struct {
	LogicalID string
	Props     map[string]any
}

// BucketEvents is a Custom::S3BucketNotifications, CDK's way of setting a bucket's event
// notifications: the bucket (BucketName, as in the template) and its
// NotificationConfiguration (TopicConfigurations, QueueConfigurations,
// LambdaFunctionConfigurations, each with Events and a key Filter).
type BucketEvents struct {
	LogicalID string
	Bucket    any
	Config    map[string]any
}

// Secret is an AWS::SecretsManager::Secret's properties: its Name, and its value as given
// (SecretString) or to be generated (GenerateSecretString).
type Secret struct {
	LogicalID string
	Props     map[string]any
}

// Topic is an AWS::SNS::Topic's properties.
type Topic struct {
	LogicalID string
	Props     map[string]any
}

// Fifo reports whether the topic is a FIFO topic.
func (t Topic) Fifo() bool { b, _ := t.Props["FifoTopic"].(bool); return b }

// Subscription is an AWS::SNS::Subscription: what a topic delivers to.
type Subscription struct {
	LogicalID string
	TopicArn  any // as in the template (the topic may be another stack's)
	protocol  string
	Endpoint  any  // as in the template: an SQS queue's ARN for protocol sqs
	Raw       bool // RawMessageDelivery: the message as it was published, not SNS's JSON envelope
	// Filter is the FilterPolicy, nil for none: a message it does not match is not delivered.
	// It matches the message's attributes, or with FilterOnBody (FilterPolicyScope
	// MessageBody) the message, which must be a JSON object.
	Filter       *eventfilter.Criteria
	FilterOnBody bool
}

// Table is an AWS::DynamoDB::Table's properties, or an AWS::DynamoDB::GlobalTable's
// (Global), which the kit creates as one table: the replica in the stack's region.
type Table struct {
	LogicalID string
	Props     map[string]any
	global    bool
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

// Function is an AWS::Lambda::Function: its environment (values still CloudFormation
// expressions), timeout and memory.
type Function struct {
	LogicalID string
	Env       map[string]any
	Timeout   int // seconds
	MemoryMB  int
	Handler   string
	Runtime   string
	// Path is the construct path CDK recorded in the resource's aws:cdk:path metadata
	// ("" when the assembly was synthesized without it): the key of its source in the
	// cloud assembly (cfn.ReadSources).
	Path string
	// Asset is the directory of the function's code asset in the cloud assembly, relative
	// to it (the aws:asset:path metadata of a Code asset), "" for none (inline code, an
	// image, an S3 object the app names, or an assembly synthesized without asset metadata).
	Asset string
	// Image reports a container image function (PackageType Image).
	Image bool
}

// Binary names the program of this repository that the function runs. The template says
// only which asset holds the code, so it is told by the function's environment contract:
// IDEMPOTENCY_TABLE_NAME is the consumer's, QUEUE_URL the dispatcher's.
func (f Function) Binary() (string, error) {
	_, consumer := f.Env[contract.EnvTableName]
	_, dispatcher := f.Env[contract.EnvQueueURL]
	switch {
	case consumer && !dispatcher:
		return "consumer", nil
	case dispatcher && !consumer:
		return "dispatcher", nil
	}
	return "", fmt.Errorf("function %s: cannot tell consumer from dispatcher by its environment", f.LogicalID)
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

// Schedule is an AWS::Scheduler::Schedule targeting a function.
type Schedule struct {
	LogicalID string
	Function  string // logical id
	Input     string // the target input, with Scheduler's <aws.scheduler.*> placeholders
	// Expression and Timezone are ScheduleExpression (e.g. "cron(0 * * * ? *)") and
	// ScheduleExpressionTimezone ("" when not set, UTC).
	Expression, Timezone string
	// DeadLetter is the logical id of the queue Scheduler sends an event to when it cannot
	// invoke the target, "" for none.
	DeadLetter string
	// DeployTime names the expression and time zone properties that are not literals and
	// that UseParameters could not make one (a CfnParameter without a value), with their
	// values: known only when CloudFormation deploys.
	DeployTime []string

	props map[string]any // as in the template, for the values parameters give
}

// resolve sets the schedule's expression and time zone from its properties, each a string
// as static renders it with the parameters' values (a CfnParameter's Default, or the value
// given): CDK writes a cron from a parameter as {"Fn::Join": ["", ["cron(", {"Ref":
// "Cron"}, ")"]]}. What stays unknown is listed in DeployTime.
func (s *Schedule) resolve(static func(any) string) {
	s.DeployTime = nil
	for k, into := range map[string]*string{"ScheduleExpression": &s.Expression, "ScheduleExpressionTimezone": &s.Timezone} {
		v, ok := s.props[k]
		if !ok {
			continue
		}
		str := static(v)
		if str == "" {
			b, _ := json.Marshal(v)
			s.DeployTime = append(s.DeployTime, k+" "+string(b))
			continue
		}
		*into = str
	}
	slices.Sort(s.DeployTime)
}

// SendSchedule is an AWS::Scheduler::Schedule whose target is SQS SendMessage (a universal
// target, arn:aws:scheduler:::aws-sdk:sqs:sendMessage): a heartbeat.
type SendSchedule struct {
	LogicalID string
	Queue     string // logical id of the queue the request's QueueUrl refers to
	// Input is the SendMessage request (the API's field names) with Scheduler's
	// <aws.scheduler.*> placeholders, and QueueUrl empty: the harness fills in the queue's URL.
	Input   string
	rate    time.Duration // from ScheduleExpression rate(N minutes|hours)
	retries int           // RetryPolicy.MaximumRetryAttempts
}

// sqsSendTarget ends the ARN of Scheduler's universal target for SQS SendMessage.
const sqsSendTarget = ":scheduler:::aws-sdk:sqs:sendMessage"

var rateExpr = regexp.MustCompile(`^rate\(([0-9]+) (minute|minutes|hour|hours)\)$`)

func parseSendSchedule(id string, p map[string]any) (SendSchedule, error) {
	retry, _ := cfn.Dig(p, "Target", "RetryPolicy").(map[string]any)
	s := SendSchedule{LogicalID: id, retries: cfn.Int(retry, "MaximumRetryAttempts", 185)}
	var refs []string
	s.Input = cfn.JoinString(cfn.Dig(p, "Target", "Input"), func(part any) string {
		refs = append(refs, cfn.RefTarget(part))
		return ""
	})
	if len(refs) != 1 || refs[0] == "" || !strings.Contains(s.Input, `"QueueUrl":""`) {
		return s, fmt.Errorf("schedule %s: its SendMessage input refers to %v, want exactly one queue as its QueueUrl", id, refs)
	}
	s.Queue = refs[0]
	expr, _ := p["ScheduleExpression"].(string)
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return s, fmt.Errorf("schedule %s: expression %q: the local kit fires SQS-target schedules by rate(N minutes|hours) only", id, expr)
	}
	n, _ := strconv.Atoi(m[1])
	s.rate = time.Duration(n) * time.Minute
	if strings.HasPrefix(m[2], "hour") {
		s.rate = time.Duration(n) * time.Hour
	}
	return s, nil
}

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

// readQueue reads a queue.
func readQueue(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Queues[id] = Queue{LogicalID: id, Props: p}
	return nil
}

// readBucket reads a bucket, with the properties the kit does not apply.
func readBucket(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.buckets[id] = bucket{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "BucketName" {
			t.NotApplied = append(t.NotApplied, "bucket "+id+" "+k)
		}
	}
	return nil
}

// readBucketEvents reads a bucket's event notifications (what bucket.AddEventNotification writes).
func readBucketEvents(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	config, _ := p["NotificationConfiguration"].(map[string]any)
	t.BucketEvents = append(t.BucketEvents, BucketEvents{LogicalID: id, Bucket: p["BucketName"], Config: config})
	if fns, _ := config["LambdaFunctionConfigurations"].([]any); len(fns) > 0 {
		t.NotApplied = append(t.NotApplied, "bucket notifications "+id+": LambdaFunctionConfigurations (the kit delivers a bucket's events to topics and queues only)")
	}
	if handler := cfn.RefTarget(p["ServiceToken"]); handler != "" {
		t.Applied[handler] = "CDK's handler of bucket notifications, which the kit applies itself"
	}
	return nil
}

// readSecret reads a secret, with the properties the kit does not apply (its key, its
// replicas, its tags).
func readSecret(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Secrets[id] = Secret{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "Name" && k != "Description" && k != "SecretString" && k != "GenerateSecretString" {
			t.NotApplied = append(t.NotApplied, "secret "+id+" "+k)
		}
	}
	return nil
}

// readTopic reads a topic, with the properties the kit does not apply.
func readTopic(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Topics[id] = Topic{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "TopicName" && k != "FifoTopic" && k != "ContentBasedDeduplication" {
			t.NotApplied = append(t.NotApplied, "topic "+id+" "+k)
		}
	}
	return nil
}

// readSubscription reads a topic's subscription: an SQS one with its filter policy compiled, another listed as not applied.
func readSubscription(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	sub := Subscription{LogicalID: id, TopicArn: p["TopicArn"], Endpoint: p["Endpoint"]}
	sub.protocol, _ = p["Protocol"].(string)
	sub.Raw = p["RawMessageDelivery"] == true || p["RawMessageDelivery"] == "true"
	switch {
	case sub.protocol != "sqs":
		t.NotApplied = append(t.NotApplied, fmt.Sprintf("subscription %s (protocol %s): the kit delivers a topic's messages to SQS queues only", id, sub.protocol))
		return nil
	case p["FilterPolicy"] != nil:
		policy := p["FilterPolicy"]
		if s, ok := policy.(string); ok { // CloudFormation takes the policy as JSON text too
			if err := json.Unmarshal([]byte(s), &policy); err != nil {
				return fmt.Errorf("subscription %s: FilterPolicy is not JSON: %w", id, err)
			}
		}
		b, err := json.Marshal(policy)
		if err == nil {
			sub.Filter, err = eventfilter.Compile([]string{string(b)})
		}
		if err != nil {
			return fmt.Errorf("subscription %s: FilterPolicy %s: %w (SNS would refuse the subscription)", id, b, err)
		}
		sub.FilterOnBody = p["FilterPolicyScope"] == "MessageBody"
	}
	t.Subscriptions = append(t.Subscriptions, sub)
	return nil
}

// readTable reads a table (a TableV2's too).
func readTable(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Tables[id] = Table{LogicalID: id, Props: p, global: r.Type == typeGlobalTable}
	return nil
}

// readFunction reads a function: its environment, handler, runtime and code, and the properties the kit does not apply.
func readFunction(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	for _, k := range slices.Sorted(maps.Keys(p)) {
		switch {
		case k == "Layers":
			t.NotApplied = append(t.NotApplied, "function "+id+" Layers: a layer's files are not under /opt locally, "+
				"and an extension in one does not run; the function runs without them")
		case !functionPropsNoEffect[k]:
			t.NotApplied = append(t.NotApplied, "function "+id+" "+k)
		}
	}
	env, _ := cfn.Dig(p, "Environment", "Variables").(map[string]any)
	f := Function{LogicalID: id, Env: env, Timeout: cfn.Int(p, "Timeout", 3), MemoryMB: cfn.Int(p, "MemorySize", 128)}
	f.Handler, _ = p["Handler"].(string)
	f.Runtime, _ = p["Runtime"].(string)
	f.Path, _ = r.Metadata["aws:cdk:path"].(string)
	if prop, _ := r.Metadata["aws:asset:property"].(string); prop == "Code" {
		f.Asset, _ = r.Metadata["aws:asset:path"].(string)
	}
	f.Image = p["PackageType"] == "Image"
	t.Functions[id] = f
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

// readSchedule reads a schedule: one that sends to a queue, or one that invokes a function.
func readSchedule(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	if strings.HasSuffix(staticString(cfn.Dig(p, "Target", "Arn")), sqsSendTarget) {
		s, err := parseSendSchedule(id, p)
		if err != nil {
			return err
		}
		t.SendSchedules = append(t.SendSchedules, s)
		return nil
	}
	input, _ := cfn.Dig(p, "Target", "Input").(string)
	s := Schedule{LogicalID: id, Function: cfn.RefTarget(cfn.Dig(p, "Target", "Arn")), Input: input,
		DeadLetter: cfn.RefTarget(cfn.Dig(p, "Target", "DeadLetterConfig", "Arn"))}
	s.props = p
	s.resolve(t.staticString)
	t.Schedules = append(t.Schedules, s)
	return nil
}

// readInvokeConfig reads a function's asynchronous invocation settings.
func readInvokeConfig(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.InvokeConfigs[cfn.RefTarget(p["FunctionName"])] = InvokeConfig{LogicalID: id, maxRetries: cfn.Int(p, "MaximumRetryAttempts", 2),
		OnFailureQueue: cfn.RefTarget(cfn.Dig(p, "DestinationConfig", "OnFailure", "Destination")), maxEventAgeSecs: cfn.Int(p, "MaximumEventAgeInSeconds", 21600)}
	return nil
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

// mappingFor returns the event source mapping that feeds a queue.
func (t *Template) mappingFor(queue string) (Mapping, error) {
	for _, m := range t.Mappings {
		if m.Queue == queue {
			return m, nil
		}
	}
	return Mapping{}, fmt.Errorf("template %s: no event source mapping reads queue %s", t.Name, queue)
}

// ScheduleFor returns the schedule that invokes a function.
func (t *Template) ScheduleFor(function string) (Schedule, error) {
	for _, s := range t.Schedules {
		if s.Function == function {
			return s, nil
		}
	}
	return Schedule{}, fmt.Errorf("template %s: no schedule invokes %s", t.Name, function)
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
				"synthesize again (`cdk synth`) with this version of the constructs, which records it", m.LogicalID, staticString(m.SourceArn))
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
	if name := queueNameOf(staticString(m.SourceArn)); name != "" {
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
	if parts := strings.Split(staticString(src), ":"); len(parts) >= 6 && parts[0] == "arn" && parts[2] != "sqs" {
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
	s := staticString(v)
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
