// Package limits holds the bounds of the consumer's configuration that constructs/consumer
// checks its props against, so that a stack which synthesizes also starts: a value the
// function refuses would fail every invocation. It imports nothing; the construct gets
// constants from the function's side, never the reverse (the function must not link CDK).
package limits

const (
	// MaxCacheSize bounds IDEMPOTENCY_CACHE_SIZE, the completed records kept in memory per
	// execution environment.
	MaxCacheSize = 1_000_000
	// MaxBatchConcurrency bounds BATCH_CONCURRENCY: the largest SQS event source batch, so a
	// larger bound could never be used.
	MaxBatchConcurrency = 10_000
)
