package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// One case per validation message: each names the prop, the value and the fix.
func TestValidation(t *testing.T) {
	tests := []struct {
		name  string
		props ProcessingQueueProps
		want  []string
	}{
		{"fifo suffix on a standard queue", ProcessingQueueProps{QueueName: "orders.fifo"},
			[]string{"QueueName", `"orders.fifo"`, "set Fifo: true or drop the suffix"}},
		{"name too long", ProcessingQueueProps{QueueName: strings.Repeat("q", 81)},
			[]string{"QueueName", "(81 characters)", "at most 80 characters, .fifo included"}},
		{"fifo name too long with suffix", ProcessingQueueProps{Fifo: true, QueueName: strings.Repeat("q", 76)},
			[]string{"QueueName", "(81 characters)", "at most 80"}},
		{"only the suffix", ProcessingQueueProps{Fifo: true, QueueName: ".fifo"},
			[]string{"QueueName", `".fifo"`, "at least one character before .fifo"}},
		{"bad characters", ProcessingQueueProps{QueueName: "orders.eu"},
			[]string{"QueueName", `"orders.eu"`, "only letters, digits, '-' and '_'"}},
		{"consumer timeout too long", ProcessingQueueProps{ConsumerTimeout: 16 * time.Minute},
			[]string{"ConsumerTimeout", "got 16m0s", "between 1s and 15m0s"}},
		{"negative consumer timeout", ProcessingQueueProps{ConsumerTimeout: -time.Second},
			[]string{"ConsumerTimeout", "got -1s", "between 1s and 15m0s"}},
		{"fractional consumer timeout", ProcessingQueueProps{ConsumerTimeout: 1500 * time.Millisecond},
			[]string{"ConsumerTimeout", "got 1.5s", "whole seconds"}},
		{"visibility timeout above 12h", ProcessingQueueProps{VisibilityTimeout: 13 * time.Hour},
			[]string{"VisibilityTimeout", "got 13h0m0s", "between 1s and 12h0m0s"}},
		{"visibility timeout below 6x consumer", ProcessingQueueProps{ConsumerTimeout: time.Minute, VisibilityTimeout: 5 * time.Minute},
			[]string{"VisibilityTimeout", "got 5m0s", "at least 6 x ConsumerTimeout (1m0s) = 6m0s"}},
		{"retention too short", ProcessingQueueProps{RetentionPeriod: 30 * time.Second},
			[]string{"RetentionPeriod", "got 30s", "between 1m0s and 336h0m0s"}},
		{"dlq retention too long", ProcessingQueueProps{DeadLetterRetentionPeriod: 15 * 24 * time.Hour},
			[]string{"DeadLetterRetentionPeriod", "got 360h0m0s", "between 1m0s and 336h0m0s"}},
		{"dlq retention not longer on a standard queue", ProcessingQueueProps{RetentionPeriod: 14 * 24 * time.Hour},
			[]string{"DeadLetterRetentionPeriod", "got 336h0m0s, not longer than RetentionPeriod 336h0m0s", "original enqueue time", "raise DeadLetterRetentionPeriod"}},
		{"message size above SQS's 1 MiB", ProcessingQueueProps{MaxMessageSize: 1<<20 + 1},
			[]string{"MaxMessageSize: got 1048577; SQS takes 1024 to 1048576 bytes (1 KiB to 1 MiB; 0 means the default, 262144)"}},
		{"message size below 1 KiB", ProcessingQueueProps{MaxMessageSize: 1023},
			[]string{"MaxMessageSize: got 1023; SQS takes 1024 to 1048576 bytes"}},
		{"max receive count too high", ProcessingQueueProps{MaxReceiveCount: 1001},
			[]string{"MaxReceiveCount", "got 1001", "must be 1 to 1000"}},
		{"negative max receive count", ProcessingQueueProps{MaxReceiveCount: -1},
			[]string{"MaxReceiveCount", "got -1", "must be 1 to 1000"}},
		{"content-based deduplication on a standard queue", ProcessingQueueProps{ContentBasedDeduplication: true},
			[]string{"ContentBasedDeduplication", "got true", "only FIFO queues deduplicate"}},
		{"snapshot removal policy", ProcessingQueueProps{DeadLetterRemovalPolicy: awscdk.RemovalPolicy_SNAPSHOT},
			[]string{`DeadLetterRemovalPolicy: got "SNAPSHOT"; use awscdk.RemovalPolicy_RETAIN, _RETAIN_ON_UPDATE_OR_DELETE or _DESTROY (SQS queues have no snapshots)`}},
		{"high throughput on a standard queue", ProcessingQueueProps{HighThroughput: true},
			[]string{"HighThroughput", "got true", "FIFO queue setting"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			cdktest.ExpectProblem(t, func() { NewProcessingQueue(scratch, fmt.Sprintf("Invalid%d", i), &props) }, tt.want...)
		})
	}
}

// Every problem is reported at once, and nothing is created before the panic.
func TestValidationCollectsEveryProblem(t *testing.T) {
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("expected a *validate.Error")
		}
		if len(verr.Problems) != 3 || verr.Construct != `ProcessingQueue "Scratch/AllWrong"` {
			t.Errorf("want 3 problems for ProcessingQueue \"Scratch/AllWrong\", got %s", verr.Error())
		}
		if scratch.Node().TryFindChild(strPtr("AllWrong")) != nil {
			t.Error("the construct was created before validation failed")
		}
	}()
	NewProcessingQueue(scratch, "AllWrong", &ProcessingQueueProps{MaxReceiveCount: 2000, HighThroughput: true, QueueName: "a b"})
}

// Relations that only FIFO allows, and values at the limits, pass.
func TestValidationAccepts(t *testing.T) {
	for i, p := range []ProcessingQueueProps{
		{Fifo: true, RetentionPeriod: 14 * 24 * time.Hour}, // FIFO resets the enqueue time in the DLQ
		{Fifo: true, QueueName: strings.Repeat("q", 75)},   // 80 with .fifo
		{QueueName: strings.Repeat("q", 80), MaxReceiveCount: 1000},
		{ConsumerTimeout: 15 * time.Minute, RetentionPeriod: time.Minute, DeadLetterRetentionPeriod: 2 * time.Minute},
		{ConsumerTimeout: 2 * time.Hour / 12, VisibilityTimeout: 12 * time.Hour},
	} {
		p := p
		NewProcessingQueue(scratch, fmt.Sprintf("Valid%d", i), &p)
	}
}

func strPtr(s string) *string { return &s }
