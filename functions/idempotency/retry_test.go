package idempotency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idempotent-sqs/pipeline/functions/internal/backoff"
)

func httpErr(status int, err error) error {
	return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err}
}

func TestIsTransient(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"provisioned throughput", &types.ProvisionedThroughputExceededException{}, true},
		{"throttling", &smithy.GenericAPIError{Code: "ThrottlingException"}, true},
		{"request limit", &types.RequestLimitExceeded{}, true},
		{"internal server error", &types.InternalServerError{}, true},
		{"transaction conflict", &types.TransactionConflictException{}, true},
		{"wrapped throttle", fmt.Errorf("op: %w", httpErr(400, &types.ProvisionedThroughputExceededException{})), true},
		{"503 without code", httpErr(503, errors.New("unavailable")), true},
		{"429", httpErr(429, errors.New("slow down")), true},
		{"server fault", &smithy.GenericAPIError{Code: "Odd", Fault: smithy.FaultServer}, true},
		{"connection refused", &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, true},
		{"connection reset", &smithyhttp.RequestSendError{Err: errors.New("read: connection reset by peer")}, true},
		{"unexpected EOF on send", &smithyhttp.RequestSendError{Err: io.ErrUnexpectedEOF}, true},
		{"timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, true},
		{"condition failed", &types.ConditionalCheckFailedException{}, false},
		{"condition failed over http", httpErr(400, &types.ConditionalCheckFailedException{}), false},
		{"validation", &smithy.GenericAPIError{Code: "ValidationException"}, false},
		{"resource not found", &types.ResourceNotFoundException{}, false},
		{"access denied 403", httpErr(403, &smithy.GenericAPIError{Code: "AccessDeniedException"}), false},
		{"client fault", &smithy.GenericAPIError{Code: "Odd", Fault: smithy.FaultClient}, false},
		{"canceled", &smithyhttp.RequestSendError{Err: context.Canceled}, false},
		{"plain error", errors.New("?"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTransient(tc.err); got != tc.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

// fakeOp fails with errs in turn, then succeeds.
type fakeOp struct {
	errs  []error
	calls int
}

func (f *fakeOp) do(context.Context) error {
	f.calls++
	if f.calls <= len(f.errs) {
		return f.errs[f.calls-1]
	}
	return nil
}

func testRetryer(max int) (retryer, *[]time.Duration) {
	var slept []time.Duration
	r := retryer{
		policy: RetryPolicy{MaxAttempts: max, BaseDelay: 10 * time.Millisecond, MaxDelay: 80 * time.Millisecond},
		sleep:  func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
		rand:   func(n int64) int64 { return n - 1 }, // the top of the jitter range
	}
	return r, &slept
}

func TestRetryThrottleThenSucceed(t *testing.T) {
	r, slept := testRetryer(5)
	throttle := &types.ProvisionedThroughputExceededException{}
	op := &fakeOp{errs: []error{throttle, throttle, throttle}}
	if err := r.do(t.Context(), op.do); err != nil {
		t.Fatalf("do = %v, want success on the 4th try", err)
	}
	if op.calls != 4 {
		t.Errorf("calls = %d, want 4", op.calls)
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	if fmt.Sprint(*slept) != fmt.Sprint(want) {
		t.Errorf("waits = %v, want %v (the caps, since rand returns the top)", *slept, want)
	}
}

func TestRetrySemanticErrorNotRetried(t *testing.T) {
	for _, err := range []error{
		&types.ConditionalCheckFailedException{},
		&smithy.GenericAPIError{Code: "ValidationException"},
		&types.ResourceNotFoundException{},
	} {
		r, slept := testRetryer(5)
		op := &fakeOp{errs: []error{err}}
		if got := r.do(t.Context(), op.do); got != err {
			t.Errorf("do = %v, want %v unchanged", got, err)
		}
		if op.calls != 1 || len(*slept) != 0 {
			t.Errorf("%T: %d calls, %d waits; want 1 and 0", err, op.calls, len(*slept))
		}
	}
}

func TestRetryGivesUp(t *testing.T) {
	r, slept := testRetryer(3)
	throttle := &types.ProvisionedThroughputExceededException{Message: new("slow down")}
	op := &fakeOp{errs: []error{throttle, throttle, throttle, throttle}}
	err := r.do(t.Context(), op.do)
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("do = %v, want the throttle wrapped with the attempt count", err)
	}
	if op.calls != 3 || len(*slept) != 2 {
		t.Errorf("%d calls, %d waits; want 3 and 2", op.calls, len(*slept))
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	t.Run("during the wait", func(t *testing.T) {
		r, _ := testRetryer(5)
		r.policy.BaseDelay, r.policy.MaxDelay = time.Hour, time.Hour
		// The deadline passes once the hour-long wait has begun, however long the first
		// attempt took: a plain 10 ms timeout could pass before the attempt returned on a
		// loaded machine, and then the retryer never waits at all.
		ctx := newDeadlineCtx(t.Context())
		r.sleep = func(sctx context.Context, d time.Duration) error {
			time.AfterFunc(10*time.Millisecond, ctx.expire)
			return backoff.Sleep(sctx, d)
		}
		op := &fakeOp{errs: []error{&types.InternalServerError{}}}
		err := r.do(ctx, op.do)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, new(*types.InternalServerError)) ||
			!strings.Contains(err.Error(), "stopped retrying after 1 attempts") {
			t.Errorf("do = %v, want the ctx error and the last DynamoDB error", err)
		}
		if op.calls != 1 {
			t.Errorf("calls = %d", op.calls)
		}
	})
	t.Run("before a retry", func(t *testing.T) {
		r, slept := testRetryer(5)
		ctx, cancel := context.WithCancel(t.Context())
		op := &fakeOp{errs: []error{&types.InternalServerError{}}}
		err := r.do(ctx, func(ctx context.Context) error { cancel(); return op.do(ctx) })
		if err == nil || op.calls != 1 || len(*slept) != 0 {
			t.Errorf("do = %v after %d calls, %d waits; want no retry on a done ctx", err, op.calls, len(*slept))
		}
	})
}

// deadlineCtx is a context whose deadline passes when expire is called.
type deadlineCtx struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadlineCtx(parent context.Context) *deadlineCtx {
	return &deadlineCtx{Context: parent, done: make(chan struct{})}
}

func (c *deadlineCtx) expire()               { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Done() <-chan struct{} { return c.done }

func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// Full jitter: retry n waits uniformly in [0, min(MaxDelay, BaseDelay*2^(n-1))].
func TestRetryDelayBounds(t *testing.T) {
	r := retryer{policy: RetryPolicy{MaxAttempts: 20, BaseDelay: 25 * time.Millisecond, MaxDelay: time.Second}}
	wantCaps := []time.Duration{25, 50, 100, 200, 400, 800, 1000, 1000}
	for n := 1; n <= 60; n++ {
		want := time.Second
		if n <= len(wantCaps) {
			want = wantCaps[n-1] * time.Millisecond
		}
		if got := r.backoffCap(n); got != want {
			t.Errorf("backoffCap(%d) = %s, want %s", n, got, want)
		}
		// The rand seam sees n+1 for a cap of n: both ends of [0, cap] are reachable.
		r.rand = func(n int64) int64 { return 0 }
		if d := r.delay(n); d != 0 {
			t.Errorf("delay(%d) with rand at its floor = %s, want 0", n, d)
		}
		r.rand = func(n int64) int64 { return n - 1 }
		if d := r.delay(n); d != want {
			t.Errorf("delay(%d) with rand at its ceiling = %s, want the cap %s", n, d, want)
		}
	}
	// With the real source, delays spread over the range instead of sitting on the cap.
	r = newRetryer(RetryPolicy{MaxAttempts: 5, BaseDelay: 25 * time.Millisecond, MaxDelay: time.Second})
	var lo, hi int
	for range 1000 {
		d := r.delay(5) // cap 400ms
		if d < 0 || d > 400*time.Millisecond {
			t.Fatalf("delay(5) = %s outside [0, 400ms]", d)
		}
		if d < 200*time.Millisecond {
			lo++
		} else {
			hi++
		}
	}
	if lo < 350 || hi < 350 {
		t.Errorf("1000 delays split %d below / %d above the middle: not uniform jitter", lo, hi)
	}
}

// A call that asks for retries until a time (complete, until its lock ends) goes on past
// MaxAttempts while that time is ahead, and keeps to MaxAttempts after it; MaxAttempts 1
// (retries off) still means one try.
func TestRetryUntil(t *testing.T) {
	throttle := &types.ProvisionedThroughputExceededException{}
	r := retryer{policy: RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
		sleep: backoff.Sleep, rand: func(n int64) int64 { return n - 1 }}

	op := &fakeOp{errs: slices.Repeat([]error{throttle}, 8)}
	if err := r.do(retryUntil(t.Context(), time.Now().Add(time.Minute)), op.do); err != nil || op.calls != 9 {
		t.Errorf("until a minute from now: %v after %d calls, want success on the 9th (MaxAttempts is 3)", err, op.calls)
	}

	start := time.Now()
	always := &fakeOp{errs: slices.Repeat([]error{throttle}, 100000)}
	err := r.do(retryUntil(t.Context(), start.Add(150*time.Millisecond)), always.do)
	took := time.Since(start)
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || always.calls <= 3 || took < 150*time.Millisecond || took > 10*time.Second {
		t.Errorf("throttled past the time: %v after %d calls in %v, want the throttle, more than 3 calls, stopped soon after 150ms", err, always.calls, took)
	}
	t.Logf("throttled until 150ms from the start: %d calls in %v", always.calls, took.Round(time.Millisecond))

	op = &fakeOp{errs: slices.Repeat([]error{throttle}, 4)}
	if err := r.do(retryUntil(t.Context(), time.Now().Add(-time.Second)), op.do); err == nil || op.calls != 3 {
		t.Errorf("the time has passed: %v after %d calls, want to give up after MaxAttempts 3", err, op.calls)
	}
	off := retryer{policy: RetryPolicy{MaxAttempts: 1}, sleep: backoff.Sleep, rand: r.rand}
	op = &fakeOp{errs: []error{throttle}}
	if err := off.do(retryUntil(t.Context(), time.Now().Add(time.Minute)), op.do); err == nil || op.calls != 1 {
		t.Errorf("MaxAttempts 1: %v after %d calls, want one try (retries off)", err, op.calls)
	}
}
