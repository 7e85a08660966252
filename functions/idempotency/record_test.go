package idempotency

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestBuildKey(t *testing.T) {
	simple := &Config{KeyPrefix: "consumer"}
	composite := &Config{KeyPrefix: "consumer", SortKeyAttr: "sk"}
	for _, tc := range []struct {
		name   string
		cfg    *Config
		req    Request
		pk, sk string
		err    string
	}{
		{"simple", simple, Request{Key: "order-1"}, "consumer#order-1", "", ""},
		{"key with separator", simple, Request{Key: "a#b"}, "consumer#a#b", "", ""},
		{"composite", composite, Request{Key: "order-1", Tenant: "t1"}, "consumer#t1", "order-1", ""},
		{"empty key", simple, Request{}, "", "", "Request.Key is empty"},
		{"empty key composite", composite, Request{Tenant: "t"}, "", "", "Request.Key is empty"},
		{"tenant without sort key", simple, Request{Key: "k", Tenant: "t"}, "", "", "Request.Tenant is set but Config.SortKeyAttr is empty"},
		{"no tenant", composite, Request{Key: "k"}, "", "", "Request.Tenant is empty: with Config.SortKeyAttr set"},
		{"max partition key", simple, Request{Key: strings.Repeat("k", MaxPartitionKeyBytes-len("consumer#"))}, "consumer#" + strings.Repeat("k", MaxPartitionKeyBytes-len("consumer#")), "", ""},
		{"partition key too long", simple, Request{Key: strings.Repeat("k", MaxPartitionKeyBytes)}, "", "",
			"the id consumer#<key> is 2057 bytes; DynamoDB allows 2048 in a partition key: use a shorter key"},
		{"tenant too long", composite, Request{Key: "k", Tenant: strings.Repeat("t", MaxPartitionKeyBytes)}, "", "",
			"the id consumer#<tenant> is 2057 bytes; DynamoDB allows 2048 in a partition key: use a shorter tenant"},
		{"key not UTF-8", simple, Request{Key: "order-\xff"}, "", "",
			"Request.Key is not valid UTF-8 (byte 0xff at offset 6): DynamoDB strings are UTF-8, and the SDK replaces invalid bytes with U+FFFD, so different values would name the same record"},
		{"key with a truncated sequence", composite, Request{Key: "\xe2\x82", Tenant: "t"}, "", "",
			"Request.Key is not valid UTF-8 (byte 0xe2 at offset 0)"},
		{"tenant not UTF-8", composite, Request{Key: "k", Tenant: "t\xfe"}, "", "",
			"Request.Tenant is not valid UTF-8 (byte 0xfe at offset 1)"},
		{"multi-byte UTF-8 and a literal U+FFFD are keys", composite, Request{Key: "ünïcødé-\uFFFD", Tenant: "日本"},
			"consumer#日本", "ünïcødé-\uFFFD", ""},
		{"sort key too long", composite, Request{Key: strings.Repeat("k", MaxSortKeyBytes+1), Tenant: "t"}, "", "",
			"the key is 1025 bytes; DynamoDB allows 1024 in a sort key: use a shorter key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := buildKey(tc.cfg, tc.req)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want ErrInvalidRequest with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.pk != tc.pk || k.sk != tc.sk || k.key != tc.req.Key || k.tenant != tc.req.Tenant {
				t.Errorf("key = %+v, want pk %q sk %q", k, tc.pk, tc.sk)
			}
		})
	}
}

func TestPayloadHash(t *testing.T) {
	// sha256("") and sha256("abc"), the FIPS 180-2 test vectors.
	for in, want := range map[string]string{
		"":    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	} {
		if got := PayloadHash([]byte(in)); got != want {
			t.Errorf("PayloadHash(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLockUntil(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // a record clock far from the real one
	for _, tc := range []struct {
		name    string
		timeout time.Duration // 0: no deadline
		lockCap time.Duration
		want    time.Duration // lock - now, less the real time the test itself takes
	}{
		{"no deadline takes the cap", 0, time.Minute, time.Minute},
		{"deadline before cap", 10 * time.Second, time.Minute, 10 * time.Second},
		{"cap before deadline", time.Hour, time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			began := time.Now()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			got := lockUntil(ctx, now, tc.lockCap).Sub(now)
			// What is left of a deadline shrinks by the real time between WithTimeout and
			// lockUntil: measured, not guessed, so a loaded machine cannot fail the test.
			if took := time.Since(began); got > tc.want || got < tc.want-took {
				t.Errorf("lock = now + %s, want now + %s (less at most the %s the test took)", got, tc.want, took)
			}
		})
	}
}

func TestAttemptAfter(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	live := now.Unix() + 60
	for _, tc := range []struct {
		name     string
		old      *record
		attempt  int
		tookOver bool
	}{
		{"absent", nil, 1, false},
		{"expired completed", &record{status: StatusCompleted, expiration: now.Unix() - 1, attempt: 4}, 1, false},
		{"expired in progress", &record{status: StatusInProgress, expiration: now.Unix() - 1, lockMs: 1, attempt: 4}, 1, false},
		{"released", &record{status: StatusInProgress, expiration: live, lockMs: 0, hasLock: true, attempt: 2}, 3, false},
		{"lapsed lock", &record{status: StatusInProgress, expiration: live, lockMs: now.UnixMilli() - 1, hasLock: true, attempt: 2}, 3, true},
		{"powertools record without attempt", &record{status: StatusInProgress, expiration: live, lockMs: 5, hasLock: true}, 1, true},
		{"expiring this second is live", &record{status: StatusInProgress, expiration: now.Unix(), lockMs: 5, hasLock: true, attempt: 1}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, took := attemptAfter(tc.old, now)
			if a != tc.attempt || took != tc.tookOver {
				t.Errorf("attemptAfter = %d, %v; want %d, %v", a, took, tc.attempt, tc.tookOver)
			}
		})
	}
}

func TestDecodeRecord(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	r, err := decodeRecord(map[string]types.AttributeValue{
		"id": s("p#k"), "status": s("COMPLETED"), "expiration": n("1700000000"),
		"in_progress_expiration": n("1700000000123.0"), // a decimal from another writer
		"validation":             s("abc"), "data": s(`{"x":1}`), "owner": s("o"), "attempt": n("3"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := record{status: StatusCompleted, expiration: 1700000000, lockMs: 1700000000123, hasLock: true,
		hash: "abc", data: []byte(`{"x":1}`), owner: "o", attempt: 3}
	if r.status != want.status || r.expiration != want.expiration || r.lockMs != want.lockMs || !r.hasLock ||
		r.hash != want.hash || string(r.data) != string(want.data) || r.owner != want.owner || r.attempt != want.attempt {
		t.Errorf("record = %+v\nwant     %+v", *r, want)
	}
	if r, err := decodeRecord(nil); r != nil || err != nil {
		t.Errorf("decodeRecord(nil) = %v, %v", r, err)
	}
	_, err = decodeRecord(map[string]types.AttributeValue{"status": n("1"), "expiration": s("x"), "attempt": n("many"), "data": n("1")})
	for _, want := range []string{
		"unreadable idempotency record", "attribute status has type *types.AttributeValueMemberN, want S",
		"attribute expiration has type *types.AttributeValueMemberS, want N", `attribute attempt = "many" is not a number`,
		"attribute data has type *types.AttributeValueMemberN, want S or B",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&LockLostError{Key: "k", Op: "complete", Owner: "me"}, `idempotency: complete key "k": lock lost: the record no longer exists`},
		{&LockLostError{Key: "k", Tenant: "t", Op: "release", Owner: "me", CurrentOwner: "you", CurrentStatus: "INPROGRESS", CurrentAttempt: 3},
			`idempotency: release key "k" (tenant "t"): lock lost: record is INPROGRESS, held by owner "you" on attempt 3 (we are "me")`},
		{&HandlerError{Key: "k", Attempt: 2, Err: errors.New("boom"), ReleaseErr: errors.New("throttled")},
			`idempotency: key "k": handler failed on attempt 2: boom (and the record was not released: throttled)`},
		{&StoreError{Key: "k", Op: "complete", Err: errors.New("gave up")}, `idempotency: complete key "k": gave up`},
		{&InProgressError{Key: "k", Attempt: 1, LockExpires: time.UnixMilli(1700000000123)},
			`idempotency: key "k" is in progress elsewhere (attempt 1, lock until 2023-11-14T22:13:20.123Z)`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q\nwant      %q", got, tc.want)
		}
	}
	if !errors.Is(&StoreError{Err: context.Canceled}, context.Canceled) {
		t.Error("StoreError does not unwrap")
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{OutcomeUnknown: "unknown", OutcomeProcessed: "processed", OutcomeDuplicate: "duplicate", 9: "unknown"} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, want)
		}
	}
}

func TestNewOwnerIsUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		o := newOwner()
		if len(o) != 32 || seen[o] {
			t.Fatalf("owner %q repeated or malformed", o)
		}
		seen[o] = true
	}
}

// cacheKey must tell apart every two distinct (pk, sk) pairs, including those a separator
// byte inside a key or tenant would join into one string.
func TestCacheKeyIsInjective(t *testing.T) {
	pairs := [][2]string{
		{"p#a\x00b", "c"}, {"p#a", "b\x00c"}, // a NUL separator
		{"p#a:b", "c"}, {"p#a", "b:c"}, // the length prefix's own separator
		{"p#ab", ""}, {"p#a", "b"}, {"p#", "ab"},
		{"3:p#", "x"}, {"p#", "3:p#x"}, // a key that looks like a length prefix
		{"10:p#aaaaaa", ""}, {"1", "0:p#aaaaaa"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		ck := recordKey{pk: p[0], sk: p[1]}.cacheKey()
		if other, dup := seen[ck]; dup {
			t.Errorf("(%q, %q) and (%q, %q) share the cache key %q", other[0], other[1], p[0], p[1], ck)
		}
		seen[ck] = p
	}
}
