package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Outcome says what Run did with a request that returned no error.
type Outcome int

const (
	// OutcomeUnknown is the zero value: Run returned an error.
	OutcomeUnknown Outcome = iota
	// OutcomeProcessed: the handler ran and its record is COMPLETED (or the Guard is Disabled).
	OutcomeProcessed
	// OutcomeDuplicate: the key was already COMPLETED; the handler did not run.
	OutcomeDuplicate
)

func (o Outcome) String() string {
	switch o {
	case OutcomeProcessed:
		return "processed"
	case OutcomeDuplicate:
		return "duplicate"
	default:
		return "unknown"
	}
}

// Request names one unit of work.
type Request struct {
	// Key is the idempotency key. Required, and valid UTF-8: DynamoDB would turn other bytes
	// into U+FFFD, so two different keys could share a record.
	Key string
	// Tenant is the partition of the composite layout: required when Config.SortKeyAttr is
	// set, an error otherwise. Valid UTF-8, like Key.
	Tenant string
	// Payload is hashed into `validation` when Config.ValidatePayload is on.
	Payload []byte
}

// Result describes a Run that returned no error. On error Attempt and TookOver still say
// which attempt failed, when one was acquired.
type Result struct {
	Outcome Outcome
	// Data is the handler's result (processed) or the stored one (duplicate, with
	// Config.StoreResult); nil when there is none. It is the caller's to modify.
	Data []byte
	// Attempt is this run's attempt number (processed: 1 for a fresh key, +1 for every earlier
	// failed or crashed attempt) or the number of the attempt that completed the key
	// (duplicate). 0 when Disabled.
	Attempt int
	// TookOver is true when this run acquired a record whose previous owner's lock had
	// expired without a complete or release: that owner crashed or timed out.
	TookOver bool
	// ResultDropped is true when the key's result was not stored because the record could
	// not hold it (Config.StoreResult with a result near or over DynamoDB's 400 KB item
	// limit). The record is COMPLETED all the same, without `data` and marked with
	// `result_dropped`, so the handler does not run again. Processed: Data is still the
	// handler's result. Duplicate: Data is nil, and ResultDropped tells "not stored" apart
	// from "the handler returned no result".
	ResultDropped bool
}

// Guard runs handlers at most once to completion per idempotency key. It is safe for
// concurrent use; build one at cold start.
type Guard struct {
	cfg   Config
	store store
	cache *lruCache // nil when CacheSize is 0
}

// New validates cfg, applies its defaults and returns a Guard that keeps its records in
// cfg.TableName through api. Build api with WithoutSDKRetries: the Guard owns retries. Every
// problem with cfg is reported at once, wrapped in ErrInvalidConfig.
func New(api DynamoDBAPI, cfg Config) (*Guard, error) {
	cfg, err := cfg.withDefaults(isNil(api))
	if err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg}
	if !cfg.Disabled {
		g.store = &dynamoStore{
			api: api, table: cfg.TableName, pk: cfg.PartitionKeyAttr, sk: cfg.SortKeyAttr,
			retry: newRetryer(cfg.Retry),
		}
	}
	if cfg.CacheSize > 0 {
		g.cache = newLRUCache(cfg.CacheSize)
	}
	return g, nil
}

// isNil also catches a nil pointer in the interface (a *dynamodb.Client never built), which
// would otherwise panic on the first message instead of failing the cold start.
func isNil(api DynamoDBAPI) bool {
	if api == nil {
		return true
	}
	v := reflect.ValueOf(api)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Config returns the configuration in effect, defaults applied.
func (g *Guard) Config() Config { return g.cfg }

// finishGrace is the least time complete and release get after the handler returns, even if
// ctx is already done: the side effect has happened (or failed), and recording that is what
// spares the next delivery a wait for the lock to lapse.
const finishGrace = 2 * time.Second

// Run executes fn once per key:
//
//   - key free (new, released, TTL-expired, or INPROGRESS with a lapsed lock): the record is
//     locked with ONE conditional UpdateItem, fn runs, and the record is marked COMPLETED
//     (second UpdateItem) -> OutcomeProcessed. A failing fn releases the record
//     (*HandlerError) so the next delivery runs it again as the next attempt.
//   - key COMPLETED -> OutcomeDuplicate without running fn (one UpdateItem, or none on a
//     cache hit), Data replayed when stored (Result.ResultDropped when it was too large).
//   - key INPROGRESS under a live lock -> *InProgressError (ErrInProgress): fail the message
//     so SQS delivers it again later. Never drop it.
//   - payload differs from the stored hash -> *PayloadMismatchError (ErrPayloadMismatch).
//   - our lock was taken over before complete/release -> *LockLostError (ErrLockLost).
//   - DynamoDB errors after retries -> *StoreError; bad requests -> ErrInvalidRequest.
//
// fn gets ctx; the lock lasts until ctx's deadline or Config.LockCap, whichever is first, so
// fn must finish within ctx. A panic in fn releases the record and is re-raised.
func (g *Guard) Run(ctx context.Context, req Request, fn func(ctx context.Context) ([]byte, error)) (Result, error) {
	if fn == nil {
		return Result{}, fmt.Errorf("%w: %s: handler func is nil", ErrInvalidRequest, describeKey(req.Key, req.Tenant))
	}
	if g.cfg.Disabled {
		data, err := fn(ctx)
		if err != nil {
			return Result{}, &HandlerError{Key: req.Key, Tenant: req.Tenant, Err: err}
		}
		return Result{Outcome: OutcomeProcessed, Data: data}, nil
	}
	k, err := buildKey(&g.cfg, req)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("idempotency: %s: not started: %w", describeKey(k.key, k.tenant), err)
	}
	now := g.cfg.Now()
	var hash string
	if g.cfg.ValidatePayload {
		hash = PayloadHash(req.Payload)
	}
	if res, err, hit := g.fromCache(k, hash, now); hit {
		return res, err
	}
	lock := lockUntil(ctx, now, g.cfg.LockCap)
	if !lock.After(now) {
		return Result{}, fmt.Errorf("idempotency: %s: not started: %w (no time left for a lock)",
			describeKey(k.key, k.tenant), context.DeadlineExceeded)
	}

	owner := newOwner()
	acquired, old, err := g.store.acquire(ctx, k, acquireInput{
		owner: owner, now: now, lockUntil: lock, expiration: now.Add(g.cfg.RecordTTL), hash: hash,
	})
	if err != nil {
		return Result{}, &StoreError{Key: k.key, Tenant: k.tenant, Op: "acquire", Err: err}
	}
	var attempt int
	var tookOver bool
	switch {
	case acquired:
		attempt, tookOver = attemptAfter(old, now)
	case old.owner == owner:
		// Our own earlier try of this acquire succeeded but its response was lost (a
		// transient error after the write): the record is ours. Whether it was a takeover is
		// lost with that response.
		attempt = old.attempt
	default:
		return g.existing(k, old, hash, now)
	}

	data, ferr := g.call(ctx, k, owner, attempt, fn)
	fctx, cancel := finishContext(ctx)
	defer cancel()
	res := Result{Attempt: attempt, TookOver: tookOver}
	if ferr != nil {
		herr := &HandlerError{Key: k.key, Tenant: k.tenant, Attempt: attempt, Err: ferr}
		herr.ReleaseErr = g.release(fctx, k, owner, attempt)
		return res, herr
	}
	dropped, err := g.complete(retryUntil(fctx, lock), k, owner, attempt, hash, data)
	if err != nil {
		return res, err
	}
	res.Outcome, res.Data, res.ResultDropped = OutcomeProcessed, data, dropped
	return res, nil
}

// complete marks the record COMPLETED, fenced by owner and attempt, with data as its result
// when results are stored (dropped: too large to store, so completed without it), and
// caches it.
func (g *Guard) complete(ctx context.Context, k recordKey, owner string, attempt int, hash string, data []byte) (dropped bool, err error) {
	var stored []byte
	if g.cfg.StoreResult && data != nil {
		stored = data
	}
	expiration := g.cfg.Now().Add(g.cfg.RecordTTL)
	dropped, err = g.store.complete(ctx, k, completeInput{owner: owner, attempt: attempt, expiration: expiration, data: stored})
	if err = g.fenceErr(err, k, "complete", owner, StatusCompleted); err != nil {
		return false, err
	}
	if dropped {
		stored = nil
	}
	if g.cache != nil {
		g.cache.put(k.cacheKey(), cachedRecord{expiration: expiration.Unix(), hash: hash, data: bytes.Clone(stored), attempt: attempt, dropped: dropped})
	}
	return dropped, nil
}

// call runs fn; if it panics, the record is released before the panic goes on, so the next
// delivery need not wait for the lock to lapse.
func (g *Guard) call(ctx context.Context, k recordKey, owner string, attempt int, fn func(context.Context) ([]byte, error)) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			fctx, cancel := finishContext(ctx)
			_ = g.release(fctx, k, owner, attempt)
			cancel()
			panic(p)
		}
	}()
	return fn(ctx)
}

func (g *Guard) release(ctx context.Context, k recordKey, owner string, attempt int) error {
	err := g.store.release(ctx, k, releaseInput{owner: owner, attempt: attempt})
	return g.fenceErr(err, k, "release", owner, StatusInProgress)
}

// fenceErr turns a store error of complete/release into Run's error. A fenced write whose
// record shows our owner and the state we were writing is our own earlier try that landed
// though its response was lost: success.
func (g *Guard) fenceErr(err error, k recordKey, op, owner, doneStatus string) error {
	var fe *fencedError
	if !errors.As(err, &fe) {
		if err != nil {
			return &StoreError{Key: k.key, Tenant: k.tenant, Op: op, Err: err}
		}
		return nil
	}
	cur := fe.current
	if cur == nil {
		return &LockLostError{Key: k.key, Tenant: k.tenant, Op: op, Owner: owner}
	}
	if cur.owner == owner && cur.status == doneStatus && (op == "complete" || cur.lockMs == 0) {
		return nil
	}
	return &LockLostError{
		Key: k.key, Tenant: k.tenant, Op: op, Owner: owner,
		CurrentOwner: cur.owner, CurrentStatus: cur.status, CurrentAttempt: cur.attempt,
	}
}

// existing decides what a record that blocked the acquire means for this request.
func (g *Guard) existing(k recordKey, old *record, hash string, now time.Time) (Result, error) {
	if hash != "" && old.hash != "" && old.hash != hash {
		return Result{}, &PayloadMismatchError{Key: k.key, Tenant: k.tenant, Status: old.status, StoredHash: old.hash, PayloadHash: hash}
	}
	switch old.status {
	case StatusCompleted:
		if g.cache != nil {
			g.cache.put(k.cacheKey(), cachedRecord{expiration: old.expiration, hash: old.hash, data: bytes.Clone(old.data), attempt: old.attempt, dropped: old.dropped})
		}
		return Result{Outcome: OutcomeDuplicate, Data: old.data, Attempt: old.attempt, ResultDropped: old.dropped}, nil
	case StatusInProgress:
		return Result{}, &InProgressError{Key: k.key, Tenant: k.tenant, Attempt: old.attempt, LockExpires: old.lockExpires()}
	default:
		return Result{}, &StoreError{Key: k.key, Tenant: k.tenant, Op: "acquire",
			Err: fmt.Errorf("record has status %q, want %s or %s", old.status, StatusInProgress, StatusCompleted)}
	}
}

// fromCache answers a request from a cached COMPLETED record, with no DynamoDB call.
func (g *Guard) fromCache(k recordKey, hash string, now time.Time) (Result, error, bool) {
	if g.cache == nil {
		return Result{}, nil, false
	}
	c, ok := g.cache.get(k.cacheKey(), now)
	if !ok {
		return Result{}, nil, false
	}
	if hash != "" && c.hash != "" && c.hash != hash {
		return Result{}, &PayloadMismatchError{Key: k.key, Tenant: k.tenant, Status: StatusCompleted, StoredHash: c.hash, PayloadHash: hash}, true
	}
	return Result{Outcome: OutcomeDuplicate, Data: bytes.Clone(c.data), Attempt: c.attempt, ResultDropped: c.dropped}, nil, true
}

// attemptAfter numbers the attempt that just acquired a record which was old before. A record
// past its TTL counts as absent (attempt 1); a live INPROGRESS one was released (lock 0) or
// abandoned (lock lapsed: a takeover).
func attemptAfter(old *record, now time.Time) (attempt int, tookOver bool) {
	if old == nil || old.expired(now) || old.status != StatusInProgress {
		return 1, false
	}
	return old.attempt + 1, old.lockMs > 0
}

// finishContext keeps ctx's values but not its cancellation, with a deadline of ctx's own or
// finishGrace from now, whichever is later.
func finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(finishGrace)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	} else if !ok && ctx.Err() == nil {
		return context.WithCancel(context.WithoutCancel(ctx))
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}
