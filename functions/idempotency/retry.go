package idempotency

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/idempotent-sqs/pipeline/functions/internal/backoff"
)

// transientCodes are DynamoDB error codes worth retrying: throttling, server faults and
// write conflicts with a concurrent transaction.
var transientCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"RequestLimitExceeded":                   true,
	"TooManyRequestsException":               true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
	"TransactionConflictException":           true,
	"ReplicatedWriteConflictException":       true,
	"RequestTimeout":                         true,
	"RequestTimeoutException":                true,
}

// IsTransient reports whether a DynamoDB error may succeed when retried: throttling, 5xx,
// transaction conflicts, connection and timeout errors. Semantic errors (a failed condition,
// ValidationException, ResourceNotFoundException, access denied, any other 4xx) are not.
// It does not look at the caller's context; a retry loop must stop when that is done.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && transientCodes[apiErr.ErrorCode()] {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		code := status.HTTPStatusCode()
		return code >= 500 || code == 429
	}
	if apiErr != nil {
		return apiErr.ErrorFault() == smithy.FaultServer
	}
	return retry.RetryableConnectionError{}.IsErrorRetryable(err).Bool()
}

// retryer runs one DynamoDB call under a RetryPolicy. sleep and rand are seams for tests.
type retryer struct {
	policy RetryPolicy
	sleep  func(ctx context.Context, d time.Duration) error
	rand   func(n int64) int64 // uniform in [0, n)
}

func newRetryer(p RetryPolicy) retryer {
	return retryer{policy: p, sleep: backoff.Sleep, rand: rand.Int64N}
}

// retryUntilKey carries the time until which a call retries transient errors past
// RetryPolicy.MaxAttempts (retryUntil).
type retryUntilKey struct{}

// retryUntil is ctx for a call that must not give up while its record's lock holds:
// complete, after the effect has run. A complete that gives up leaves the record INPROGRESS,
// and the next delivery takes it over once the lock lapses and runs the effect again; a
// throttled table (a burst, an on-demand cap) makes that common after five quick attempts.
// Until the lock ends nobody else can run the effect, so retrying is safe, and the write is
// fenced (a taker's record is never overwritten). After the lock ends, and with MaxAttempts
// 1 (retries off), the policy's attempts hold as for any call.
func retryUntil(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, retryUntilKey{}, t)
}

// retryingPast reports whether ctx asks for retries past MaxAttempts now.
func (r retryer) retryingPast(ctx context.Context) bool {
	t, ok := ctx.Value(retryUntilKey{}).(time.Time)
	return ok && r.policy.MaxAttempts > 1 && time.Now().Before(t)
}

// do calls op until it succeeds, fails with an error that is not transient, the policy's
// attempts are spent (unless ctx asks for retries until a time still ahead: retryUntil), or
// ctx is done. The last error is wrapped, never replaced.
func (r retryer) do(ctx context.Context, op func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || !IsTransient(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		if attempt >= r.policy.MaxAttempts && !r.retryingPast(ctx) {
			return fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if serr := r.sleep(ctx, r.delay(attempt)); serr != nil {
			return fmt.Errorf("stopped retrying after %d attempts (%w): %w", attempt, serr, err)
		}
	}
}

// backoffCap is the upper bound of the wait before retry n (n >= 1):
// min(MaxDelay, BaseDelay * 2^(n-1)).
func (r retryer) backoffCap(n int) time.Duration {
	return backoff.Ceiling(n, r.policy.BaseDelay, r.policy.MaxDelay)
}

// delay is "full jitter": uniform in [0, backoffCap(n)], which spreads the retries of many
// throttled callers instead of synchronising them on the same backoff steps.
func (r retryer) delay(n int) time.Duration {
	return time.Duration(r.rand(int64(r.backoffCap(n)) + 1))
}
