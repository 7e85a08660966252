package dlq

import (
	"testing"
	"time"
)

// --record-ttl takes days as the runbooks write them, and Go's units.
func TestRecordTTLInDays(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"25d": 600 * time.Hour, "1.5d": 36 * time.Hour, "600h": 600 * time.Hour, "90m": 90 * time.Minute} {
		var d time.Duration
		var set bool
		if err := (days{&d, &set}).Set(in); err != nil || d != want || !set {
			t.Errorf("--record-ttl %s = %v, %v; want %v", in, d, err, want)
		}
	}
}
