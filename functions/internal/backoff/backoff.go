// Package backoff holds the retry arithmetic the runtime packages share: the capped
// exponential ceiling that full-jitter draws below, and a sleep that ends with its context.
package backoff

import (
	"context"
	"time"
)

// Ceiling is the upper bound of the wait before retry attempt (attempt >= 1):
// min(limit, base * 2^(attempt-1)), computed without overflow. A full-jitter wait is uniform
// in [0, Ceiling], which spreads the retries of many throttled callers apart.
func Ceiling(attempt int, base, limit time.Duration) time.Duration {
	c := base
	for i := 1; i < attempt && c < limit; i++ {
		c *= 2
	}
	return min(c, limit)
}

// Sleep waits d, or returns ctx's error as soon as ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
