package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCeilingDoublesUpToTheLimit(t *testing.T) {
	base, limit := 25*time.Millisecond, time.Second
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{1, 25 * time.Millisecond}, {2, 50 * time.Millisecond}, {3, 100 * time.Millisecond},
		{6, 800 * time.Millisecond}, {7, time.Second}, {1000, time.Second},
	} {
		if got := Ceiling(tc.attempt, base, limit); got != tc.want {
			t.Errorf("Ceiling(%d) = %s, want %s", tc.attempt, got, tc.want)
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
}
