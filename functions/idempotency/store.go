package idempotency

import (
	"context"
	"time"
)

// store is the persistence layer behind a Guard, as Powertools separates it from the
// handler logic. Its one implementation is dynamoStore; a store decides nothing about
// duplicates or takeovers, it performs the three conditional writes and reports what it found.
type store interface {
	// acquire writes an INPROGRESS record owned by in.owner when the key is free: absent, past
	// its TTL, or INPROGRESS with an expired (or released) lock. acquired reports whether it
	// did; old is the record as it was before the write (nil when absent) or, when not
	// acquired, the record that blocked it.
	acquire(ctx context.Context, k recordKey, in acquireInput) (acquired bool, old *record, err error)
	// complete marks the record COMPLETED if in.owner still holds it; otherwise it returns a
	// *fencedError with the record as found. A result the record cannot hold (DynamoDB's item
	// size limit) is left out and the record marked instead: dropped reports that.
	complete(ctx context.Context, k recordKey, in completeInput) (dropped bool, err error)
	// release resets the lock (keeping attempt) if in.owner still holds it, so the next
	// delivery can acquire at once; otherwise a *fencedError.
	release(ctx context.Context, k recordKey, in releaseInput) error
}

type acquireInput struct {
	owner      string
	now        time.Time
	lockUntil  time.Time
	expiration time.Time
	hash       string // "" when payload validation is off
}

type completeInput struct {
	owner      string
	attempt    int
	expiration time.Time
	data       []byte // nil: store no result
}

type releaseInput struct {
	owner   string
	attempt int
}

// fencedError reports that a complete or release found the record not (or no longer) ours.
// current is the record as the failed write saw it; nil when it no longer exists.
type fencedError struct{ current *record }

func (e *fencedError) Error() string { return "record is not held by this owner" }
