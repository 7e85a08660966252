package consumer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// specQueue is a Source known only by its settings: validation never reaches Queue(), so
// these tests create no queue.
type specQueue struct {
	fifo                  bool
	visibility, retention time.Duration
	queue                 awssqs.IQueue // nil unless a test synthesizes
}

func (q specQueue) Queue() awssqs.IQueue             { return q.queue }
func (q specQueue) Fifo() bool                       { return q.fifo }
func (q specQueue) VisibilityTimeout() time.Duration { return q.visibility }
func (q specQueue) RetentionPeriod() time.Duration   { return q.retention }

// dlqSpec is a specQueue that reports its DLQ's retention.
type dlqSpec struct {
	specQueue
	dlqRetention time.Duration
}

func (q dlqSpec) DeadLetterRetentionPeriod() time.Duration { return q.dlqRetention }

var (
	stdSpec  = specQueue{visibility: 3 * time.Minute, retention: 4 * 24 * time.Hour}
	fifoSpec = specQueue{fifo: true, visibility: 3 * time.Minute, retention: 4 * 24 * time.Hour}
)

// build runs the constructor with props; it must panic before adding anything to the tree.
func build(id string, props *consumer.IdempotentConsumerProps) func() {
	return func() { consumer.NewIdempotentConsumer(stack, id, props) }
}

func TestValidationMessages(t *testing.T) {
	tests := []struct {
		name  string
		props consumer.IdempotentConsumerProps
		want  []string
	}{
		{"queue required", consumer.IdempotentConsumerProps{Table: simpleTable},
			[]string{"Queue: got nil", "pass the queue"}},
		{"table required", consumer.IdempotentConsumerProps{Queue: stdSpec},
			[]string{"Table: got nil", "pass the idempotency table"}},
		{"5m timeout on a 2m visibility timeout", consumer.IdempotentConsumerProps{
			Queue: specQueue{visibility: 2 * time.Minute, retention: time.Hour}, Table: simpleTable, Function: function.Options{Timeout: 5 * time.Minute}},
			[]string{"Function.Timeout: 5m0s needs a queue visibility timeout of at least 30m0s (6x, AWS's rule for SQS event sources), " +
				"the queue has 2m0s; lower it or raise the queue's VisibilityTimeout/ConsumerTimeout"}},
		{"timeout above Lambda's limit", consumer.IdempotentConsumerProps{Queue: specQueue{visibility: 12 * time.Hour}, Table: simpleTable, Function: function.Options{Timeout: 16 * time.Minute}},
			[]string{"Function.Timeout: got 16m0s", "1s to 15m0s"}},
		{"memory below Lambda's limit", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{MemorySize: 64}},
			[]string{"Function.MemorySize: got 64", "128 to 10240"}},
		{"entry that is not a directory", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{Entry: "/nonexistent/consumer"}},
			[]string{"Function.Entry: got /nonexistent/consumer", "Go main package"}},
		{"fifo batch size", consumer.IdempotentConsumerProps{Queue: fifoSpec, Table: simpleTable, BatchSize: 11},
			[]string{"BatchSize: got 11", "1 to 10 for a FIFO queue"}},
		{"fifo batching window", consumer.IdempotentConsumerProps{Queue: fifoSpec, Table: simpleTable, MaxBatchingWindow: time.Second},
			[]string{"MaxBatchingWindow: got 1s", "FIFO queues do not support a batching window"}},
		{"standard batch size", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, BatchSize: 10001, MaxBatchingWindow: time.Second},
			[]string{"BatchSize: got 10001", "1 to 10000 for a standard queue"}},
		{"batch above 10 without a window", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, BatchSize: 100},
			[]string{"BatchSize: 100 needs MaxBatchingWindow of at least 1s", "got 0s", "set MaxBatchingWindow or use BatchSize 10 or less"}},
		{"batching window too long", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, MaxBatchingWindow: 6 * time.Minute},
			[]string{"MaxBatchingWindow: got 6m0s", "0s to 5m0s"}},
		{"max concurrency below 2", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, MaxConcurrency: 1},
			[]string{"MaxConcurrency: got 1", "2 to 1000"}},
		{"max concurrency above 1000", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, MaxConcurrency: 1001},
			[]string{"MaxConcurrency: got 1001", "2 to 1000"}},
		{"pollers with max concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, MaxConcurrency: 20, ProvisionedPollers: &consumer.ProvisionedPollers{Maximum: 5}},
			[]string{"MaxConcurrency: got 20; Lambda takes provisioned mode or a maximum concurrency for an SQS event source, not both: drop MaxConcurrency (ProvisionedPollers.Maximum x 10 bounds the concurrency), or drop ProvisionedPollers"}},
		{"pollers minimum below 2", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Minimum: 1, Maximum: 5}},
			[]string{"ProvisionedPollers.Minimum: got 1; use 2 to 200 (Lambda's range for SQS; each is billed all the time), or 0 for the default 2"}},
		{"pollers minimum above 200", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Minimum: 201, Maximum: 500}},
			[]string{"ProvisionedPollers.Minimum: got 201; use 2 to 200"}},
		{"pollers maximum above 2000", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Maximum: 5000}},
			[]string{"ProvisionedPollers.Maximum: got 5000; set 2 to 2000 (what CDK's SqsEventSource accepts): x 10 is the consumer's concurrency bound, so size it as MaxConcurrency / 10 (docs/capacity.md)"}},
		{"pollers without a maximum", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Minimum: 2}},
			[]string{"ProvisionedPollers.Maximum: got 0; set 2 to 2000"}},
		{"pollers maximum below 2", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Maximum: 1}},
			[]string{"ProvisionedPollers.Maximum: got 1; set 2 to 2000"}},
		{"pollers above a small reserved concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{ReservedConcurrentExecutions: 15},
			ProvisionedPollers: &consumer.ProvisionedPollers{Maximum: 20}},
			[]string{"Function.ReservedConcurrentExecutions: 15 is below what ProvisionedPollers.Maximum 20 drives (200 concurrent invocations): the event source would be throttled, " +
				"and throttled batches return to the queue with raised receive counts, towards the dead-letter queue; reserve at least 200"}},
		{"pollers maximum below minimum", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, ProvisionedPollers: &consumer.ProvisionedPollers{Minimum: 50, Maximum: 10}},
			[]string{"ProvisionedPollers.Maximum: 10 is below ProvisionedPollers.Minimum 50; the mapping scales between the two"}},
		{"pollers above the reserved concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{ReservedConcurrentExecutions: 100},
			ProvisionedPollers: &consumer.ProvisionedPollers{Maximum: 20}},
			[]string{"Function.ReservedConcurrentExecutions: 100 is below what ProvisionedPollers.Maximum 20 drives (200 concurrent invocations): the event source would be throttled, " +
				"and throttled batches return to the queue with raised receive counts, towards the dead-letter queue; reserve at least 200 or lower ProvisionedPollers.Maximum to 10"}},
		{"key prefix with the id separator", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, KeyPrefix: "a#b"},
			[]string{`KeyPrefix: got "a#b"; use 1 to 1024 bytes of UTF-8 without "#" (it is the namespace before '#' in each record id): key prefix contains "#", the separator of the record id`}},
		{"key prefix too long", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, KeyPrefix: strings.Repeat("p", 1025)},
			[]string{`KeyPrefix: got "ppp`, "key prefix is 1025 bytes, longer than 1024"}},
		{"key source of unknown kind", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, KeySource: "header:Key"},
			[]string{`KeySource: got "header:Key"`, `unknown kind "header"`, `"body:<json field>"`}},
		{"key source without a name", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, KeySource: "body:"},
			[]string{`KeySource: got "body:"; the consumer refuses it (invalid key source "body:": empty body name); use "body:<json field>" or "attribute:<message attribute name>"`}},
		{"key source with a reserved attribute", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, KeySource: "attribute:AWS.TraceHeader"},
			[]string{`KeySource: got "attribute:AWS.TraceHeader"`, `attribute names starting with "AWS." or "Amazon." are reserved by SQS`}},
		{"key source group is tenant-only", consumer.IdempotentConsumerProps{Queue: fifoSpec, Table: simpleTable, KeySource: "group"},
			[]string{`KeySource: got "group"`, `use "body:<json field>" or "attribute:<message attribute name>"`}},
		// A Store other than constructs/table's (which refuses such names itself) may report
		// a sort key the consumer refuses as IDEMPOTENCY_SORT_KEY.
		{"table whose sort key is a record attribute", consumer.IdempotentConsumerProps{Queue: fifoSpec, TenantSource: "group",
			Table: &fakeTable{table: simpleTable.table, sortKey: "result_dropped"}},
			[]string{`Table: got a table with sort key "result_dropped"; the consumer refuses it as IDEMPOTENCY_SORT_KEY ` +
				`(sort key attribute "result_dropped" is one of id, expiration, in_progress_expiration, status, data, validation, owner, attempt, result_dropped: ` +
				`the key attributes need names of their own, or every write would change the record's key), so every invocation would fail; ` +
				`use a table whose sort key has another name, e.g. "sk"`}},
		{"table whose sort key is the partition key", consumer.IdempotentConsumerProps{Queue: fifoSpec, TenantSource: "group",
			Table: &fakeTable{table: simpleTable.table, sortKey: "id"}},
			[]string{`Table: got a table with sort key "id"; the consumer refuses it as IDEMPOTENCY_SORT_KEY`}},
		{"tenant without a sort key", consumer.IdempotentConsumerProps{Queue: fifoSpec, Table: simpleTable, TenantSource: "group"},
			[]string{`TenantSource: got "group"`, "needs a table with a sort key"}},
		{"tenant source form", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: compositeTable, TenantSource: "tenant"},
			[]string{`TenantSource: got "tenant"`, `or "group"`}},
		{"record TTL shorter than the lock", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, RecordTTL: 10 * time.Second},
			[]string{"RecordTTL: 10s is shorter than the lock it must outlive (Function.Timeout 30s); use at least 96h0m0s, or leave it 0 for the default 264h0m0s"}},
		{"record TTL shorter than a message can live", consumer.IdempotentConsumerProps{Queue: dlqSpec{stdSpec, 14 * 24 * time.Hour}, Table: simpleTable, RecordTTL: 48 * time.Hour},
			[]string{"RecordTTL: 48h0m0s is shorter than a message can live (the queue's retention 96h0m0s + its DLQ's 336h0m0s = 432h0m0s): " +
				"a message redriven from the DLQ after its record expired would run its effect again; use at least 432h0m0s (0 gives the default 600h0m0s, with 168h0m0s to redrive), " +
				"or set AllowShortRecordTTL and redrive only with pipelinectl, which refuses messages older than the record TTL"}},
		{"negative cache size", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, CacheSize: -1},
			[]string{"CacheSize: got -1"}},
		{"negative batch concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, BatchConcurrency: -1},
			[]string{"BatchConcurrency: got -1"}},
		{"cache size above the function's limit", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, CacheSize: 1_000_001},
			[]string{"CacheSize: got 1000001", "use 0 (off) up to 1000000 records (the consumer refuses more)"}},
		{"batch concurrency above the function's limit", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, BatchConcurrency: 10_001},
			[]string{"BatchConcurrency: got 10001", "use 1 to 10000 (the largest SQS batch; the consumer refuses more)"}},
		{"environment overriding a prop", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Environment: map[string]string{"IDEMPOTENCY_LOCK_CAP": "1h"}}},
			[]string{"Function.Environment: IDEMPOTENCY_LOCK_CAP is set by the construct from its props; set the prop instead"}},
		{"environment overriding an unset optional prop", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Environment: map[string]string{"IDEMPOTENCY_SORT_KEY": "sk"}}},
			[]string{"Function.Environment: IDEMPOTENCY_SORT_KEY is set by the construct"}},
		{"environment setting the partition key", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Environment: map[string]string{"IDEMPOTENCY_PARTITION_KEY": "pk"}}},
			[]string{"Function.Environment: IDEMPOTENCY_PARTITION_KEY is set by the construct from its props; set the prop instead"}},
		{"table whose partition key is a record attribute", consumer.IdempotentConsumerProps{Queue: stdSpec,
			Table: &fakeTable{table: simpleTable.table, partitionKey: "status"}},
			[]string{`Table: got a table with partition key "status"; the consumer refuses it as IDEMPOTENCY_PARTITION_KEY (partition key attribute "status" ` +
				`is one of expiration, in_progress_expiration, status, data, validation, owner, attempt, result_dropped: the key attributes need names of their own, ` +
				`or every write would change the record's key), so every invocation would fail; use a table whose partition key has another name, e.g. "id"`}},
		{"table whose partition key is too long", consumer.IdempotentConsumerProps{Queue: stdSpec,
			Table: &fakeTable{table: simpleTable.table, partitionKey: strings.Repeat("p", 256)}},
			[]string{"Table: got a table with partition key", "the consumer refuses it as IDEMPOTENCY_PARTITION_KEY (partition key attribute name is 256 bytes, longer than DynamoDB's 255)"}},
		{"table whose sort key is its own partition key", consumer.IdempotentConsumerProps{Queue: fifoSpec, TenantSource: "group",
			Table: &fakeTable{table: simpleTable.table, partitionKey: "pk", sortKey: "pk"}},
			[]string{`Table: got a table with sort key "pk"; the consumer refuses it as IDEMPOTENCY_SORT_KEY (sort key attribute "pk" is one of pk, expiration,`}},
		{"reserved concurrency below the event source's", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			MaxConcurrency: 20, Function: function.Options{ReservedConcurrentExecutions: 5}},
			[]string{"Function.ReservedConcurrentExecutions: 5 is below MaxConcurrency 20: the event source would be throttled, and throttled batches " +
				"return to the queue with raised receive counts, towards the dead-letter queue; reserve at least 20 or lower MaxConcurrency"}},
		{"reserved concurrency below the default event source concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{ReservedConcurrentExecutions: 9}},
			[]string{"Function.ReservedConcurrentExecutions: 9 is below MaxConcurrency 10"}},
		{"negative reserved concurrency", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{ReservedConcurrentExecutions: -1}},
			[]string{"Function.ReservedConcurrentExecutions: got -1; use 0 (none reserved)"}},
		{"subnets without a VPC", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}}},
			[]string{"Function.VpcSubnets: got a subnet selection without Vpc; set Vpc as well, or remove VpcSubnets"}},
		{"security groups without a VPC", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{SecurityGroups: make([]awsec2.ISecurityGroup, 1)}},
			[]string{"Function.SecurityGroups: got 1 security groups without Vpc; set Vpc as well, or remove SecurityGroups"}},
		{"six layers", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable, Function: function.Options{Layers: make([]awslambda.ILayerVersion, 6)}},
			[]string{"Function.Layers: got 6; use at most 5 layers (Lambda's limit)"}},
		{"architecture provided.al2023 does not run", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Architecture: awslambda.Architecture_Custom(jsii.String("riscv64"), nil)}},
			[]string{`Architecture: got "riscv64"; use awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64()`}},
		{"key source as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			KeySource: *awscdk.Token_AsString(map[string]any{"Ref": "KeySourceParam"}, nil)},
			[]string{"KeySource: got", "give the literal source: it cannot be a token"}},
		{"tenant source as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: compositeTable,
			TenantSource: *awscdk.Token_AsString(map[string]any{"Ref": "TenantParam"}, nil)},
			[]string{"TenantSource: got", "give the literal source: it cannot be a token"}},
		{"entry as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Entry: *awscdk.Token_AsString(map[string]any{"Ref": "EntryParam"}, nil)}},
			[]string{"Function.Entry: Entry and ModuleDir cannot be tokens: the function is built from them at synth; give local paths"}},
		// A CfnParameter's number converted to Go, as a user passing ValueAsNumber() does.
		{"memory size as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{MemorySize: int(*awscdk.Token_AsNumber(map[string]any{"Ref": "MemoryParam"}))}},
			[]string{"Function.MemorySize: got a CloudFormation token", "MemorySize cannot be a token", "AddPropertyOverride"}},
		{"batch size as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			BatchSize: int(*awscdk.Token_AsNumber(map[string]any{"Ref": "BatchParam"}))},
			[]string{"BatchSize: got a CloudFormation token", "BatchSize cannot be a token"}},
		{"maximum concurrency as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			MaxConcurrency: int(*awscdk.Token_AsNumber(map[string]any{"Ref": "ConcurrencyParam"}))},
			[]string{"MaxConcurrency: got a CloudFormation token", "MaxConcurrency cannot be a token"}},
		{"timeout as a token", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Timeout: time.Duration(*awscdk.Token_AsNumber(map[string]any{"Ref": "TimeoutParam"}) * float64(time.Second))}},
			[]string{"Function.Timeout: got a CloudFormation token", "Timeout cannot be a token"}},
		{"environment with a Lambda-reserved name", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Environment: map[string]string{"AWS_REGION": "us-east-1"}}},
			[]string{"Function.Environment: AWS_REGION is reserved by the Lambda runtime"}},
		{"environment with an invalid name", consumer.IdempotentConsumerProps{Queue: stdSpec, Table: simpleTable,
			Function: function.Options{Environment: map[string]string{"1-BAD": "x"}}},
			[]string{`Environment: "1-BAD" is not a valid variable name`}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			cdktest.ExpectProblem(t, build(fmt.Sprintf("Invalid%d", i), &props), tt.want...)
		})
	}
}

// Every problem is reported at once, not just the first.
func TestValidationCollectsEveryProblem(t *testing.T) {
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("expected a *validate.Error")
		}
		if len(verr.Problems) != 3 {
			t.Fatalf("want 3 problems, got %d:\n%s", len(verr.Problems), verr)
		}
		if verr.Construct != `IdempotentConsumer "Fixture/Many"` {
			t.Errorf("construct = %q", verr.Construct)
		}
	}()
	build("Many", &consumer.IdempotentConsumerProps{
		Queue: stdSpec, Table: simpleTable, Function: function.Options{MemorySize: 1}, MaxConcurrency: 1, CacheSize: -5,
	})()
}

func TestNilPropsNameBothRequiredProps(t *testing.T) {
	cdktest.ExpectProblem(t, func() { consumer.NewIdempotentConsumer(stack, "Nil", nil) }, "Queue: got nil")
	cdktest.ExpectProblem(t, func() { consumer.NewIdempotentConsumer(stack, "Nil", nil) }, "Table: got nil")
}
