package idempotency

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func id(key string) map[string]string { return map[string]string{"id": "default#" + key} }

func TestRunNewKeyCompletes(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{ValidatePayload: true})
	var calls atomic.Int64
	res, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte(`{"a":1}`)}, handler(&calls, []byte("out"), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Outcome: OutcomeProcessed, Data: []byte("out"), Attempt: 1}
	if res.Outcome != want.Outcome || string(res.Data) != "out" || res.Attempt != 1 || res.TookOver {
		t.Errorf("Result = %+v, want %+v", res, want)
	}
	if calls.Load() != 1 {
		t.Errorf("handler ran %d times", calls.Load())
	}
	r := e.record(t, id("k1"))
	now := e.clock.Now()
	if r.status != StatusCompleted || r.attempt != 1 || r.hasLock || r.owner == "" ||
		r.hash != PayloadHash([]byte(`{"a":1}`)) || r.data != nil ||
		r.expiration != now.Add(DefaultRecordTTL).Unix() {
		t.Errorf("record = %+v", r)
	}
}

func TestRunDuplicateSkipsHandler(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{ValidatePayload: true})
	var calls atomic.Int64
	req := Request{Key: "k1", Payload: []byte("p")}
	if _, err := g.Run(t.Context(), req, handler(&calls, nil, nil)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeDuplicate || res.Attempt != 1 || res.Data != nil {
		t.Errorf("Result = %+v, want a duplicate of attempt 1", res)
	}
	if calls.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", calls.Load())
	}
	if got := OutcomeDuplicate.String(); got != "duplicate" {
		t.Errorf("String() = %q", got)
	}
}

func TestRunInProgressElsewhere(t *testing.T) {
	e := newEnv(t, "")
	a, b := e.guard(t, Config{}), e.guard(t, Config{})
	var calls atomic.Int64
	var inner error
	_, err := a.Run(t.Context(), Request{Key: "k1"}, func(ctx context.Context) ([]byte, error) {
		calls.Add(1)
		_, inner = b.Run(ctx, Request{Key: "k1"}, handler(&calls, nil, nil))
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ipe *InProgressError
	if !errors.As(inner, &ipe) || !errors.Is(inner, ErrInProgress) {
		t.Fatalf("second owner got %v, want *InProgressError", inner)
	}
	wantLock := e.clock.Now().Add(DefaultLockCap)
	if ipe.Key != "k1" || ipe.Attempt != 1 || !ipe.LockExpires.Equal(wantLock) {
		t.Errorf("InProgressError = %+v, want key k1, attempt 1, lock until %s", ipe, wantLock)
	}
	for _, frag := range []string{`key "k1" is in progress elsewhere`, "attempt 1", "lock until"} {
		if !strings.Contains(inner.Error(), frag) {
			t.Errorf("message %q lacks %q", inner, frag)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("handlers ran %d times, want 1", calls.Load())
	}
}

// A worker whose lock lapsed (crashed, or ran past its time) is taken over by the next
// delivery; when it comes back it can neither complete nor release the new owner's record,
// whether the new owner is still running (only the owner token fences it then) or done.
func TestRunExpiredLockTakeoverFencesStaleOwner(t *testing.T) {
	for _, tc := range []struct {
		name          string
		staleErr      error // what the stale worker's handler returns
		whileRunning  bool  // the stale worker finishes while the new owner still runs
		wantOp        string
		wantCurStatus string
	}{
		{"stale complete after new owner completed", nil, false, "complete", StatusCompleted},
		{"stale release after new owner completed", errors.New("boom"), false, "release", StatusCompleted},
		{"stale complete while new owner runs", nil, true, "complete", StatusInProgress},
		{"stale release while new owner runs", errors.New("boom"), true, "release", StatusInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			cfg := Config{LockCap: time.Minute}
			stale, fresh := e.guard(t, cfg), e.guard(t, cfg)
			var calls atomic.Int64
			acquired, resume := make(chan struct{}), make(chan struct{})
			staleDone := make(chan error, 1)
			go func() {
				_, err := stale.Run(t.Context(), Request{Key: "k1"}, func(ctx context.Context) ([]byte, error) {
					calls.Add(1)
					close(acquired)
					<-resume
					return nil, tc.staleErr
				})
				staleDone <- err
			}()
			<-acquired
			e.clock.Advance(time.Minute + time.Millisecond) // the stale worker's lock lapses
			var staleErr error
			took, err := fresh.Run(t.Context(), Request{Key: "k1"}, func(ctx context.Context) ([]byte, error) {
				calls.Add(1)
				if tc.whileRunning {
					close(resume)
					staleErr = <-staleDone
				}
				return nil, nil
			})
			if !tc.whileRunning {
				close(resume)
				staleErr = <-staleDone
			}
			if err != nil {
				t.Fatalf("new owner: %v", err)
			}
			if took.Outcome != OutcomeProcessed || !took.TookOver || took.Attempt != 2 {
				t.Errorf("takeover Result = %+v, want processed, TookOver, attempt 2", took)
			}
			var he *HandlerError
			if errors.As(staleErr, &he) {
				staleErr = he.ReleaseErr
			}
			var lost *LockLostError
			if !errors.As(staleErr, &lost) || !errors.Is(staleErr, ErrLockLost) {
				t.Fatalf("stale owner got %v, want *LockLostError", staleErr)
			}
			r := e.record(t, id("k1"))
			if lost.Op != tc.wantOp || lost.CurrentOwner != r.owner || lost.CurrentStatus != tc.wantCurStatus ||
				lost.CurrentAttempt != 2 || lost.Owner == r.owner {
				t.Errorf("LockLostError = %+v, record owner %q", lost, r.owner)
			}
			if want := tc.wantOp + ` key "k1": lock lost: record is ` + tc.wantCurStatus; !strings.Contains(lost.Error(), want) {
				t.Errorf("message %q lacks %q", lost, want)
			}
			if r.status != StatusCompleted || r.attempt != 2 || r.hasLock {
				t.Errorf("record = %+v: the stale owner changed the new one's record", r)
			}
			if calls.Load() != 2 {
				t.Errorf("handlers ran %d times, want 2", calls.Load())
			}
		})
	}
}

// A crashed worker leaves INPROGRESS behind: written directly here, as a Powertools runtime
// or a killed Lambda would leave it.
func TestRunTakeoverOfAbandonedRecord(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	now := e.clock.Now()
	e.put(t, map[string]types.AttributeValue{
		"id":                     &types.AttributeValueMemberS{Value: "default#k1"},
		"status":                 &types.AttributeValueMemberS{Value: StatusInProgress},
		"expiration":             number(now.Add(time.Hour).Unix()),
		"in_progress_expiration": number(now.Add(-time.Millisecond).UnixMilli()),
		"owner":                  &types.AttributeValueMemberS{Value: "crashed"},
		"attempt":                number(3),
	})
	var calls atomic.Int64
	res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeProcessed || !res.TookOver || res.Attempt != 4 {
		t.Errorf("Result = %+v, want processed, TookOver, attempt 4", res)
	}
	if r := e.record(t, id("k1")); r.status != StatusCompleted || r.attempt != 4 || r.owner == "crashed" {
		t.Errorf("record = %+v", r)
	}
}

// DynamoDB deletes expired items lazily, so a record past its TTL must count as absent. The
// item is written with an expiration still in the future in real time (so DynamoDB Local
// cannot sweep it), and the Guard's clock is moved past it.
func TestRunTTLExpiredRecordIsAbsent(t *testing.T) {
	for _, status := range []string{StatusCompleted, StatusInProgress} {
		t.Run(status, func(t *testing.T) {
			e := newEnv(t, "")
			g := e.guard(t, Config{ValidatePayload: true})
			now := e.clock.Now()
			e.put(t, map[string]types.AttributeValue{
				"id":                     &types.AttributeValueMemberS{Value: "default#k1"},
				"status":                 &types.AttributeValueMemberS{Value: status},
				"expiration":             number(now.Add(time.Hour).Unix()),
				"in_progress_expiration": number(now.Add(time.Hour).UnixMilli()),
				"validation":             &types.AttributeValueMemberS{Value: PayloadHash([]byte("old payload"))},
				"data":                   &types.AttributeValueMemberS{Value: "old result"},
				"attempt":                number(7),
			})
			e.clock.Advance(time.Hour + time.Second)
			var calls atomic.Int64
			res, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("new payload")}, handler(&calls, nil, nil))
			if err != nil {
				t.Fatalf("Run: %v (an expired record must not block, nor be compared)", err)
			}
			if res.Outcome != OutcomeProcessed || res.Attempt != 1 || res.TookOver || calls.Load() != 1 {
				t.Errorf("Result = %+v, calls %d; want a fresh attempt 1", res, calls.Load())
			}
			r := e.record(t, id("k1"))
			if r.status != StatusCompleted || r.attempt != 1 || r.data != nil || r.hash != PayloadHash([]byte("new payload")) {
				t.Errorf("record = %+v, want a fresh COMPLETED record", r)
			}
		})
	}
}

func TestRunPayloadMismatch(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		e := newEnv(t, "")
		g := e.guard(t, Config{ValidatePayload: true})
		var calls atomic.Int64
		if _, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("one")}, handler(&calls, nil, nil)); err != nil {
			t.Fatal(err)
		}
		_, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("two")}, handler(&calls, nil, nil))
		checkMismatch(t, err, StatusCompleted, "one", "two")
		if calls.Load() != 1 {
			t.Errorf("handler ran %d times", calls.Load())
		}
	})
	t.Run("in progress", func(t *testing.T) {
		e := newEnv(t, "")
		a, b := e.guard(t, Config{ValidatePayload: true}), e.guard(t, Config{ValidatePayload: true})
		var calls atomic.Int64
		var inner error
		if _, err := a.Run(t.Context(), Request{Key: "k1", Payload: []byte("one")}, func(ctx context.Context) ([]byte, error) {
			_, inner = b.Run(ctx, Request{Key: "k1", Payload: []byte("two")}, handler(&calls, nil, nil))
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		checkMismatch(t, inner, StatusInProgress, "one", "two")
		if calls.Load() != 0 {
			t.Errorf("second handler ran")
		}
	})
	t.Run("lapsed lock is not taken over for another payload", func(t *testing.T) {
		e := newEnv(t, "")
		cfg := Config{ValidatePayload: true, LockCap: time.Minute}
		a, b := e.guard(t, cfg), e.guard(t, cfg)
		var calls atomic.Int64
		var inner error
		if _, err := a.Run(t.Context(), Request{Key: "k1", Payload: []byte("one")}, func(ctx context.Context) ([]byte, error) {
			e.clock.Advance(2 * time.Minute)
			_, inner = b.Run(ctx, Request{Key: "k1", Payload: []byte("two")}, handler(&calls, nil, nil))
			return nil, nil
		}); err != nil {
			t.Fatalf("the first owner lost its record to a mismatched payload: %v", err)
		}
		checkMismatch(t, inner, StatusInProgress, "one", "two")
	})
	t.Run("validation off ignores payload", func(t *testing.T) {
		e := newEnv(t, "")
		g := e.guard(t, Config{})
		var calls atomic.Int64
		for _, p := range []string{"one", "two"} {
			if _, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte(p)}, handler(&calls, nil, nil)); err != nil {
				t.Fatal(err)
			}
		}
		if calls.Load() != 1 {
			t.Errorf("handler ran %d times", calls.Load())
		}
		if r := e.record(t, id("k1")); r.hash != "" {
			t.Errorf("validation stored with ValidatePayload off: %q", r.hash)
		}
	})
}

func checkMismatch(t *testing.T, err error, status, stored, got string) {
	t.Helper()
	var pm *PayloadMismatchError
	if !errors.As(err, &pm) || !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("err = %v, want *PayloadMismatchError", err)
	}
	if pm.Key != "k1" || pm.Status != status || pm.StoredHash != PayloadHash([]byte(stored)) || pm.PayloadHash != PayloadHash([]byte(got)) {
		t.Errorf("PayloadMismatchError = %+v", pm)
	}
	if want := `key "k1" reused with a different payload (record ` + status + ` has sha256 ` + pm.StoredHash; !strings.Contains(err.Error(), want) {
		t.Errorf("message %q lacks %q", err, want)
	}
}

func TestRunStoredResultReplay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		wantType string
	}{
		{"json as S", []byte(`{"order":42}`), "S"},
		{"binary as B", []byte{0xff, 0x00, 0xfe}, "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			g := e.guard(t, Config{StoreResult: true})
			var calls atomic.Int64
			if _, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, tc.data, nil)); err != nil {
				t.Fatal(err)
			}
			res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, []byte("other"), nil))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != OutcomeDuplicate || string(res.Data) != string(tc.data) {
				t.Errorf("Result = %+v, want duplicate with data %q", res, tc.data)
			}
			got := e.item(t, id("k1"))["data"]
			if _, isS := got.(*types.AttributeValueMemberS); isS != (tc.wantType == "S") {
				t.Errorf("data stored as %T, want %s", got, tc.wantType)
			}
		})
	}
	t.Run("not stored without StoreResult", func(t *testing.T) {
		e := newEnv(t, "")
		g := e.guard(t, Config{})
		var calls atomic.Int64
		res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, []byte("x"), nil))
		if err != nil || string(res.Data) != "x" {
			t.Fatalf("Run = %+v, %v; the processed result is returned either way", res, err)
		}
		if _, ok := e.item(t, id("k1"))["data"]; ok {
			t.Error("data stored with StoreResult off")
		}
	})
}

func TestRunHandlerErrorReleasesForRetry(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	boom := errors.New("downstream 503")
	var calls atomic.Int64
	_, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, boom))
	var he *HandlerError
	if !errors.As(err, &he) || !errors.Is(err, boom) || he.Attempt != 1 || he.ReleaseErr != nil {
		t.Fatalf("err = %#v, want *HandlerError wrapping boom, attempt 1, released", err)
	}
	if want := `idempotency: key "k1": handler failed on attempt 1: downstream 503`; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if r := e.record(t, id("k1")); r.status != StatusInProgress || r.lockMs != 0 || r.attempt != 1 {
		t.Errorf("record after release = %+v, want INPROGRESS, lock 0, attempt 1", r)
	}
	// No waiting for a lock: the next delivery runs at once, as attempt 2, not a takeover.
	res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != OutcomeProcessed || res.Attempt != 2 || res.TookOver {
		t.Errorf("retry Result = %+v, want processed attempt 2 without takeover", res)
	}
	if r := e.record(t, id("k1")); r.status != StatusCompleted || r.attempt != 2 {
		t.Errorf("record = %+v", r)
	}
}

func TestRunPanicReleasesAndRepanics(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		_, _ = g.Run(t.Context(), Request{Key: "k1"}, func(context.Context) ([]byte, error) { panic("kaboom") })
		t.Error("Run returned after a panic")
	}()
	if r := e.record(t, id("k1")); r.status != StatusInProgress || r.lockMs != 0 {
		t.Errorf("record after panic = %+v, want released", r)
	}
	var calls atomic.Int64
	if res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, nil)); err != nil || res.Attempt != 2 {
		t.Errorf("retry = %+v, %v; want attempt 2", res, err)
	}
}

func TestRunCompositeKey(t *testing.T) {
	e := newEnv(t, "sk")
	g := e.guard(t, Config{SortKeyAttr: "sk", KeyPrefix: "consumer"})
	var calls atomic.Int64
	for _, tenant := range []string{"t1", "t2"} {
		res, err := g.Run(t.Context(), Request{Key: "same", Tenant: tenant}, handler(&calls, nil, nil))
		if err != nil || res.Outcome != OutcomeProcessed {
			t.Fatalf("tenant %s: %+v, %v; tenants must not share records", tenant, res, err)
		}
	}
	res, err := g.Run(t.Context(), Request{Key: "same", Tenant: "t1"}, handler(&calls, nil, nil))
	if err != nil || res.Outcome != OutcomeDuplicate {
		t.Errorf("repeat in t1: %+v, %v; want duplicate", res, err)
	}
	if calls.Load() != 2 {
		t.Errorf("handler ran %d times, want 2", calls.Load())
	}
	for _, tenant := range []string{"t1", "t2"} {
		if r := e.record(t, map[string]string{"id": "consumer#" + tenant, "sk": "same"}); r == nil || r.status != StatusCompleted {
			t.Errorf("record of %s = %+v", tenant, r)
		}
	}
	_, err = g.Run(t.Context(), Request{Key: "same"}, handler(&calls, nil, nil))
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "Request.Tenant is empty") {
		t.Errorf("missing tenant: %v", err)
	}
}

func TestRunCacheHitMakesNoCall(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{CacheSize: 10, ValidatePayload: true, StoreResult: true, RecordTTL: time.Hour})
	var calls atomic.Int64
	req := Request{Key: "k1", Payload: []byte("p")}
	if _, err := g.Run(t.Context(), req, handler(&calls, []byte("r"), nil)); err != nil {
		t.Fatal(err)
	}
	e.tr.snapshot()
	for i := range 3 {
		res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
		if err != nil || res.Outcome != OutcomeDuplicate || string(res.Data) != "r" || res.Attempt != 1 {
			t.Fatalf("cached run %d: %+v, %v", i, res, err)
		}
		res.Data[0] = 'X' // the caller's copy; the cache must not change
	}
	_, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("other")}, handler(&calls, nil, nil))
	checkMismatch(t, err, StatusCompleted, "p", "other")
	if got := e.tr.snapshot(); len(got) != 0 {
		t.Errorf("cached duplicates made DynamoDB calls: %v", got)
	}
	// The entry dies with the record: past the TTL the key is new again.
	e.clock.Advance(time.Hour + time.Second)
	res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
	if err != nil || res.Outcome != OutcomeProcessed {
		t.Errorf("after expiry: %+v, %v; want processed", res, err)
	}
	if calls.Load() != 2 {
		t.Errorf("handler ran %d times, want 2", calls.Load())
	}

	// A duplicate found in DynamoDB fills the cache too.
	g2 := e.guard(t, Config{CacheSize: 10})
	e.tr.snapshot()
	for range 2 {
		if res, err := g2.Run(t.Context(), req, handler(&calls, nil, nil)); err != nil || res.Outcome != OutcomeDuplicate {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	if got := e.tr.snapshot(); got["UpdateItem"] != 1 || len(got) != 1 {
		t.Errorf("two duplicates on a cold cache made %v, want 1 UpdateItem", got)
	}
}

func TestRunDisabled(t *testing.T) {
	g, err := New(nil, Config{Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	for range 2 {
		res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, []byte("d"), nil))
		if err != nil || res.Outcome != OutcomeProcessed || string(res.Data) != "d" || res.Attempt != 0 {
			t.Errorf("Run = %+v, %v", res, err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("disabled guard ran the handler %d times, want every time (2)", calls.Load())
	}
	boom := errors.New("boom")
	_, err = g.Run(t.Context(), Request{}, handler(&calls, nil, boom))
	var he *HandlerError
	if !errors.As(err, &he) || !errors.Is(err, boom) {
		t.Errorf("err = %v, want *HandlerError wrapping boom", err)
	}
}

func TestRunRejectsBadRequests(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	done, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		req  Request
		fn   func(context.Context) ([]byte, error)
		want []string
		is   error
	}{
		{"empty key", t.Context(), Request{}, okFn, []string{"Request.Key is empty"}, ErrInvalidRequest},
		{"tenant without sort key", t.Context(), Request{Key: "k", Tenant: "t"}, okFn,
			[]string{`key "k" (tenant "t")`, "Request.Tenant is set but Config.SortKeyAttr is empty"}, ErrInvalidRequest},
		{"oversize key", t.Context(), Request{Key: strings.Repeat("x", MaxPartitionKeyBytes)}, okFn,
			[]string{"is " + strconv.Itoa(MaxPartitionKeyBytes+len("default#")) + " bytes; DynamoDB allows 2048 in a partition key"}, ErrInvalidRequest},
		{"nil handler", t.Context(), Request{Key: "k"}, nil, []string{"handler func is nil"}, ErrInvalidRequest},
		{"cancelled ctx", done, Request{Key: "k"}, okFn, []string{`key "k": not started`}, context.Canceled},
		{"deadline passed", expired, Request{Key: "k"}, okFn, []string{`key "k": not started`}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.tr.snapshot()
			_, err := g.Run(tc.ctx, tc.req, tc.fn)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
			if got := e.tr.snapshot(); len(got) != 0 {
				t.Errorf("a rejected request made calls: %v", got)
			}
		})
	}
}

func okFn(context.Context) ([]byte, error) { return nil, nil }

// The lock never outlives the invocation: with a ctx deadline shorter than LockCap, the
// record's lock ends at the deadline.
func TestRunLockFollowsDeadline(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{Now: time.Now})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var lockMs int64
	began := time.Now()
	_, err := g.Run(ctx, Request{Key: "k1"}, func(context.Context) ([]byte, error) {
		lockMs = e.record(t, id("k1")).lockMs
		return nil, nil
	})
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	// The Guard reads its clock and then what is left of the deadline: the lock can end
	// before the deadline by the real time in between, which Run's own duration bounds (a
	// loaded machine stretches it; it is measured, not guessed). It never ends after it
	// (the record keeps milliseconds).
	if d := time.UnixMilli(lockMs).Sub(deadline); d < -took || d > time.Millisecond {
		t.Errorf("lock ends %s from the ctx deadline, want at it (less at most the %s Run took)", d, took)
	}
}

func TestRunStoreErrors(t *testing.T) {
	e := newEnv(t, "")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing table", Config{TableName: "no-such-table"}, "ResourceNotFoundException"},
		{"wrong key attribute", Config{PartitionKeyAttr: "pk"}, "ValidationException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Now = e.clock.Now
			if cfg.TableName == "" {
				cfg.TableName = e.table
			}
			g, err := New(e.client, cfg)
			if err != nil {
				t.Fatal(err)
			}
			e.tr.snapshot()
			_, err = g.Run(t.Context(), Request{Key: "k1"}, okFn)
			var se *StoreError
			if !errors.As(err, &se) || se.Op != "acquire" || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), `idempotency: acquire key "k1"`) {
				t.Fatalf("err = %v, want *StoreError from acquire mentioning %s", err, tc.want)
			}
			if got := e.tr.snapshot()["UpdateItem"]; got != 1 {
				t.Errorf("a semantic error was sent %d times, want 1 (no retry)", got)
			}
		})
	}
}

// A record this package cannot read is never taken for a duplicate: if it blocks the acquire
// the error says why; if the acquire replaced it, the work goes on.
func TestRunUnreadableRecord(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{})
	now := e.clock.Now()
	base := func(key, status string, lockMs int64) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"id":                     &types.AttributeValueMemberS{Value: "default#" + key},
			"status":                 &types.AttributeValueMemberS{Value: status},
			"expiration":             number(now.Add(time.Hour).Unix()),
			"in_progress_expiration": number(lockMs),
			"data":                   number(5), // wrong type
		}
	}
	e.put(t, base("blocking", StatusCompleted, 0))
	var calls atomic.Int64
	_, err := g.Run(t.Context(), Request{Key: "blocking"}, handler(&calls, nil, nil))
	var se *StoreError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "unreadable idempotency record: attribute data has type") {
		t.Errorf("blocking unreadable record: %v, want a *StoreError naming the attribute", err)
	}
	e.put(t, base("replaced", StatusInProgress, now.Add(-time.Second).UnixMilli()))
	res, err := g.Run(t.Context(), Request{Key: "replaced"}, handler(&calls, nil, nil))
	if err != nil || res.Outcome != OutcomeProcessed || res.Attempt != 1 {
		t.Errorf("replaced unreadable record: %+v, %v; want processed attempt 1", res, err)
	}
	odd := base("odd status", "PENDING", 0)
	delete(odd, "data")
	e.put(t, odd)
	_, err = g.Run(t.Context(), Request{Key: "odd status"}, handler(&calls, nil, nil))
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `record has status "PENDING", want INPROGRESS or COMPLETED`) {
		t.Errorf("unknown status: %v", err)
	}
	if calls.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", calls.Load())
	}
}
