package idempotency

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/idempotency/layout"
)

// Defaults of Config and RetryPolicy, applied by New to zero fields.
const (
	DefaultKeyPrefix        = "default"
	DefaultPartitionKeyAttr = layout.DefaultPartitionKeyAttr
	DefaultRecordTTL        = 24 * time.Hour
	DefaultLockCap          = 15 * time.Minute

	DefaultRetryMaxAttempts = 5
	DefaultRetryBaseDelay   = 25 * time.Millisecond
	DefaultRetryMaxDelay    = time.Second
)

// Limits New enforces.
const (
	// MinDuration is the smallest RecordTTL and LockCap: `expiration` holds whole seconds, so a
	// shorter record would be stale when written.
	MinDuration = time.Second
	// MaxLockCap is Lambda's maximum timeout; no invocation can use a longer lock.
	MaxLockCap = 15 * time.Minute
	// MaxRetryAttempts bounds RetryPolicy.MaxAttempts so a typo cannot hold an invocation for
	// minutes of backoff.
	MaxRetryAttempts = 20
)

// Names of the record's attributes (the Powertools layout plus owner and attempt; package
// layout holds them, for the constructs).
const (
	AttrExpiration     = layout.AttrExpiration
	AttrLockExpiration = layout.AttrLockExpiration
	AttrStatus         = layout.AttrStatus
	AttrData           = layout.AttrData
	AttrValidation     = layout.AttrValidation
	AttrOwner          = layout.AttrOwner
	AttrAttempt        = layout.AttrAttempt
	// AttrResultDropped marks a COMPLETED record whose result could not be stored (see
	// Result.ResultDropped); its value is the result's size in bytes. Other runtimes ignore
	// it: the Powertools attributes keep their meaning, the record just has no `data`.
	AttrResultDropped = layout.AttrResultDropped
)

// Config configures a Guard. TableName is the only required field (unless Disabled); zero
// values of the others give the documented defaults.
type Config struct {
	// TableName is the idempotency table. Required unless Disabled.
	TableName string
	// KeyPrefix namespaces keys when several consumers share a table: the partition key is
	// KeyPrefix + "#" + key (or KeyPrefix + "#" + tenant with SortKeyAttr). Default "default".
	// It may not contain "#", so that two prefixes can never produce the same id, and must be
	// valid UTF-8 (as must the key attribute names below).
	KeyPrefix string
	// PartitionKeyAttr is the table's partition key attribute (type S). Default "id".
	PartitionKeyAttr string
	// SortKeyAttr, when set, selects the composite layout: partition KeyPrefix#Tenant, sort
	// key = the idempotency key, and Request.Tenant becomes required. Default "" (off).
	SortKeyAttr string
	// RecordTTL is how long a record lives: expiration = now + RecordTTL, written on acquire
	// and again on complete. It is also how long duplicates are recognised. Default 24h; at
	// least 1s and at least LockCap.
	RecordTTL time.Duration
	// LockCap caps the in-progress lock: lock = min(ctx deadline, now + LockCap). Set it to the
	// function timeout. Default 15m; between 1s and 15m.
	LockCap time.Duration
	// ValidatePayload stores the payload's sha256 in `validation` and compares it on every
	// later delivery of the key: a different payload is a *PayloadMismatchError. Default off.
	ValidatePayload bool
	// StoreResult stores the handler's result in `data` and returns it as Result.Data for
	// duplicates. Default off. A result that would take the record over DynamoDB's 400 KB
	// item limit is not stored: the record is completed without it (Result.ResultDropped).
	StoreResult bool
	// CacheSize > 0 keeps that many COMPLETED records in an in-memory LRU, so a repeated
	// duplicate in the same execution environment costs no DynamoDB call. Default 0 (off).
	CacheSize int
	// Disabled runs the handler directly with no record at all (local runs). Default off.
	Disabled bool
	// Retry governs transient DynamoDB errors (throttling, 5xx, conflicts, network). Zero
	// fields take the defaults.
	Retry RetryPolicy
	// Now is the clock for record times (tests). Default time.Now. The lock still honours the
	// real ctx deadline.
	Now func() time.Time
}

// RetryPolicy is capped exponential backoff with full jitter: the wait before retry n (n = 1
// after the first failure) is uniform in [0, min(MaxDelay, BaseDelay * 2^(n-1))].
type RetryPolicy struct {
	// MaxAttempts is the number of tries per DynamoDB call, the first included. Default 5;
	// 1 turns retries off; at most 20. With more than 1, complete (after the effect has run)
	// retries a transient error past it while its record's lock holds (in Lambda, until the
	// handler's deadline): giving up would let the next delivery run the effect again.
	MaxAttempts int
	// BaseDelay is the backoff cap of the first retry. Default 25ms.
	BaseDelay time.Duration
	// MaxDelay caps every backoff. Default 1s; at least BaseDelay.
	MaxDelay time.Duration
}

// ErrInvalidConfig is wrapped by the error New returns for an invalid Config.
var ErrInvalidConfig = errors.New("invalid idempotency config")

// ReservedAttrs are the names of every attribute a record writes besides its key attributes,
// in a new slice. A table's key attributes need other names, or every write would try to
// change the record's own key: New refuses them as PartitionKeyAttr and SortKeyAttr, and the
// consumer's IDEMPOTENCY_SORT_KEY and constructs/table's SortKey refuse them too, so a bad
// name fails at start or at synth with the setting's name rather than on every record.
func ReservedAttrs() []string { return layout.ReservedAttrs() }

// withDefaults validates cfg (and api) and returns it with defaults applied. Every problem is
// reported at once, each naming the field, the value and the fix.
func (cfg Config) withDefaults(apiNil bool) (Config, error) {
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }

	if !cfg.Disabled {
		if apiNil {
			add("DynamoDBAPI is nil: pass a *dynamodb.Client (built with idempotency.WithoutSDKRetries), or set Config.Disabled")
		}
		if strings.TrimSpace(cfg.TableName) == "" {
			add("Config.TableName is empty: set it to the idempotency table's name (IDEMPOTENCY_TABLE_NAME), or set Config.Disabled")
		}
	}
	cfg.keysWithDefaults(add)
	cfg.durationsWithDefaults(add)
	cfg.Retry.withDefaults(add)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(problems) > 0 {
		return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(problems...))
	}
	return cfg, nil
}

// keysWithDefaults defaults and checks what makes up each record's key: the id's prefix
// and the table's key attributes.
func (cfg *Config) keysWithDefaults(add func(format string, args ...any)) {
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = DefaultKeyPrefix
	}
	if strings.Contains(cfg.KeyPrefix, "#") {
		add("Config.KeyPrefix = %q contains \"#\", the separator of the record id: use a prefix without it", cfg.KeyPrefix)
	}
	if cfg.PartitionKeyAttr == "" {
		cfg.PartitionKeyAttr = DefaultPartitionKeyAttr
	}
	for _, a := range []struct{ field, value string }{
		{"PartitionKeyAttr", cfg.PartitionKeyAttr}, {"SortKeyAttr", cfg.SortKeyAttr},
	} {
		if slices.Contains(layout.ReservedAttrs(), a.value) {
			add("Config.%s = %q is an attribute the idempotency record writes: the table's key attributes need other names (the default partition key is %q)",
				a.field, a.value, DefaultPartitionKeyAttr)
		}
	}
	for _, a := range []struct{ field, value string }{
		{"KeyPrefix", cfg.KeyPrefix}, {"PartitionKeyAttr", cfg.PartitionKeyAttr}, {"SortKeyAttr", cfg.SortKeyAttr},
	} {
		// Each becomes part of every record's key: the prefix in the id, the names as the
		// key attributes.
		if at, bad := invalidUTF8(a.value); bad {
			add("Config.%s = %q is not valid UTF-8 (byte %#x at offset %d): %s; use UTF-8",
				a.field, a.value, a.value[at], at, utf8Reason)
		}
	}
	if cfg.SortKeyAttr != "" && cfg.SortKeyAttr == cfg.PartitionKeyAttr {
		add("Config.SortKeyAttr = %q is the same as Config.PartitionKeyAttr: use the table's sort key attribute, or leave it empty for a partition-key-only table",
			cfg.SortKeyAttr)
	}
}

// durationsWithDefaults defaults and checks how long a lock and a record last, and the
// cache's size.
func (cfg *Config) durationsWithDefaults(add func(format string, args ...any)) {
	if cfg.LockCap == 0 {
		cfg.LockCap = DefaultLockCap
	}
	lockOK := cfg.LockCap >= MinDuration && cfg.LockCap <= MaxLockCap
	if !lockOK {
		add("Config.LockCap = %s: must be between %s and %s (the maximum Lambda timeout); set it to the function timeout, or 0 for the default %s",
			cfg.LockCap, MinDuration, MaxLockCap, DefaultLockCap)
	}
	if cfg.RecordTTL == 0 {
		cfg.RecordTTL = DefaultRecordTTL
	}
	switch {
	case cfg.RecordTTL < MinDuration:
		add("Config.RecordTTL = %s: must be at least %s (expiration holds whole seconds), or 0 for the default %s",
			cfg.RecordTTL, MinDuration, DefaultRecordTTL)
	case lockOK && cfg.RecordTTL < cfg.LockCap:
		add("Config.RecordTTL = %s is shorter than Config.LockCap = %s: a record would expire while its lock is held; raise RecordTTL or lower LockCap",
			cfg.RecordTTL, cfg.LockCap)
	}
	if cfg.CacheSize < 0 {
		add("Config.CacheSize = %d: must be >= 1 to cache COMPLETED records, or 0 to turn the cache off", cfg.CacheSize)
	}
}

// withDefaults defaults and checks the store's retries of throttled and failed calls.
func (r *RetryPolicy) withDefaults(add func(format string, args ...any)) {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultRetryMaxAttempts
	}
	if r.MaxAttempts < 1 || r.MaxAttempts > MaxRetryAttempts {
		add("Config.Retry.MaxAttempts = %d: must be between 1 (no retries) and %d, or 0 for the default %d",
			r.MaxAttempts, MaxRetryAttempts, DefaultRetryMaxAttempts)
	}
	if r.BaseDelay == 0 {
		r.BaseDelay = DefaultRetryBaseDelay
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = max(DefaultRetryMaxDelay, r.BaseDelay)
	}
	if r.BaseDelay < 0 {
		add("Config.Retry.BaseDelay = %s: must be positive, or 0 for the default %s", r.BaseDelay, DefaultRetryBaseDelay)
	}
	if r.MaxDelay < r.BaseDelay {
		add("Config.Retry.MaxDelay = %s is below Config.Retry.BaseDelay = %s: raise MaxDelay, or 0 for the default %s",
			r.MaxDelay, r.BaseDelay, DefaultRetryMaxDelay)
	}
}
