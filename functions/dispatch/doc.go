// Package dispatch is the dispatcher Lambda function as a library: give it the source of
// your work items and start it, and the function does everything else the bundled
// dispatcher (functions/dispatcher) does. EventBridge Scheduler invokes it once per scheduled
// run; it asks the ItemSource for the run's work items and sends one SQS message per item,
// each carrying an idempotency key derived from the job, the run's scheduled occurrence (the
// schedule's scheduled time in UTC to the minute, never the clock) and the item id, so that a
// repeated or retried invocation for one occurrence is recognized downstream (by package
// consume) and two occurrences never share a key. It validates every item before sending
// any, sends in batches with retries, logs one JSON line per run and publishes EMF metrics.
//
// A complete function:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/idempotent-sqs/pipeline/functions/dispatch"
//	)
//
//	func main() { dispatch.Start(shards{}) }
//
//	// shards yields the same items for every repeat of one occurrence.
//	type shards struct{}
//
//	func (shards) Items(ctx context.Context, run dispatch.Run) ([]dispatch.Item, error) {
//		return []dispatch.Item{{ID: "shard-1"}, {ID: "shard-2"}}, nil
//	}
//
// Deploy it with constructs/dispatcher, its Entry set to the directory of that main: the
// construct sets the environment LoadConfig reads (QUEUE_URL, JOB_NAME, ... see Config). The
// default source, EventItems, sends the items listed in the schedule's input. A source that
// needs clients or settings of its own builds them once per cold start with StartWith: Env
// gives it the configuration, the logger, the environment, and an aws.Config built the way
// the function builds its own SQS client (Env.AWSConfig).
//
// A configuration the function cannot work with (a variable out of range, a missing region,
// a build that fails) does not crash the cold start: it is logged once, and every invocation
// fails with the error naming the variable.
//
// Init returns the invocation handler without starting the Lambda runtime (for tests, with
// WithLookup, WithOutput and WithSQS); Handler and NewHandler are the parts it wires, for a
// main loop of your own.
package dispatch
