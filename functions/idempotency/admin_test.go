package idempotency

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// admin builds an Admin on the env's table and clock, with cfg's layout.
func (e *env) admin(tb testing.TB, cfg Config) *Admin {
	tb.Helper()
	cfg.TableName = e.table
	cfg.Now = e.clock.Now
	a, err := NewAdmin(e.client, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// stuck stages an INPROGRESS record of key held by owner "crashed" on attempt 3, with its
// lock ending at lock.
func (e *env) stuck(tb testing.TB, key string, lock time.Time) {
	tb.Helper()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	e.put(tb, map[string]types.AttributeValue{
		"id": s("default#" + key), AttrStatus: s(StatusInProgress), AttrOwner: s("crashed"),
		AttrAttempt: number(3), AttrExpiration: number(e.clock.Now().Add(time.Hour).Unix()),
		AttrLockExpiration: number(lock.UnixMilli()),
	})
}

func TestAdminGetShowsTheRecord(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{ValidatePayload: true, StoreResult: true, RecordTTL: time.Hour})
	a := e.admin(t, Config{})
	var calls atomic.Int64
	if _, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("body")}, handler(&calls, []byte("result"), nil)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []RecordID{{Key: "k1"}, {ID: "default#k1"}} {
		ri, err := a.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("Get(%+v): %v", id, err)
		}
		want := RecordInfo{ID: "default#k1", Status: StatusCompleted, Owner: ri.Owner, Attempt: 1,
			Expires: e.clock.Now().Add(time.Hour), PayloadHash: PayloadHash([]byte("body")), ResultBytes: 6}
		if *ri != want || len(ri.Owner) != 32 {
			t.Errorf("Get(%+v) = %+v, want %+v with a 32-hex-digit owner", id, *ri, want)
		}
		if ri.LockLive(e.clock.Now()) || ri.Expired(e.clock.Now()) {
			t.Errorf("COMPLETED record: LockLive %v, Expired %v; want both false", ri.LockLive(e.clock.Now()), ri.Expired(e.clock.Now()))
		}
	}
	if _, err := a.Get(t.Context(), RecordID{Key: "absent"}); !errors.Is(err, ErrNoRecord) || err.Error() != `idempotency: no record: record "default#absent"` {
		t.Errorf("Get(absent) = %v, want ErrNoRecord naming the id", err)
	}
}

func TestAdminCompositeLayout(t *testing.T) {
	e := newEnv(t, "sk")
	g := e.guard(t, Config{SortKeyAttr: "sk"})
	a := e.admin(t, Config{SortKeyAttr: "sk"})
	var calls atomic.Int64
	if _, err := g.Run(t.Context(), Request{Key: "k1", Tenant: "t1"}, handler(&calls, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []RecordID{{Key: "k1", Tenant: "t1"}, {ID: "default#t1", SortKey: "k1"}} {
		if ri, err := a.Get(t.Context(), id); err != nil || ri.ID != "default#t1" || ri.SortKey != "k1" || ri.Status != StatusCompleted {
			t.Errorf("Get(%+v) = %+v, %v", id, ri, err)
		}
	}
	for _, tc := range []struct {
		id   RecordID
		want string
	}{
		{RecordID{ID: "default#t1"}, `idempotency: invalid request: the table has sort key "sk": give the record's sort key value too`},
		{RecordID{Key: "k1"}, `Request.Tenant is empty: with Config.SortKeyAttr set, every message needs a tenant`},
	} {
		if _, err := a.Get(t.Context(), tc.id); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Get(%+v) = %v, want ErrInvalidRequest with %q", tc.id, err, tc.want)
		}
	}
	pk := e.admin(t, Config{})
	if _, err := pk.Get(t.Context(), RecordID{ID: "x", SortKey: "y"}); !errors.Is(err, ErrInvalidRequest) ||
		!strings.Contains(err.Error(), "a sort key value is given but the table has none") {
		t.Errorf("Get with a sort key on a partition-key-only config = %v", err)
	}
}

// A live lock is refused, naming its owner and its end; Force releases it, and the next
// delivery acquires at once.
func TestAdminReleaseLiveLock(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{LockCap: time.Minute})
	a := e.admin(t, Config{})
	var calls atomic.Int64
	_, err := g.Run(t.Context(), Request{Key: "k1"}, func(ctx context.Context) ([]byte, error) {
		ri, err := a.Release(ctx, RecordID{Key: "k1"}, ReleaseOptions{})
		if !errors.Is(err, ErrReleaseRefused) || ri == nil {
			t.Fatalf("Release of a live lock = %+v, %v; want ErrReleaseRefused", ri, err)
		}
		for _, want := range []string{`owner "` + ri.Owner + `" holds a live lock until `, "(attempt 1, 1m0s from now)", "force the release"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
		if ri, err = a.Release(ctx, RecordID{Key: "k1"}, ReleaseOptions{Force: true}); err != nil || !ri.LockLive(e.clock.Now()) {
			t.Fatalf("forced Release = %+v, %v; want the live record as read, released", ri, err)
		}
		after, err := a.Get(ctx, RecordID{Key: "k1"})
		if err != nil || after.LockExpires.UnixMilli() != 0 || after.Owner != ri.Owner || after.Attempt != 1 {
			t.Errorf("after the forced release: %+v, %v; want lock 0, same owner and attempt", after, err)
		}
		// What Force risks: another delivery runs the effect at the same time.
		res, err := g.Run(ctx, Request{Key: "k1"}, handler(&calls, nil, nil))
		if err != nil || res.Outcome != OutcomeProcessed || res.Attempt != 2 || res.TookOver {
			t.Errorf("delivery after the forced release = %+v, %v; want processed, attempt 2, not a takeover", res, err)
		}
		return nil, nil
	})
	if !errors.Is(err, ErrLockLost) {
		t.Errorf("the first owner's complete = %v, want ErrLockLost (the second delivery took the record)", err)
	}
}

// A crashed owner's lapsed lock is released without Force; the next delivery acquires it at
// once as the next attempt.
func TestAdminReleaseStuckRecord(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	a := e.admin(t, Config{})
	e.stuck(t, "k1", e.clock.Now().Add(-time.Second))
	ri, err := a.Release(t.Context(), RecordID{Key: "k1"}, ReleaseOptions{})
	if err != nil || ri.Owner != "crashed" || ri.Attempt != 3 || ri.LockLive(e.clock.Now()) {
		t.Fatalf("Release = %+v, %v", ri, err)
	}
	var calls atomic.Int64
	res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, nil))
	if err != nil || res.Outcome != OutcomeProcessed || res.Attempt != 4 || res.TookOver || calls.Load() != 1 {
		t.Errorf("next delivery = %+v, %v, %d calls; want processed as attempt 4, not a takeover", res, err, calls.Load())
	}
}

func TestAdminReleaseRefusals(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{RecordTTL: time.Hour})
	a := e.admin(t, Config{})
	var calls atomic.Int64
	if _, err := g.Run(t.Context(), Request{Key: "done"}, handler(&calls, nil, nil)); err != nil {
		t.Fatal(err)
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	future := number(e.clock.Now().Add(time.Hour).Unix())
	e.put(t, map[string]types.AttributeValue{"id": s("default#ownerless"), AttrStatus: s(StatusInProgress),
		AttrExpiration: future, AttrLockExpiration: number(0)})
	// Expired for the store's clock, not for DynamoDB Local's: its TTL sweeper deletes an item
	// past its expiration on the wall clock, which on a loaded machine it did before the
	// release read it ("no record").
	e.put(t, map[string]types.AttributeValue{"id": s("default#expired"), AttrStatus: s(StatusInProgress), AttrOwner: s("o"),
		AttrExpiration: number(e.clock.Now().Add(10 * time.Minute).Unix()), AttrLockExpiration: number(1)})
	e.put(t, map[string]types.AttributeValue{"id": s("default#odd"), AttrStatus: s("PENDING"), AttrExpiration: future})
	e.stuck(t, "released", time.UnixMilli(0))
	e.clock.Advance(11 * time.Minute)
	for key, want := range map[string]string{
		"done":      `record "default#done": the record is COMPLETED (attempt 1): its effect has run, and releasing it would let a redelivery run it again`,
		"ownerless": `record "default#ownerless": the record has no owner attribute (written by another runtime), so a release cannot be fenced`,
		"expired":   `record "default#expired": the record expired at `,
		"odd":       `record "default#odd": status "PENDING" is not INPROGRESS`,
		"released":  `record "default#released": the record is already released (lock 0): the next delivery acquires it`,
	} {
		for _, force := range []bool{false, true} {
			_, err := a.Release(t.Context(), RecordID{Key: key}, ReleaseOptions{Force: force})
			if !errors.Is(err, ErrReleaseRefused) || !strings.Contains(err.Error(), want) {
				t.Errorf("Release(%s, Force %v) = %v, want ErrReleaseRefused with %q", key, force, err, want)
			}
		}
	}
	if ri, _ := a.Get(t.Context(), RecordID{Key: "done"}); ri.Status != StatusCompleted {
		t.Errorf("refused release changed the record: %+v", ri)
	}
	if _, err := a.Release(t.Context(), RecordID{Key: "absent"}, ReleaseOptions{}); !errors.Is(err, ErrNoRecord) {
		t.Errorf("Release(absent) = %v, want ErrNoRecord", err)
	}
}

// The release is fenced on the owner that was read: a record taken over between the read and
// the write is left alone and the change is reported.
func TestAdminReleaseIsFenced(t *testing.T) {
	e := newEnv(t, "")
	a := e.admin(t, Config{})
	e.stuck(t, "k1", e.clock.Now().Add(-time.Second))
	e.tr.fault = func(op string, n int) (*http.Response, error, bool) {
		if op == "UpdateItem" && n == 1 { // a delivery takes the record over after our read
			s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			e.put(t, map[string]types.AttributeValue{"id": s("default#k1"), AttrStatus: s(StatusInProgress), AttrOwner: s("taker"),
				AttrAttempt: number(4), AttrExpiration: number(e.clock.Now().Add(time.Hour).Unix()),
				AttrLockExpiration: number(e.clock.Now().Add(time.Minute).UnixMilli())})
		}
		return nil, nil, false
	}
	_, err := a.Release(t.Context(), RecordID{Key: "k1"}, ReleaseOptions{Force: true})
	want := `idempotency: lock lost: record "default#k1": the record changed meanwhile: now INPROGRESS, owner "taker", attempt 4; read it again`
	if !errors.Is(err, ErrLockLost) || err.Error() != want {
		t.Errorf("Release = %v, want %q", err, want)
	}
	if r := e.record(t, id("k1")); r.owner != "taker" || r.lockMs == 0 {
		t.Errorf("the taker's record was changed: %+v", r)
	}
}

func TestNewAdminValidates(t *testing.T) {
	for _, tc := range []struct {
		api  AdminAPI
		cfg  Config
		want string
	}{
		{nil, Config{TableName: "t"}, "DynamoDBAPI is nil"},
		{(*dynamodb.Client)(nil), Config{TableName: "t"}, "DynamoDBAPI is nil"},
		{&dynamodb.Client{}, Config{}, "Config.TableName is empty"},
		{&dynamodb.Client{}, Config{TableName: "t", KeyPrefix: "a#b"}, `Config.KeyPrefix = "a#b" contains "#"`},
		{&dynamodb.Client{}, Config{TableName: "t", Disabled: true}, "Config.Disabled is set: an Admin needs the table"},
	} {
		if a, err := NewAdmin(tc.api, tc.cfg); a != nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewAdmin(%+v) = %v, %v; want ErrInvalidConfig with %q", tc.cfg, a, err, tc.want)
		}
	}
}
