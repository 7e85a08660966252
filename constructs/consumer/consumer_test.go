package consumer_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

// The fixture: one app with cdk-nag attached, one stack, synthesized once in TestMain.
var (
	app      awscdk.App
	stack    awscdk.Stack
	template assertions.Template

	// standard takes every default. fifo: a FIFO queue, a composite-key table and the tenant
	// from the message group. tuned: a standard queue with most props set, dead-lettering off.
	// spiky: provisioned mode (pollers) instead of a maximum concurrency, on a fair queue
	// whose message group is the tenant.
	standard, fifo, tuned, spiky                     consumer.IdempotentConsumer
	standardQueue, fifoQueue, tunedQueue, spikyQueue *fakeQueue
	simpleTable, compositeTable                      *fakeTable
	logKey                                           awskms.Key // tuned's log group key
	importedKeyStack                                 awscdk.Stack
)

func TestMain(m *testing.M) {
	app = cdktest.NewApp()
	cdktest.AddNagPacks(app)
	stack = cdktest.NewStack(app, "Fixture")

	simpleTable = newFakeTable(stack, "SimpleTable", "")
	compositeTable = newFakeTable(stack, "CompositeTable", "key")
	standardQueue = newFakeQueue(stack, "StandardQueue", false, 3*time.Minute, 4*24*time.Hour)
	fifoQueue = newFakeQueue(stack, "FifoQueue", true, 6*time.Minute, 14*24*time.Hour)
	tunedQueue = newFakeQueue(stack, "TunedQueue", false, 10*time.Minute, 7*24*time.Hour)
	fifoQueue.maxMessage, tunedQueue.maxMessage = 1<<20, 1<<20 // SQS's largest: the consumer takes what the queue takes

	standard = consumer.NewIdempotentConsumer(stack, "Standard", &consumer.IdempotentConsumerProps{
		Queue: standardQueue, Table: simpleTable,
	})
	fifo = consumer.NewIdempotentConsumer(stack, "Fifo", &consumer.IdempotentConsumerProps{
		Queue: fifoQueue, Table: compositeTable,
		Function: function.Options{Timeout: time.Minute, Environment: map[string]string{"LOG_LEVEL": "DEBUG", "FEATURE_X": "on"}}, BatchSize: 5, TenantSource: "group", KeySource: "attribute:IdempotencyKey",
	})
	logKey = awskms.NewKey(stack, jsii.String("LogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	tuned = consumer.NewIdempotentConsumer(stack, "Tuned", &consumer.IdempotentConsumerProps{
		Function: function.Options{
			LogGroupEncryptionKey: logKey, Timeout: 90 * time.Second, MemorySize: 1024,
			LogRetention: awslogs.RetentionDays_TWO_WEEKS, LogRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
			Environment: map[string]string{"MAX_BODY_BYTES": "65536"}, // below the queue's: the user's wins
		},
		Queue: tunedQueue, Table: simpleTable,
		BatchSize: 100, MaxBatchingWindow: 5 * time.Second,
		MaxConcurrency: 50, KeyPrefix: "orders-v2", RecordTTL: 48 * time.Hour, AllowShortRecordTTL: true, DisablePayloadValidation: true,
		CacheSize: 500, BatchConcurrency: 25,
		DisableDeadLettering: true, DisableMappingMetrics: true,
	})

	spikyQueue = newFakeQueue(stack, "SpikyQueue", false, 3*time.Minute, 4*24*time.Hour)
	spiky = consumer.NewIdempotentConsumer(stack, "Spiky", &consumer.IdempotentConsumerProps{
		Queue: spikyQueue, Table: compositeTable, TenantSource: "group", ProvisionedPollers: &consumer.ProvisionedPollers{Minimum: 5, Maximum: 50},
	})

	// A key imported into the app: CDK cannot add to its policy, so synth warns.
	importedKeyStack = cdktest.NewStack(app, "ImportedLogKey")
	consumer.NewIdempotentConsumer(importedKeyStack, "Orders", &consumer.IdempotentConsumerProps{
		Queue: newFakeQueue(importedKeyStack, "Queue", false, 3*time.Minute, 4*24*time.Hour), Table: newFakeTable(importedKeyStack, "Table", ""),
		Function: function.Options{LogGroupEncryptionKey: awskms.Key_FromKeyArn(importedKeyStack, jsii.String("Key"), jsii.String("arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"))},
	})

	template = assertions.Template_FromStack(stack, nil)
	os.Exit(jsiitest.Run(m))
}

func getAtt(c constructs.IConstruct, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(stack, c), attr}}
}

func ref(c constructs.IConstruct) map[string]any {
	return map[string]any{"Ref": cdktest.LogicalID(stack, c)}
}

func TestFunctionProperties(t *testing.T) {
	tests := []struct {
		name    string
		c       consumer.IdempotentConsumer
		timeout int
		memory  int
	}{
		{"standard", standard, 30, 256},
		{"fifo", fifo, 60, 256},
		{"tuned", tuned, 90, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := template.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Properties": map[string]any{
					"Architectures": []any{"arm64"},
					"Runtime":       "provided.al2023",
					"Handler":       "bootstrap",
					"Timeout":       tt.timeout,
					"MemorySize":    tt.memory,
					"TracingConfig": map[string]any{"Mode": "Active"},
					"Role":          getAtt(tt.c.Role(), "Arn"),
					"LoggingConfig": map[string]any{"LogGroup": ref(tt.c.LogGroup())},
				},
			})
			if _, ok := (*res)[cdktest.LogicalID(stack, tt.c.Function())]; !ok || len(*res) != 1 {
				t.Fatalf("function %s with these properties not found (matches: %d)", cdktest.LogicalID(stack, tt.c.Function()), len(*res))
			}
		})
	}
	// The construct value itself is the jsii construct: it can be passed where CDK expects one.
	if got := *awscdk.Stack_Of(standard).StackName(); got != "Fixture" {
		t.Errorf("Stack.Of(consumer) = %q", got)
	}
	if got := standard.Timeout(); got != consumer.DefaultTimeout {
		t.Errorf("Timeout() = %v, want the default %v", got, consumer.DefaultTimeout)
	}
}

func TestEnvironmentIsTheContract(t *testing.T) {
	tests := []struct {
		name string
		c    consumer.IdempotentConsumer
		want map[string]any
	}{
		{"defaults", standard, map[string]any{
			"DEAD_LETTER_QUEUE_URL":        ref(standardQueue.dlq),
			"IDEMPOTENCY_PARTITION_KEY":    "id",
			"IDEMPOTENCY_TABLE_NAME":       ref(simpleTable.table),
			"IDEMPOTENCY_KEY_PREFIX":       "Standard",
			"IDEMPOTENCY_KEY_SOURCE":       "body:idempotencyKey",
			"IDEMPOTENCY_RECORD_TTL":       "600h0m0s", // the queue's 4 days + the DLQ's 14 + 7 to redrive
			"IDEMPOTENCY_LOCK_CAP":         "30s",
			"IDEMPOTENCY_VALIDATE_PAYLOAD": "true",
			"IDEMPOTENCY_CACHE_SIZE":       "0",
			"IDEMPOTENCY_DISABLED":         "false",
			"BATCH_CONCURRENCY":            "10",
			"BATCH_DEADLINE_MARGIN":        "2s",
			"MAX_BODY_BYTES":               "262144",
			"METRICS_NAMESPACE":            "IdempotentSQS",
			"LOG_LEVEL":                    "INFO",
		}},
		{"fifo composite key, extra variables", fifo, map[string]any{
			"DEAD_LETTER_QUEUE_URL":        ref(fifoQueue.dlq),
			"IDEMPOTENCY_PARTITION_KEY":    "id",
			"IDEMPOTENCY_TABLE_NAME":       ref(compositeTable.table),
			"IDEMPOTENCY_KEY_PREFIX":       "Fifo",
			"IDEMPOTENCY_KEY_SOURCE":       "attribute:IdempotencyKey",
			"IDEMPOTENCY_SORT_KEY":         "key",
			"IDEMPOTENCY_TENANT_SOURCE":    "group",
			"IDEMPOTENCY_RECORD_TTL":       "840h0m0s", // 14 + 14 + 7 days
			"IDEMPOTENCY_LOCK_CAP":         "1m0s",
			"IDEMPOTENCY_VALIDATE_PAYLOAD": "true",
			"IDEMPOTENCY_CACHE_SIZE":       "0",
			"IDEMPOTENCY_DISABLED":         "false",
			"BATCH_CONCURRENCY":            "10",
			"BATCH_DEADLINE_MARGIN":        "2s",
			"MAX_BODY_BYTES":               "1048576", // the queue's MaxMessageSize
			"METRICS_NAMESPACE":            "IdempotentSQS",
			"LOG_LEVEL":                    "DEBUG",
			"FEATURE_X":                    "on",
		}},
		{"tuned", tuned, map[string]any{
			"IDEMPOTENCY_PARTITION_KEY":    "id",
			"IDEMPOTENCY_TABLE_NAME":       ref(simpleTable.table),
			"IDEMPOTENCY_KEY_PREFIX":       "orders-v2",
			"IDEMPOTENCY_KEY_SOURCE":       "body:idempotencyKey",
			"IDEMPOTENCY_RECORD_TTL":       "48h0m0s",
			"IDEMPOTENCY_LOCK_CAP":         "1m30s",
			"IDEMPOTENCY_VALIDATE_PAYLOAD": "false",
			"IDEMPOTENCY_CACHE_SIZE":       "500",
			"IDEMPOTENCY_DISABLED":         "false",
			"BATCH_CONCURRENCY":            "25",
			"BATCH_DEADLINE_MARGIN":        "2s",
			"MAX_BODY_BYTES":               "65536", // Environment wins over the queue's 1 MiB
			"METRICS_NAMESPACE":            "IdempotentSQS",
			"LOG_LEVEL":                    "INFO",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := template.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{
				"Properties": map[string]any{
					"Environment": map[string]any{"Variables": assertions.Match_ObjectEquals(&tt.want)},
				},
			})
			if _, ok := (*res)[cdktest.LogicalID(stack, tt.c.Function())]; !ok {
				t.Fatalf("function %s does not have exactly the expected environment", cdktest.LogicalID(stack, tt.c.Function()))
			}
		})
	}
}

// eventCount is the mapping's MetricsConfig by default: the only kind Lambda has for SQS.
var eventCount = map[string]any{"Metrics": []any{"EventCount"}}

func TestEventSourceMapping(t *testing.T) {
	tests := []struct {
		name        string
		c           consumer.IdempotentConsumer
		queue       *fakeQueue
		batchSize   int
		window      any
		concurrency int
		pollers     any
		metrics     any
	}{
		{"standard defaults", standard, standardQueue, 10, assertions.Match_Absent(), 10, assertions.Match_Absent(), eventCount},
		{"fifo", fifo, fifoQueue, 5, assertions.Match_Absent(), 10, assertions.Match_Absent(), eventCount},
		// DisableMappingMetrics: no MetricsConfig.
		{"tuned", tuned, tunedQueue, 100, 5, 50, assertions.Match_Absent(), assertions.Match_Absent()},
		// Provisioned mode: the pollers, and no maximum concurrency (Lambda takes one or the other).
		{"provisioned pollers", spiky, spikyQueue, 10, assertions.Match_Absent(), 0, map[string]any{"MinimumPollers": 5, "MaximumPollers": 50}, eventCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := assertions.NewCapture(nil)
			var scaling any = map[string]any{"MaximumConcurrency": tt.concurrency}
			if tt.concurrency == 0 {
				scaling = assertions.Match_Absent()
			}
			template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
				"FunctionName":                   ref(tt.c.Function()),
				"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
				"BatchSize":                      tt.batchSize,
				"MaximumBatchingWindowInSeconds": tt.window,
				"ScalingConfig":                  scaling,
				"ProvisionedPollerConfig":        tt.pollers,
				"MetricsConfig":                  tt.metrics,
				"EventSourceArn":                 source,
			})
			got := fmt.Sprint(*source.AsObject())
			if want := fmt.Sprint(getAtt(tt.queue.queue, "Arn")); got != want {
				t.Errorf("EventSourceArn = %s, want the queue's %s", got, want)
			}
			if tt.c.BatchSize() != tt.batchSize || tt.c.MaxConcurrency() != tt.concurrency {
				t.Errorf("getters: BatchSize %d MaxConcurrency %d", tt.c.BatchSize(), tt.c.MaxConcurrency())
			}
		})
	}
}

// policyStatements returns the statements of the default policy attached to c's role.
func policyStatements(t *testing.T, c consumer.IdempotentConsumer) []map[string]any {
	t.Helper()
	res := template.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Properties": map[string]any{"Roles": []any{ref(c.Role())}},
	})
	if len(*res) != 1 {
		t.Fatalf("want one policy on %s, got %d", cdktest.LogicalID(stack, c.Role()), len(*res))
	}
	var out []map[string]any
	for _, p := range *res {
		doc := (*p)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func actions(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			out = append(out, v.(string))
		}
		return out
	}
	return nil
}

func TestPermissions(t *testing.T) {
	statements := policyStatements(t, standard)
	want := []struct {
		actions  []string
		resource any
	}{
		{[]string{"dynamodb:UpdateItem"}, getAtt(simpleTable.table, "Arn")},
		{[]string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}, getAtt(standardQueue.queue, "Arn")},
		{[]string{"logs:CreateLogStream", "logs:PutLogEvents"}, getAtt(standard.LogGroup(), "Arn")},
		{[]string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "*"},
		// Dead-lettering: records that can never succeed go to the DLQ at once.
		{[]string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}, getAtt(standardQueue.dlq, "Arn")},
	}
	for _, w := range want {
		found := false
		for _, s := range statements {
			if s["Effect"] == "Allow" && fmt.Sprint(actions(s)) == fmt.Sprint(w.actions) && fmt.Sprint(s["Resource"]) == fmt.Sprint(w.resource) {
				found = true
			}
		}
		if !found {
			t.Errorf("no statement allows %v on %v; statements: %v", w.actions, w.resource, statements)
		}
	}
	if len(statements) != len(want) {
		t.Errorf("want exactly %d statements, got %d: %v", len(want), len(statements), statements)
	}

	// No wildcard action anywhere in the fixture, and no managed policy on any role.
	for id, p := range *template.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := (*p)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			for _, a := range actions(s.(map[string]any)) {
				if strings.Contains(a, "*") {
					t.Errorf("%s allows wildcard action %s", id, a)
				}
			}
		}
	}
	template.AllResourcesProperties(jsii.String("AWS::IAM::Role"), map[string]any{"ManagedPolicyArns": assertions.Match_Absent()})

	// DisableDeadLettering: no send permission on the DLQ (and no variable, see
	// TestEnvironmentIsTheContract).
	for _, s := range policyStatements(t, tuned) {
		if slices.Contains(actions(s), "sqs:SendMessage") {
			t.Errorf("tuned (DisableDeadLettering) may send messages: %v", s)
		}
	}
}

func TestLogGroups(t *testing.T) {
	template.HasResource(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"Properties":     map[string]any{"RetentionInDays": 30},
		"DeletionPolicy": "Retain",
	})
	res := template.FindResources(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"Properties":     map[string]any{"RetentionInDays": 14},
		"DeletionPolicy": "Delete",
	})
	if _, ok := (*res)[cdktest.LogicalID(stack, tuned.LogGroup())]; !ok {
		t.Errorf("tuned log group: want 14-day retention and DeletionPolicy Delete")
	}
	res = template.FindResources(jsii.String("AWS::Logs::LogGroup"), map[string]any{
		"Properties": map[string]any{"RetentionInDays": 30}, "DeletionPolicy": "Retain",
	})
	if _, ok := (*res)[cdktest.LogicalID(stack, standard.LogGroup())]; !ok {
		t.Errorf("standard log group: want one-month retention, retained")
	}
}

func TestNag(t *testing.T) {
	for _, finding := range cdktest.NagFindings(stack) {
		t.Errorf("unsuppressed cdk-nag finding at %s", finding)
	}
}

// LogGroupEncryptionKey encrypts the log group with the key, whose policy lets CloudWatch
// Logs use it for this account's log groups; that log group carries no checkov skip and no
// CloudWatchLogGroupEncrypted suppression, which the others (CloudWatch Logs' own key) do.
func TestLogGroupEncryptionKey(t *testing.T) {
	keyID := cdktest.LogicalID(stack, logKey)
	cdktest.Must(t, "log group under the key", func() {
		template.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{
			"KmsKeyId": map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}},
		})
	})
	// For this log group only: CloudFormation names it <stack name>-<logical id>-<suffix>.
	logGroupID := cdktest.LogicalID(stack, tuned.LogGroup())
	cdktest.Must(t, "the key lets CloudWatch Logs use it for tuned's log group", func() {
		template.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
			"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Principal": map[string]any{"Service": "logs.eu-west-1.amazonaws.com"}, // the test stack's region
				"Condition": map[string]any{"ArnLike": map[string]any{"kms:EncryptionContext:aws:logs:arn": map[string]any{"Fn::Join": []any{"", []any{
					"arn:", map[string]any{"Ref": "AWS::Partition"}, ":logs:eu-west-1:123456789012:log-group:" + *stack.StackName() + "-" + logGroupID + "-*",
				}}}}},
			})})},
		})
	})
	for _, c := range []struct {
		name  string
		c     consumer.IdempotentConsumer
		keyed bool
	}{{"standard", standard, false}, {"tuned", tuned, true}} {
		id := cdktest.LogicalID(stack, c.c.LogGroup())
		skips := cdktest.CheckovSkips(template, id)
		if hasSkip := slices.ContainsFunc(skips, func(s string) bool { return strings.HasPrefix(s, "CKV_AWS_158") }); hasSkip == c.keyed {
			t.Errorf("%s log group: checkov skips %v; want CKV_AWS_158 skipped only without a key", c.name, skips)
		}
	}
}

// An imported LogGroupEncryptionKey has a policy CDK cannot change: synth warns what it must
// allow, or the log group's creation fails at deploy.
func TestImportedLogGroupKeyWarns(t *testing.T) {
	cdktest.Must(t, "warning", func() {
		assertions.Annotations_FromStack(importedKeyStack).HasWarning(jsii.String("/ImportedLogKey/Orders"),
			assertions.Match_StringLikeRegexp(jsii.String("LogGroupEncryptionKey is an imported key: its key policy must let logs.<region>.amazonaws.com use it")))
	})
}
