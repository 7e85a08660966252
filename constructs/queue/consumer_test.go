package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// A ProcessingQueue, created or imported, is what the consumer and the dispatcher take.
var (
	_ consumer.DeadLetterSource = queue.ProcessingQueue(nil)
	_ dispatcher.Target         = queue.ProcessingQueue(nil)
)

const (
	queueArn = "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
	dlqArn   = "arn:aws:sqs:eu-west-1:123456789012:orders-dlq.fifo"
	keyArn   = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

// The pipeline's consumer and dispatcher run on an existing FIFO queue with SSE-KMS: the
// event source reads the queue, the consumer dead-letters to the existing DLQ, both
// functions may use the key, and the consumer's timeout is checked against the queue's
// visibility timeout given at import.
func TestConsumerAndDispatcherOnAnImportedQueue(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Imported")
	key := awskms.Key_FromKeyArn(stack, jsii.String("Key"), jsii.String(keyArn))
	q := queue.ImportProcessingQueue(stack, "Orders", &queue.ExistingProcessingQueueProps{
		QueueArn: queueArn, DeadLetterQueueArn: dlqArn,
		VisibilityTimeout: 6 * time.Minute, RetentionPeriod: 2 * 24 * time.Hour, EncryptionKey: key,
		MaxMessageSize: 600 * 1024, // the queue takes more than SQS's default
	})
	tbl := table.NewIdempotencyTable(stack, "Idempotency", nil)
	c := consumer.NewIdempotentConsumer(stack, "Consumer", &consumer.IdempotentConsumerProps{Queue: q, Table: tbl, Function: function.Options{Timeout: time.Minute}})
	dispatcher.NewScheduledDispatcher(stack, "Dispatcher", &dispatcher.ScheduledDispatcherProps{
		Queue: q, Items: []dispatcher.WorkItem{{ID: "daily"}},
	})
	tmpl := assertions.Template_FromStack(stack, nil)

	cdktest.Must(t, "event source on the imported queue", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{"EventSourceArn": queueArn})
	})
	if want := (2 + 14 + 7) * 24 * time.Hour; c.RecordTTL() != want {
		t.Errorf("RecordTTL = %v, want %v: the imported queue's 2 days, its DLQ's (not given: SQS's maximum, 14) and 7 to redrive", c.RecordTTL(), want)
	}
	cdktest.Must(t, "dead-lettering to the imported DLQ", func() {
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"DEAD_LETTER_QUEUE_URL": map[string]any{"Fn::Join": []any{"", []any{"https://sqs.eu-west-1.", map[string]any{"Ref": "AWS::URLSuffix"}, "/123456789012/orders-dlq.fifo"}}},
				"MAX_BODY_BYTES":        "614400", // what the imported queue takes is not oversize
			})},
		})
	})
	granted := queue.Granted(tmpl)
	for _, want := range []string{
		`sqs:ReceiveMessage "` + queueArn + `"`, // the consumer
		`sqs:SendMessage "` + dlqArn + `"`,      // the consumer's dead-lettering
		`sqs:SendMessage "` + queueArn + `"`,    // the dispatcher
		`kms:Decrypt "` + keyArn + `"`,
		`kms:GenerateDataKey "` + keyArn + `"`, // sending to the queue and the DLQ
	} {
		if !granted[want] {
			t.Errorf("not granted: %s", want)
		}
	}
	// Sending never needs these; CDK's queue grants add them.
	for _, never := range []string{"kms:Encrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*"} {
		if granted[never+` "`+keyArn+`"`] {
			t.Errorf("granted %s on the queue's key: sending needs only kms:GenerateDataKey and kms:Decrypt", never)
		}
	}

	// 2 minutes x 6 exceeds the imported queue's 6-minute visibility timeout.
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok || !strings.Contains(verr.Error(), "Function.Timeout: 2m0s needs a queue visibility timeout of at least 12m0s") || !strings.Contains(verr.Error(), "the queue has 6m0s") {
			t.Errorf("a consumer timeout the imported queue's visibility timeout does not cover: want a validation error naming it, got %v", verr)
		}
	}()
	consumer.NewIdempotentConsumer(stack, "TooSlow", &consumer.IdempotentConsumerProps{Queue: q, Table: tbl, Function: function.Options{Timeout: 2 * time.Minute}})
}
