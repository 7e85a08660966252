package idempotency

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels for errors.Is. Run returns the typed errors below, which match them.
var (
	// ErrInProgress: another live owner holds the key's lock. Report the message as a batch
	// item failure so SQS delivers it again after the visibility timeout.
	ErrInProgress = errors.New("idempotency: in progress elsewhere")
	// ErrPayloadMismatch: the key was used before for a different payload. Retrying cannot
	// help; the message belongs in the DLQ and the producer needs fixing.
	ErrPayloadMismatch = errors.New("idempotency: key reused with a different payload")
	// ErrLockLost: complete or release was fenced out because our lock expired and another
	// owner took the record over (or the record is gone).
	ErrLockLost = errors.New("idempotency: lock lost")
	// ErrInvalidRequest: the Request cannot name a record (empty or oversize key, a key or
	// tenant that is not valid UTF-8, tenant missing or unexpected). Bad input: retrying
	// cannot help.
	ErrInvalidRequest = errors.New("idempotency: invalid request")
)

// InProgressError is returned when another owner holds a live lock on the key.
type InProgressError struct {
	Key, Tenant string
	// Attempt is the holder's attempt number.
	Attempt int
	// LockExpires is when the holder's lock runs out and the record can be taken over.
	LockExpires time.Time
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("idempotency: %s is in progress elsewhere (attempt %d, lock until %s)",
		describeKey(e.Key, e.Tenant), e.Attempt, e.LockExpires.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// PayloadMismatchError is returned when a key arrives with a payload whose sha256 differs from
// the one stored with its record. The handler did not run.
type PayloadMismatchError struct {
	Key, Tenant string
	// Status of the stored record: "COMPLETED" or "INPROGRESS".
	Status string
	// StoredHash and PayloadHash are sha256 hex digests.
	StoredHash, PayloadHash string
}

func (e *PayloadMismatchError) Error() string {
	return fmt.Sprintf("idempotency: %s reused with a different payload (record %s has sha256 %s, this payload %s)",
		describeKey(e.Key, e.Tenant), e.Status, e.StoredHash, e.PayloadHash)
}

// Is makes errors.Is(err, ErrPayloadMismatch) true.
func (e *PayloadMismatchError) Is(target error) bool { return target == ErrPayloadMismatch }

// LockLostError is returned when complete or release finds the record no longer ours: our
// lock expired and another owner took over, or the record was deleted. For "complete" the
// handler's side effect has happened; the new owner's outcome decides the record.
type LockLostError struct {
	Key, Tenant string
	// Op is "complete" or "release".
	Op string
	// Owner is our token; CurrentOwner, CurrentStatus and CurrentAttempt describe the record
	// as the failed write found it (all empty when the record is gone).
	Owner, CurrentOwner, CurrentStatus string
	CurrentAttempt                     int
}

func (e *LockLostError) Error() string {
	if e.CurrentStatus == "" {
		return fmt.Sprintf("idempotency: %s %s: lock lost: the record no longer exists", e.Op, describeKey(e.Key, e.Tenant))
	}
	return fmt.Sprintf("idempotency: %s %s: lock lost: record is %s, held by owner %q on attempt %d (we are %q)",
		e.Op, describeKey(e.Key, e.Tenant), e.CurrentStatus, e.CurrentOwner, e.CurrentAttempt, e.Owner)
}

// Is makes errors.Is(err, ErrLockLost) true.
func (e *LockLostError) Is(target error) bool { return target == ErrLockLost }

// HandlerError is returned when the handler failed. The record was released (unless
// ReleaseErr says otherwise) so the next delivery runs the handler again as attempt+1.
type HandlerError struct {
	Key, Tenant string
	Attempt     int
	// Err is the handler's error; Unwrap returns it.
	Err error
	// ReleaseErr is set when the record could not be released; the lock then holds until it
	// expires and a later delivery takes it over.
	ReleaseErr error
}

func (e *HandlerError) Error() string {
	msg := fmt.Sprintf("idempotency: %s: handler failed on attempt %d: %v", describeKey(e.Key, e.Tenant), e.Attempt, e.Err)
	if e.ReleaseErr != nil {
		msg += fmt.Sprintf(" (and the record was not released: %v)", e.ReleaseErr)
	}
	return msg
}

// Unwrap returns the handler's error.
func (e *HandlerError) Unwrap() error { return e.Err }

// StoreError is a DynamoDB failure that is not a state of the record: a semantic error (a
// wrong table or key schema, missing permission) or a transient one that outlasted the retry
// policy. Op is "acquire", "complete" or "release". After a failed complete the handler's side
// effect has happened and the record stays INPROGRESS until its lock expires.
type StoreError struct {
	Key, Tenant string
	Op          string
	Err         error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("idempotency: %s %s: %v", e.Op, describeKey(e.Key, e.Tenant), e.Err)
}

// Unwrap returns the DynamoDB (or retry) error.
func (e *StoreError) Unwrap() error { return e.Err }

func describeKey(key, tenant string) string {
	if tenant == "" {
		return fmt.Sprintf("key %q", key)
	}
	return fmt.Sprintf("key %q (tenant %q)", key, tenant)
}
