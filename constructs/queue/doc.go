// Package queue provides ProcessingQueue: an SQS source queue (standard or FIFO) for an
// idempotent Lambda consumer, with its dead-letter queue and the redrive between them.
//
// Both queues are encrypted (SSE-SQS by default, or your KMS key), deny non-TLS requests
// (enforceSSL), and are of the same type (a FIFO queue gets a FIFO DLQ). The DLQ's
// redrive-allow policy admits exactly this source queue. The visibility timeout is derived
// from the consumer's timeout (6x, AWS's guidance for an SQS event source) and validated
// against it, and the DLQ keeps messages longer than the source does.
//
//	q := queue.NewProcessingQueue(stack, "Orders", &queue.ProcessingQueueProps{
//		Fifo:            true,
//		ConsumerTimeout: time.Minute, // the consumer function's timeout
//	})
//	q.Queue()           // hand to the consumer's event source
//	q.DeadLetterQueue() // alarm on its depth
//
// Invalid props panic at synth with a *validate.Error listing every problem, each naming the
// prop, the value and the fix.
//
// The source queue always has a physical name (QueueName, or one derived from the construct
// path when QueueName is empty): the DLQ's redrive-allow policy must name the source queue's
// ARN while the source's redrive policy names the DLQ, and a CloudFormation reference in both
// directions is a dependency cycle. A name known at synth lets the source ARN be composed
// (Stack.FormatArn) instead of referenced.
//
// # An existing queue
//
// ImportProcessingQueue takes a queue the stack does not own, with its dead-letter queue, by
// ARN or name, and returns the same ProcessingQueue interface, so the consumer (with
// dead-lettering to the existing DLQ) and the dispatcher run on it as on a queue the stack
// creates. FIFO is read from the names' ".fifo" suffix. The visibility timeout and the
// retention period must be given: CDK cannot read them from an imported queue, and the
// consumer construct checks its timeout against the first and keeps records as long as the
// second by default.
//
//	q := queue.ImportProcessingQueue(stack, "Orders", &queue.ExistingProcessingQueueProps{
//		QueueName:           "orders.fifo",
//		DeadLetterQueueName: "orders-dlq.fifo",
//		VisibilityTimeout:   6 * time.Minute,
//		RetentionPeriod:     4 * 24 * time.Hour,
//	})
//
// # Tokens
//
// Queue names and ARNs may be tokens (a CfnParameter's value, another stack's export):
// validation skips what it cannot judge before deploy. An imported queue whose names are
// all tokens needs Fifo set. Durations and counts are Go values and cannot be tokens.
package queue
