// Package limits holds the bounds of the dispatcher's configuration that
// constructs/dispatcher checks its props against, so that a stack which synthesizes also
// starts: a value the function refuses would fail every invocation. It imports nothing; the
// construct gets constants from the function's side, never the reverse (the function must not
// link CDK).
package limits

// SEND_MAX_ATTEMPTS: how often the dispatcher tries each SendMessageBatch entry.
//
// Each retry waits up to 2s of backoff, on top of the SDK's own retries of the call, so 10
// attempts can already wait about 11s; more would spend the function's timeout (default 60s)
// on a queue that keeps failing, where failing the run gets it retried and alarmed.
const (
	EnvSendMaxAttempts     = "SEND_MAX_ATTEMPTS"
	DefaultSendMaxAttempts = 5
	MaxSendMaxAttempts     = 10
)
