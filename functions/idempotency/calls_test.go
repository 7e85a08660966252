package idempotency

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// The cost floor (docs/design.md, "Cost floor"), counted on the wire (every request the SDK sent, by
// operation): a new message 2 writes, a duplicate 1, no reads.
func TestRunCallCounts(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{ValidatePayload: true, StoreResult: true})
	var calls atomic.Int64
	for _, tc := range []struct {
		name string
		key  string
		err  error
		want map[string]int
	}{
		{"new message", "k1", nil, map[string]int{"UpdateItem": 2}},
		{"duplicate", "k1", nil, map[string]int{"UpdateItem": 1}},
		{"failed handler: acquire + release", "k2", errors.New("boom"), map[string]int{"UpdateItem": 2}},
		{"retry after release", "k2", nil, map[string]int{"UpdateItem": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.tr.snapshot()
			_, _ = g.Run(t.Context(), Request{Key: tc.key, Payload: []byte("p")}, handler(&calls, []byte("r"), tc.err))
			got := e.tr.snapshot()
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("calls = %v, want %v", got, tc.want)
			}
			t.Logf("%s: %v", tc.name, got)
		})
	}
}

// Throttling and server errors from the wire (deserialized by the SDK into its own types) are
// retried until the write lands; nothing is lost or run twice.
func TestRunRetriesTransientErrorsAgainstDynamoDBLocal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"throttling", 400, "ThrottlingException"},
		{"provisioned throughput", 400, "ProvisionedThroughputExceededException"},
		{"internal server error", 500, "InternalServerError"},
		{"transaction conflict", 400, "TransactionConflictException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			g := e.guard(t, Config{ValidatePayload: true})
			const failures = 3 // per operation: the first acquire tries and the first complete tries
			e.tr.fault = func(op string, n int) (*http.Response, error, bool) {
				if op == "UpdateItem" && (n <= failures || (n > failures+1 && n <= 2*failures+1)) {
					return dynamoError(tc.status, tc.code, "injected"), nil, false
				}
				return nil, nil, false
			}
			var calls atomic.Int64
			res, err := g.Run(t.Context(), Request{Key: "k1", Payload: []byte("p")}, handler(&calls, nil, nil))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Outcome != OutcomeProcessed || res.Attempt != 1 || calls.Load() != 1 {
				t.Errorf("Result = %+v after %d handler calls", res, calls.Load())
			}
			if got := e.tr.snapshot()["UpdateItem"]; got != 2*failures+2 {
				t.Errorf("UpdateItem sent %d times, want %d", got, 2*failures+2)
			}
			if r := e.record(t, id("k1")); r.status != StatusCompleted || r.attempt != 1 {
				t.Errorf("record = %+v", r)
			}
		})
	}
	t.Run("gives up after MaxAttempts", func(t *testing.T) {
		e := newEnv(t, "")
		g := e.guard(t, Config{Retry: RetryPolicy{MaxAttempts: 3}})
		e.tr.fault = func(string, int) (*http.Response, error, bool) {
			return dynamoError(400, "ThrottlingException", "injected"), nil, false
		}
		var calls atomic.Int64
		// An invocation's deadline: acquire, before the effect, still gives up after
		// MaxAttempts (only complete retries until its lock ends).
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err := g.Run(ctx, Request{Key: "k1"}, handler(&calls, nil, nil))
		var se *StoreError
		if !errors.As(err, &se) || se.Op != "acquire" || !IsTransient(err) {
			t.Fatalf("err = %v, want a transient *StoreError from acquire", err)
		}
		if want := `idempotency: acquire key "k1": gave up after 3 attempts: operation error DynamoDB: UpdateItem`; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("message %q, want prefix %q", err, want)
		}
		if got := e.tr.snapshot()["UpdateItem"]; got != 3 || calls.Load() != 0 {
			t.Errorf("%d sends, %d handler calls; want 3 and 0", got, calls.Load())
		}
	})
}

// Complete, once the effect has run, is retried past MaxAttempts until its lock ends (the
// invocation's deadline, in Lambda): a complete that gave up would leave the record
// INPROGRESS, and the next delivery would run the effect again (a table throttled by a burst
// or an on-demand cap). Acquire, before the effect, still gives up after MaxAttempts (the
// subtest "gives up after MaxAttempts" above): its record just goes back to SQS.
func TestRunCompleteRetriesWhileItsLockHolds(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{Retry: RetryPolicy{MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}})
	const throttled = 12 // complete's first tries: four times MaxAttempts
	e.tr.fault = func(op string, n int) (*http.Response, error, bool) {
		if op == "UpdateItem" && n > 1 && n <= 1+throttled { // n == 1 is the acquire
			return dynamoError(400, "ThrottlingException", "injected"), nil, false
		}
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // the invocation's deadline
	defer cancel()
	var calls atomic.Int64
	start := time.Now()
	res, err := g.Run(ctx, Request{Key: "k1"}, handler(&calls, nil, nil))
	if err != nil || res.Outcome != OutcomeProcessed || calls.Load() != 1 {
		t.Fatalf("Run = %+v, %v after %d handler calls; want processed once", res, err, calls.Load())
	}
	if got := e.tr.snapshot()["UpdateItem"]; got != 1+throttled+1 {
		t.Errorf("UpdateItem sent %d times, want %d (acquire, %d throttled completes, the one that landed)", got, 1+throttled+1, throttled)
	}
	if r := e.record(t, id("k1")); r.status != StatusCompleted {
		t.Errorf("record = %+v, want COMPLETED", r)
	}
	t.Logf("complete landed after %d throttled tries in %v", throttled, time.Since(start).Round(time.Millisecond))
}

// A write that landed but whose response was lost is retried; the retry's condition fails
// on our own write, which the owner token identifies, so it counts as done rather than as
// "in progress elsewhere" (acquire), "lock lost" (complete) or a failed release.
func TestRunLostResponses(t *testing.T) {
	lost := errors.New("connection reset by peer")
	for _, tc := range []struct {
		name       string
		lostCall   int // which UpdateItem of the Run loses its response
		handlerErr error
		wantStatus string
		wantLock   int64
	}{
		{"acquire", 1, nil, StatusCompleted, 0},
		{"complete", 2, nil, StatusCompleted, 0},
		{"release", 2, errors.New("boom"), StatusInProgress, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			g := e.guard(t, Config{})
			e.tr.fault = func(op string, n int) (*http.Response, error, bool) {
				if op == "UpdateItem" && n == tc.lostCall {
					return nil, lost, true // reaches the server, the reply does not come back
				}
				return nil, nil, false
			}
			var calls atomic.Int64
			res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, nil, tc.handlerErr))
			if tc.handlerErr != nil {
				var he *HandlerError
				if !errors.As(err, &he) || he.ReleaseErr != nil {
					t.Fatalf("err = %v, want a *HandlerError with a successful release", err)
				}
			} else if err != nil || res.Outcome != OutcomeProcessed || res.Attempt != 1 {
				t.Fatalf("Run = %+v, %v; want processed attempt 1", res, err)
			}
			if calls.Load() != 1 {
				t.Errorf("handler ran %d times", calls.Load())
			}
			if got := e.tr.snapshot()["UpdateItem"]; got != 3 {
				t.Errorf("UpdateItem sent %d times, want 3 (one retried)", got)
			}
			if r := e.record(t, id("k1")); r.status != tc.wantStatus || r.lockMs != tc.wantLock || r.attempt != 1 {
				t.Errorf("record = %+v", r)
			}
		})
	}
}

// A context that ends while the handler runs must not keep the record from being completed:
// the side effect has happened.
func TestRunCompletesAfterHandlerContextEnds(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{Now: time.Now})
	ctx, cancel := context.WithCancel(t.Context())
	var calls atomic.Int64
	res, err := g.Run(ctx, Request{Key: "k1"}, func(context.Context) ([]byte, error) {
		calls.Add(1)
		cancel()
		return nil, nil
	})
	if err != nil || res.Outcome != OutcomeProcessed {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if r := e.record(t, id("k1")); r.status != StatusCompleted {
		t.Errorf("record = %+v, want COMPLETED", r)
	}
}
