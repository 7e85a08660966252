// Package consume is the consumer Lambda function as a library: put your business logic in
// an Effect and start it, and the function does everything else the bundled consumer
// (functions/consumer) does. Behind an SQS event source (standard or FIFO queue,
// ReportBatchItemFailures on), for every record it extracts the idempotency key (and the
// tenant of a composite key), runs the Effect at most once to completion per key through an
// idempotency.Guard on DynamoDB, moves records that can never succeed to the dead-letter
// queue, stops starting records before the invocation's deadline, logs one JSON line per
// record, publishes EMF metrics, and reports the records that must be delivered again.
//
// A complete function:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/idempotent-sqs/pipeline/functions/consume"
//	)
//
//	func main() { consume.Start(charge) }
//
//	// charge runs at most once to completion per idempotency key.
//	func charge(ctx context.Context, msg consume.Message) ([]byte, error) {
//		// ... charge the order in msg.Body, keyed by msg.Key ...
//		return nil, nil
//	}
//
// Deploy it with constructs/consumer, its Entry set to the directory of that main: the
// construct sets the environment LoadConfig reads (IDEMPOTENCY_TABLE_NAME, ... see Config).
// An effect that needs clients or settings of its own builds them once per cold start with
// StartWith: Env gives it the configuration, the logger, the environment, and an aws.Config
// built the way the function builds its own clients (Env.AWSConfig; see the example).
//
// A configuration the function cannot work with (a variable out of range, a missing region,
// a build that fails) does not crash the cold start: it is logged once, and every invocation
// fails with the error naming the variable, so the batch is retried and, if nobody fixes
// it, lands in the queue's DLQ.
//
// Init returns the invocation handler without starting the Lambda runtime (for tests, with
// WithLookup and WithOutput); Handler and NewHandler are the parts it wires, for a main loop
// of your own.
package consume
