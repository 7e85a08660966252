// Package idempotency makes a message handler run to completion at most once per idempotency
// key, with its state in a DynamoDB table that Powertools for AWS Lambda (Python, TypeScript,
// Java, .NET) can share.
//
// Build one Guard at cold start and wrap each message's side effect in Run:
//
//	client := dynamodb.NewFromConfig(awsCfg, idempotency.WithoutSDKRetries)
//	guard, err := idempotency.New(client, idempotency.Config{
//		TableName: os.Getenv("IDEMPOTENCY_TABLE_NAME"), KeyPrefix: "consumer",
//		LockCap: 30 * time.Second, ValidatePayload: true,
//	})
//	...
//	res, err := guard.Run(ctx, idempotency.Request{Key: key, Payload: body},
//		func(ctx context.Context) ([]byte, error) { return nil, doTheWork(ctx) })
//	switch {
//	case err == nil:                                 // res.Outcome: processed or duplicate; ack
//	case errors.Is(err, idempotency.ErrInProgress):  // fail the record: SQS redelivers it later
//	case errors.Is(err, idempotency.ErrPayloadMismatch): // bad input: fail it, it ends in the DLQ
//	default:                                         // *HandlerError, ErrLockLost, *StoreError: fail it
//	}
//
// # The record
//
// One item per key: `id` = KeyPrefix#key (or, with Config.SortKeyAttr, `id` = KeyPrefix#tenant
// and the sort key = key), `status` INPROGRESS|COMPLETED, `expiration` (epoch seconds, the TTL
// attribute), `in_progress_expiration` (epoch ms, the lock), `validation` (sha256 hex of the
// payload), `data` (stored result), plus `owner` (a random token per attempt), `attempt`, and
// `result_dropped` on a record completed without a result too large to store.
//
// Every state change is one conditional UpdateItem, and nothing is ever read separately:
//
//   - acquire: succeeds when the item is absent, past its TTL (DynamoDB deletes expired items
//     only eventually, so expired counts as absent), or INPROGRESS with a lapsed lock (a
//     takeover: Result.TookOver) or a released one. It increments `attempt` and, on failure,
//     returns the blocking item (ReturnValuesOnConditionCheckFailure=ALL_OLD): COMPLETED is a
//     duplicate, INPROGRESS under a live lock is ErrInProgress, another payload hash is
//     ErrPayloadMismatch.
//   - complete: COMPLETED, new expiration, optional data; conditional on our owner token, so a
//     worker whose lock lapsed and was taken over cannot overwrite the new owner (ErrLockLost).
//     A result that would take the item over DynamoDB's 400 KB limit (estimated up front, with
//     a ValidationException as the fallback) is left out and `result_dropped` set instead: the
//     effect has happened, so the record is completed whatever becomes of its result
//     (Result.ResultDropped, on this run and on every duplicate).
//   - release (handler failed or panicked): the lock is reset to 0 under the same fence; the
//     next delivery acquires at once and counts the next attempt.
//
// So a new message costs 2 writes, a duplicate 1 (0 with the cache), and there are no reads:
// the function's role needs dynamodb:UpdateItem only. The one exception is a result the
// estimate let through but DynamoDB refused: complete is sent again without it (3 writes).
//
// The lock lasts until the ctx deadline or Config.LockCap, whichever is first; set LockCap to
// the function timeout and the queue's visibility timeout above it, so a crashed attempt is
// redelivered only after its lock has lapsed.
//
// # Retries
//
// Transient DynamoDB errors (throttling, 5xx, transaction conflicts, connection and timeout
// errors; see IsTransient) are retried per Config.Retry with capped exponential backoff and
// full jitter, within ctx. Semantic errors (a failed condition, ValidationException,
// ResourceNotFoundException, other 4xx) never are. Build the SDK client with
// WithoutSDKRetries (RetryMaxAttempts = 1) so the two layers do not multiply. A retried write
// whose first response was lost is recognised by its owner token and counts as done.
// Complete, after the handler has run, retries a transient error past MaxAttempts while its
// record's lock holds (min(LockCap, ctx's deadline) from the acquire), within its own
// context (finishContext): a complete that gave up would let the next delivery run the
// handler again. After the lock ends, and with MaxAttempts 1, MaxAttempts holds. What a
// throttled table does to a batch's messages, end to end, is docs/design.md's "When the
// table throttles mid-batch".
//
// # Guarantees and limits
//
// At most one owner runs the handler for a key at any time, and a COMPLETED key never runs
// again until its record expires (Config.RecordTTL). The handler can still run more than once
// when an attempt outlives its lock or crashes after its side effect but before complete:
// side effects must tolerate a repeat the way any at-least-once consumer's must; this package
// makes repeats rare, not impossible.
package idempotency
