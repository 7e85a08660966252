package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Values of the record's `status` attribute (the Powertools names).
const (
	StatusInProgress = "INPROGRESS"
	StatusCompleted  = "COMPLETED"
)

// DynamoDB key size limits; a longer key is rejected as bad input rather than hashed, so the
// id in the table stays the one the producer chose and can be looked up.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
)

// record is one idempotency item as read back from DynamoDB.
type record struct {
	status     string
	expiration int64 // epoch seconds: the TTL
	// lockMs is the lock's end in epoch milliseconds; 0 after a release (and absent on a
	// Powertools record that never had one).
	lockMs  int64
	hasLock bool
	hash    string
	data    []byte
	owner   string
	attempt int
	// dropped: COMPLETED without the handler's result, which was too large to store.
	dropped bool
}

// expired reports whether the TTL has passed: such a record counts as absent, because
// DynamoDB deletes expired items only eventually (up to days later). It matches the acquire
// condition `expiration < :now`.
func (r *record) expired(now time.Time) bool { return r.expiration < now.Unix() }

// lockExpires is when the record's lock runs out, for messages; a record without a lock
// attribute blocks until its TTL.
func (r *record) lockExpires() time.Time {
	if !r.hasLock {
		return time.Unix(r.expiration, 0)
	}
	return time.UnixMilli(r.lockMs)
}

// recordKey is where a Request's record lives.
type recordKey struct {
	key, tenant string // as requested, for messages
	pk, sk      string // attribute values; sk is "" without a sort key
}

// cacheKey identifies the record in the in-memory cache. It must be injective in (pk, sk):
// keys and tenants may hold any byte a separator could be made of (a NUL is valid UTF-8), so
// a plain join would give {tenant "a\x00b", key "c"} and {tenant "a", key "b\x00c"} one entry,
// and the second message would be answered from the first's record. The partition key's
// length in front says where it ends, whatever it contains.
func (k recordKey) cacheKey() string { return strconv.Itoa(len(k.pk)) + ":" + k.pk + k.sk }

// buildKey maps a Request onto the table layout:
//
//	partition key only: id = KeyPrefix#key
//	composite:          id = KeyPrefix#tenant, sort key = key
func buildKey(cfg *Config, req Request) (recordKey, error) {
	k := recordKey{key: req.Key, tenant: req.Tenant}
	fail := func(format string, args ...any) (recordKey, error) {
		return recordKey{}, fmt.Errorf("%w: %s: %s", ErrInvalidRequest, describeKey(req.Key, req.Tenant), fmt.Sprintf(format, args...))
	}
	if req.Key == "" {
		return fail("Request.Key is empty: every message needs an idempotency key")
	}
	for _, f := range []struct{ field, value string }{{"Request.Key", req.Key}, {"Request.Tenant", req.Tenant}} {
		if at, bad := invalidUTF8(f.value); bad {
			return fail("%s is not valid UTF-8 (byte %#x at offset %d): %s", f.field, f.value[at], at, utf8Reason)
		}
	}
	if cfg.SortKeyAttr == "" {
		if req.Tenant != "" {
			return fail("Request.Tenant is set but Config.SortKeyAttr is empty: tenants need the composite layout, or the same key in two tenants would share one record")
		}
		k.pk = cfg.KeyPrefix + "#" + req.Key
		if len(k.pk) > MaxPartitionKeyBytes {
			return fail("the id %s#<key> is %d bytes; DynamoDB allows %d in a partition key: use a shorter key", cfg.KeyPrefix, len(k.pk), MaxPartitionKeyBytes)
		}
		return k, nil
	}
	if req.Tenant == "" {
		return fail("Request.Tenant is empty: with Config.SortKeyAttr set, every message needs a tenant")
	}
	k.pk, k.sk = cfg.KeyPrefix+"#"+req.Tenant, req.Key
	if len(k.pk) > MaxPartitionKeyBytes {
		return fail("the id %s#<tenant> is %d bytes; DynamoDB allows %d in a partition key: use a shorter tenant", cfg.KeyPrefix, len(k.pk), MaxPartitionKeyBytes)
	}
	if len(k.sk) > MaxSortKeyBytes {
		return fail("the key is %d bytes; DynamoDB allows %d in a sort key: use a shorter key", len(k.sk), MaxSortKeyBytes)
	}
	return k, nil
}

// utf8Reason says why a key that is not UTF-8 is refused rather than stored.
const utf8Reason = "DynamoDB strings are UTF-8, and the SDK replaces invalid bytes with U+FFFD, " +
	"so different values would name the same record"

// invalidUTF8 returns the offset of the first byte of s that is not part of valid UTF-8.
// Such a value cannot be part of a DynamoDB key as is (see utf8Reason).
func invalidUTF8(s string) (offset int, bad bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i, true
			}
		}
	}
	return 0, false
}

// PayloadHash is the value stored in `validation`: the sha256 of the payload, hex encoded.
func PayloadHash(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// lockUntil is min(now + remaining time of ctx, now + lockCap). The remaining time is taken
// on the real clock (the ctx deadline is real) and applied to the record clock now, so a test
// clock still gets a lock no longer than the invocation can run.
func lockUntil(ctx context.Context, now time.Time, lockCap time.Duration) time.Time {
	d := lockCap
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline))
	}
	return now.Add(d)
}

// newOwner returns a fresh fencing token for one attempt.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go >= 1.24)
	return hex.EncodeToString(b[:])
}
