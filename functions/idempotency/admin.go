package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// AdminAPI is what an Admin needs: a consistent read to show a record, and the runtime's
// conditional UpdateItem to release one. *dynamodb.Client satisfies it.
type AdminAPI interface {
	DynamoDBAPI
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ AdminAPI = (*dynamodb.Client)(nil)

// ErrNoRecord is returned by Admin.Get and Admin.Release when the table holds no record for
// the id.
var ErrNoRecord = errors.New("idempotency: no record")

// ErrReleaseRefused is wrapped by the error Admin.Release returns when the record may not be
// released: it is COMPLETED, expired, has no owner, or is held under a live lock without
// ReleaseOptions.Force.
var ErrReleaseRefused = errors.New("idempotency: release refused")

// Admin reads and releases records for an operator, with the same key layout and the same
// fenced writes as a Guard of the same Config. It never completes or creates a record.
type Admin struct {
	cfg   Config
	api   AdminAPI
	store *dynamoStore
}

// NewAdmin validates cfg as New does and returns an Admin for its table. Only TableName,
// KeyPrefix, PartitionKeyAttr, SortKeyAttr, Retry and Now matter to it.
func NewAdmin(api AdminAPI, cfg Config) (*Admin, error) {
	if cfg.Disabled {
		return nil, fmt.Errorf("%w: Config.Disabled is set: an Admin needs the table", ErrInvalidConfig)
	}
	g, err := New(api, cfg) // the Guard's validation, defaults and store
	if err != nil {
		return nil, err
	}
	return &Admin{cfg: g.cfg, api: api, store: g.store.(*dynamoStore)}, nil
}

// RecordID names a record: by the Request a consumer would make (Key, and Tenant with the
// composite layout), or by its raw key attribute values (ID, and SortKey with the composite
// layout) as a table scan shows them. ID, when set, wins.
type RecordID struct {
	Key, Tenant string
	ID, SortKey string
}

// RecordInfo is a record as an operator reads it.
type RecordInfo struct {
	// ID and SortKey are the record's key attribute values (SortKey "" without a sort key).
	ID, SortKey string
	// Status is INPROGRESS or COMPLETED (or whatever another writer left).
	Status string
	// Owner is the fencing token of the attempt that last acquired the record; Attempt its
	// number.
	Owner   string
	Attempt int
	// Expires is the TTL (`expiration`): after it the record counts as absent.
	Expires time.Time
	// LockExpires is when the lock (`in_progress_expiration`) runs out; zero when the record
	// has no lock attribute (COMPLETED) and the Unix epoch when it was released.
	LockExpires time.Time
	// PayloadHash is the stored sha256 of the payload (`validation`), "" when not validated.
	PayloadHash string
	// ResultBytes is the size of the stored result (`data`); ResultDropped reports a result
	// that was too large to store.
	ResultBytes   int
	ResultDropped bool
}

// Expired reports whether the record's TTL has passed at now: it then counts as absent.
func (r *RecordInfo) Expired(now time.Time) bool { return r.Expires.Unix() < now.Unix() }

// LockLive reports whether an INPROGRESS record is held under a lock that has not run out at
// now (the runtime's takeover condition is the opposite).
func (r *RecordInfo) LockLive(now time.Time) bool {
	return r.Status == StatusInProgress && !r.Expired(now) && r.LockExpires.UnixMilli() >= now.UnixMilli()
}

// ReleaseOptions govern Admin.Release.
type ReleaseOptions struct {
	// Force releases a record whose lock is still live: its owner may still be running the
	// effect, and the next delivery will run it again concurrently.
	Force bool
}

// key builds the recordKey of id with the Guard's layout rules.
func (a *Admin) key(id RecordID) (recordKey, error) {
	if id.ID != "" {
		if (a.cfg.SortKeyAttr == "") != (id.SortKey == "") {
			if id.SortKey == "" {
				return recordKey{}, fmt.Errorf("%w: the table has sort key %q: give the record's sort key value too", ErrInvalidRequest, a.cfg.SortKeyAttr)
			}
			return recordKey{}, fmt.Errorf("%w: a sort key value is given but the table has none", ErrInvalidRequest)
		}
		return recordKey{key: id.ID, pk: id.ID, sk: id.SortKey}, nil
	}
	return buildKey(&a.cfg, Request{Key: id.Key, Tenant: id.Tenant})
}

// Get reads the record of id with a consistent read; ErrNoRecord when there is none.
func (a *Admin) Get(ctx context.Context, id RecordID) (*RecordInfo, error) {
	k, err := a.key(id)
	if err != nil {
		return nil, err
	}
	return a.get(ctx, k)
}

func (a *Admin) get(ctx context.Context, k recordKey) (*RecordInfo, error) {
	var out *dynamodb.GetItemOutput
	err := a.store.retry.do(ctx, func(ctx context.Context) error {
		var err error
		out, err = a.api.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(a.cfg.TableName), Key: a.store.itemKey(k), ConsistentRead: aws.Bool(true),
		})
		return err
	})
	if err != nil {
		return nil, &StoreError{Key: k.key, Tenant: k.tenant, Op: "get", Err: err}
	}
	r, err := decodeRecord(out.Item)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoRecord, describeID(k))
	}
	return info(k, r), nil
}

func info(k recordKey, r *record) *RecordInfo {
	ri := &RecordInfo{
		ID: k.pk, SortKey: k.sk, Status: r.status, Owner: r.owner, Attempt: r.attempt,
		Expires: time.Unix(r.expiration, 0), PayloadHash: r.hash, ResultBytes: len(r.data), ResultDropped: r.dropped,
	}
	if r.hasLock {
		ri.LockExpires = time.UnixMilli(r.lockMs)
	}
	return ri
}

// Release frees a stuck INPROGRESS record so that the next delivery of its key acquires it
// at once, with the runtime's own release: the lock is set to 0 on the condition that the
// record is still INPROGRESS and held by the owner that was read, so an attempt that took the
// record over in between is never released. It refuses (ErrReleaseRefused, naming the owner
// and the lock's end) a record under a live lock unless opts.Force, and always a COMPLETED or
// expired one, or one without an owner. It returns the record as read before the release.
func (a *Admin) Release(ctx context.Context, id RecordID, opts ReleaseOptions) (*RecordInfo, error) {
	k, err := a.key(id)
	if err != nil {
		return nil, err
	}
	ri, err := a.get(ctx, k)
	if err != nil {
		return nil, err
	}
	now := a.cfg.Now()
	refuse := func(format string, args ...any) (*RecordInfo, error) {
		return ri, fmt.Errorf("%w: %s: %s", ErrReleaseRefused, describeID(k), fmt.Sprintf(format, args...))
	}
	switch {
	case ri.Status == StatusCompleted:
		return refuse("the record is COMPLETED (attempt %d): its effect has run, and releasing it would let a redelivery run it again", ri.Attempt)
	case ri.Status != StatusInProgress:
		return refuse("status %q is not %s", ri.Status, StatusInProgress)
	case ri.Expired(now):
		return refuse("the record expired at %s and already counts as absent: the next delivery acquires it", ri.Expires.UTC().Format(time.RFC3339))
	case ri.Owner == "":
		return refuse("the record has no %s attribute (written by another runtime), so a release cannot be fenced", AttrOwner)
	case ri.LockExpires.UnixMilli() == 0:
		return refuse("the record is already released (lock 0): the next delivery acquires it")
	case ri.LockLive(now) && !opts.Force:
		return refuse("owner %q holds a live lock until %s (attempt %d, %s from now): it may still be running the effect; wait for the lock to run out, or force the release",
			ri.Owner, ri.LockExpires.UTC().Format(time.RFC3339Nano), ri.Attempt, ri.LockExpires.Sub(now).Round(time.Second))
	}
	err = a.store.release(ctx, k, releaseInput{owner: ri.Owner, attempt: ri.Attempt})
	var fe *fencedError
	switch {
	case errors.As(err, &fe) && fe.current == nil:
		return ri, fmt.Errorf("%w: %s: the record was deleted meanwhile", ErrLockLost, describeID(k))
	case errors.As(err, &fe):
		return ri, fmt.Errorf("%w: %s: the record changed meanwhile: now %s, owner %q, attempt %d; read it again",
			ErrLockLost, describeID(k), fe.current.status, fe.current.owner, fe.current.attempt)
	case err != nil:
		return ri, &StoreError{Key: k.key, Tenant: k.tenant, Op: "release", Err: err}
	}
	return ri, nil
}

// describeID names a record by its key attribute values.
func describeID(k recordKey) string {
	if k.sk == "" {
		return fmt.Sprintf("record %q", k.pk)
	}
	return fmt.Sprintf("record %q / %q", k.pk, k.sk)
}
