package queue

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// expectProps fails unless the resource with logical id matches want (objectLike): the
// template is searched with the matcher, and id must be among the results.
func expectProps(t *testing.T, f *fixture, what, id string, want map[string]any) {
	t.Helper()
	if !contains(findIDs(f.tmpl, "AWS::SQS::Queue", assertions.Match_ObjectLike(&want)), id) {
		t.Errorf("%s: %s %s does not match %s; it has:\n%s", f.name, what, id, cdktest.JSON(want), cdktest.JSON(resource(t, f.tmpl, id, "AWS::SQS::Queue")))
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestResourceCounts(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			cdktest.Must(t, "queues", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(2)) })
			cdktest.Must(t, "queue policies", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::SQS::QueuePolicy"), jsii.Number(2)) })
			keys := 0
			if f.props != nil && f.props.EncryptionKey != nil {
				keys = 1 // the fixture's own key; the construct creates none
			}
			cdktest.Must(t, "keys", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(float64(keys))) })
		})
	}
}

func TestQueueProperties(t *testing.T) {
	absent := assertions.Match_Absent()
	kmsKeyArn := kms.stack.Resolve(key.KeyArn())
	tests := []struct {
		f        *fixture
		src, dlq map[string]any
	}{{
		f: &standard,
		src: map[string]any{
			"VisibilityTimeout":         180, // 6 x the default 30 s consumer timeout
			"MessageRetentionPeriod":    345600,
			"SqsManagedSseEnabled":      true,
			"KmsMasterKeyId":            absent,
			"FifoQueue":                 absent,
			"ContentBasedDeduplication": absent,
			"RedrivePolicy":             map[string]any{"maxReceiveCount": 5},
			"MaximumMessageSize":        262144, // stated: the consumer's MAX_BODY_BYTES is this
		},
		dlq: map[string]any{
			"MessageRetentionPeriod": 1209600,
			"SqsManagedSseEnabled":   true,
			"FifoQueue":              absent,
			"QueueName":              absent,
			"RedrivePolicy":          absent,
			"MaximumMessageSize":     262144,
		},
	}, {
		f: &fifo,
		src: map[string]any{
			"FifoQueue":                 true,
			"QueueName":                 "orders.fifo",
			"VisibilityTimeout":         360,
			"MessageRetentionPeriod":    172800,
			"ContentBasedDeduplication": true,
			"DeduplicationScope":        "messageGroup",
			"FifoThroughputLimit":       "perMessageGroupId",
			"SqsManagedSseEnabled":      true,
			"RedrivePolicy":             map[string]any{"maxReceiveCount": 3},
		},
		dlq: map[string]any{
			"FifoQueue":                 true,
			"MessageRetentionPeriod":    86400,
			"ContentBasedDeduplication": absent,
			"DeduplicationScope":        "messageGroup",
			"FifoThroughputLimit":       "perMessageGroupId",
			"SqsManagedSseEnabled":      true,
			"RedrivePolicy":             absent,
		},
	}, {
		f: &kms,
		src: map[string]any{
			"QueueName":              kms.stack.Resolve(nameParam.ValueAsString()),
			"VisibilityTimeout":      900,
			"MessageRetentionPeriod": 604800,
			"KmsMasterKeyId":         kmsKeyArn,
			"SqsManagedSseEnabled":   absent,
			"FifoQueue":              absent,
			"MaximumMessageSize":     1048576,
		},
		dlq: map[string]any{
			"MessageRetentionPeriod": 1209600,
			"KmsMasterKeyId":         kmsKeyArn,
			"SqsManagedSseEnabled":   absent,
			"MaximumMessageSize":     1048576, // the DLQ takes what the source does: bad input is copied there
		},
	}, {
		f:   &derived,
		src: map[string]any{"FifoQueue": true, "VisibilityTimeout": 180, "RedrivePolicy": map[string]any{"maxReceiveCount": 5}},
		dlq: map[string]any{"FifoQueue": true, "MessageRetentionPeriod": 1209600, "DeduplicationScope": absent},
	}}
	for _, tt := range tests {
		t.Run(tt.f.name, func(t *testing.T) {
			expectProps(t, tt.f, "source queue", cdktest.LogicalID(tt.f.stack, tt.f.q.Queue()), tt.src)
			expectProps(t, tt.f, "DLQ", cdktest.LogicalID(tt.f.stack, tt.f.q.DeadLetterQueue()), tt.dlq)
		})
	}
}

// The source's redrive policy points at the construct's DLQ, found by what makes it the DLQ
// (the queue with a redrive-allow policy), not by a hashed id.
func TestRedrivePolicyTargetsDeadLetterQueue(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			target := assertions.NewCapture(nil)
			cdktest.Must(t, "redrive policy", func() {
				f.tmpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
					"RedrivePolicy": map[string]any{"deadLetterTargetArn": target, "maxReceiveCount": f.q.MaxReceiveCount()},
				})
			})
			if t.Failed() {
				return
			}
			targetID := getAttTarget(*target.AsObject(), "Arn")
			dlqs := findIDs(f.tmpl, "AWS::SQS::Queue", assertions.Match_ObjectLike(&map[string]any{
				"RedriveAllowPolicy": assertions.Match_AnyValue(),
			}))
			if len(dlqs) != 1 || dlqs[0] != targetID {
				t.Errorf("deadLetterTargetArn %s resolves to %q; the queues with a redrive-allow policy are %v", cdktest.JSON(*target.AsObject()), targetID, dlqs)
			}
			if want := cdktest.LogicalID(f.stack, f.q.DeadLetterQueue()); targetID != want {
				t.Errorf("redrive target %q is not DeadLetterQueue() (%s)", targetID, want)
			}
		})
	}
}

// The DLQ, which may hold the only copy of failed work, outlives the stack unless told
// otherwise; the source queue is deleted with it.
func TestDeadLetterQueueIsRetained(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			want := "Retain"
			if f.props != nil && f.props.DeadLetterRemovalPolicy == awscdk.RemovalPolicy_DESTROY {
				want = "Delete"
			}
			queues := *f.tmpl.FindResources(jsii.String("AWS::SQS::Queue"), nil)
			dlq, src := cdktest.LogicalID(f.stack, f.q.DeadLetterQueue()), cdktest.LogicalID(f.stack, f.q.Queue())
			if got := (*queues[dlq])["DeletionPolicy"]; got != want {
				t.Errorf("DLQ DeletionPolicy %v, want %s", got, want)
			}
			if got := (*queues[src])["DeletionPolicy"]; got != "Delete" {
				t.Errorf("source queue DeletionPolicy %v, want Delete", got)
			}
		})
	}
}

// The DLQ admits exactly the source queue: its ARN, composed from the source's name.
func TestRedriveAllowPolicyAdmitsOnlyTheSource(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			src := resource(t, f.tmpl, cdktest.LogicalID(f.stack, f.q.Queue()), "AWS::SQS::Queue")
			dlq := resource(t, f.tmpl, cdktest.LogicalID(f.stack, f.q.DeadLetterQueue()), "AWS::SQS::Queue")
			policy, _ := dlq["RedriveAllowPolicy"].(map[string]any)
			if policy["redrivePermission"] != "byQueue" {
				t.Errorf("redrivePermission = %v, want byQueue", policy["redrivePermission"])
			}
			arns, _ := policy["sourceQueueArns"].([]any)
			if len(arns) != 1 {
				t.Fatalf("sourceQueueArns = %s, want exactly the source queue", cdktest.JSON(policy["sourceQueueArns"]))
			}
			want := "arn:aws:sqs:eu-west-1:123456789012:" + flatten(src["QueueName"])
			if got := flatten(arns[0]); got != want {
				t.Errorf("sourceQueueArns[0] = %s, want %s", got, want)
			}
		})
	}
}

func TestEnforceSSLOnBothQueues(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			for what, q := range map[string]string{"source": cdktest.LogicalID(f.stack, f.q.Queue()), "DLQ": cdktest.LogicalID(f.stack, f.q.DeadLetterQueue())} {
				found := findIDs(f.tmpl, "AWS::SQS::QueuePolicy", assertions.Match_ObjectLike(&map[string]any{
					"Queues": []any{map[string]any{"Ref": q}},
					"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{
						"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
							"Effect":    "Deny",
							"Action":    "sqs:*",
							"Principal": map[string]any{"AWS": "*"},
							"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
							"Resource":  map[string]any{"Fn::GetAtt": []any{q, "Arn"}},
						})}),
					}),
				}))
				if len(found) != 1 {
					t.Errorf("%s queue %s: want one queue policy denying non-TLS requests, found %d", what, q, len(found))
				}
			}
		})
	}
}

// Encryption: SSE-SQS without a key; with a key, both queues use it (and it is a KMS key in
// the template, not a stray reference).
func TestEncryptionKeyOnBothQueues(t *testing.T) {
	keys := findIDs(kms.tmpl, "AWS::KMS::Key", assertions.Match_AnyValue())
	for _, q := range []string{cdktest.LogicalID(kms.stack, kms.q.Queue()), cdktest.LogicalID(kms.stack, kms.q.DeadLetterQueue())} {
		got := getAttTarget(resource(t, kms.tmpl, q, "AWS::SQS::Queue")["KmsMasterKeyId"], "Arn")
		if len(keys) != 1 || got != keys[0] {
			t.Errorf("queue %s KmsMasterKeyId resolves to %q; the template's keys are %v", q, got, keys)
		}
	}
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		f          *fixture
		fifo       bool
		visibility time.Duration
		retention  time.Duration
		receives   int
		dlq        time.Duration
	}{
		{&standard, false, 3 * time.Minute, 4 * 24 * time.Hour, 5, 14 * 24 * time.Hour},
		{&fifo, true, 6 * time.Minute, 2 * 24 * time.Hour, 3, 24 * time.Hour},
		{&kms, false, 15 * time.Minute, 7 * 24 * time.Hour, 5, 14 * 24 * time.Hour},
		{&derived, true, 3 * time.Minute, 4 * 24 * time.Hour, 5, 14 * 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.f.name, func(t *testing.T) {
			q := tt.f.q
			if got := q.DeadLetterRetentionPeriod(); got != tt.dlq {
				t.Errorf("DeadLetterRetentionPeriod = %v, want %v", got, tt.dlq)
			}
			if want := map[*fixture]int{&kms: 1 << 20}[tt.f]; q.MaxMessageSize() != max(want, DefaultMaxMessageSize) {
				t.Errorf("MaxMessageSize = %d, want %d", q.MaxMessageSize(), max(want, DefaultMaxMessageSize))
			}
			if q.Fifo() != tt.fifo || q.VisibilityTimeout() != tt.visibility || q.RetentionPeriod() != tt.retention || q.MaxReceiveCount() != tt.receives {
				t.Errorf("Fifo, VisibilityTimeout, RetentionPeriod, MaxReceiveCount = %v, %v, %v, %d; want %v, %v, %v, %d",
					q.Fifo(), q.VisibilityTimeout(), q.RetentionPeriod(), q.MaxReceiveCount(), tt.fifo, tt.visibility, tt.retention, tt.receives)
			}
			if id := *q.Queue().Node().Id(); id != "Resource" {
				t.Errorf("Queue() construct id = %q, want Resource", id)
			}
			if id := *q.DeadLetterQueue().Node().Id(); id != "DeadLetterQueue" {
				t.Errorf("DeadLetterQueue() construct id = %q, want DeadLetterQueue", id)
			}
			if q.Queue().Fifo() == nil || *q.Queue().Fifo() != tt.fifo || *q.DeadLetterQueue().Fifo() != tt.fifo {
				t.Errorf("IQueue.Fifo() of source/DLQ does not match %v", tt.fifo)
			}
		})
	}
}

// Without QueueName the source queue still gets a physical name (the redrive-allow policy
// needs it): readable, unique per stack and path, within SQS's rules.
func TestDerivedQueueNames(t *testing.T) {
	tests := []struct {
		f       *fixture
		pattern string
	}{
		{&standard, `^Standard-Orders-[A-Za-z0-9_-]+$`},
		{&derived, `^DerivedName[A-Za-z0-9_-]+\.fifo$`},
	}
	for _, tt := range tests {
		t.Run(tt.f.name, func(t *testing.T) {
			name, ok := resource(t, tt.f.tmpl, cdktest.LogicalID(tt.f.stack, tt.f.q.Queue()), "AWS::SQS::Queue")["QueueName"].(string)
			if !ok {
				t.Fatal("source queue has no literal QueueName")
			}
			if !regexp.MustCompile(tt.pattern).MatchString(name) || len(name) > maxQueueNameLength {
				t.Errorf("QueueName %q (%d characters) does not match %s within %d characters", name, len(name), tt.pattern, maxQueueNameLength)
			}
			// The stack name and path are longer than the limit, so the middle is trimmed.
			if tt.f == &derived && (strings.Contains(name, *tt.f.stack.StackName()) || len(name) > maxQueueNameLength) {
				t.Errorf("QueueName %q should be trimmed in the middle to at most %d characters", name, maxQueueNameLength)
			}
		})
	}
}

// checkov's CKV_AWS_27 wants a KMS key: both queues record it as skipped, with the reason,
// only while they use SSE-SQS; with a customer managed key the check runs as usual.
func TestCheckovSkipOnlyWithSQSManagedEncryption(t *testing.T) {
	for _, f := range fixtures {
		withKey := f.props != nil && f.props.EncryptionKey != nil
		for _, q := range []string{cdktest.LogicalID(f.stack, f.q.Queue()), cdktest.LogicalID(f.stack, f.q.DeadLetterQueue())} {
			got := cdktest.CheckovSkips(f.tmpl, q)
			want := []string{"CKV_AWS_27"}
			if withKey {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: queue %s checkov skips = %v, want %v", f.name, q, got, want)
			}
		}
	}
}
