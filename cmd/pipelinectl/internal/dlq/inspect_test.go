package dlq

import (
	"errors"
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

// How an inspect that did not end well says so: interrupted, a receive that failed for good,
// or only messages it could not give back; each with what stays hidden and until when.
func TestInspectNotDone(t *testing.T) {
	until := time.Date(2026, 12, 2, 4, 32, 1, 0, time.UTC)
	hidden := &hiddenError{n: 2, msg: "2 messages stay hidden in URL until their visibility timeout ends (the network): m1, m2"}
	for _, tc := range []struct {
		interrupted bool
		failed      error
		hidden      *hiddenError
		lost        int
		want        string
	}{
		{interrupted: true, want: "interrupted after scanning 20 messages; all of them are visible again"},
		{failed: errors.New("boom"), lost: 1,
			want: "a receive failed after scanning 20 messages: boom; all of them are visible again; 1 receive got no whole answer, each may hide up to 10 messages until 04:32:01Z: inspect again after that"},
		{hidden: hidden, want: "scanned 20 messages; " + hidden.msg},
		{interrupted: true, hidden: hidden, lost: 3,
			want: "interrupted after scanning 20 messages; " + hidden.msg + "; 3 receives got no whole answer, each may hide up to 10 messages until 04:32:01Z: inspect again after that"},
	} {
		err := inspectNotDone(20, tc.interrupted, tc.failed, tc.hidden, &lostReceives{n: tc.lost, until: until})
		if err == nil || err.Error() != tc.want {
			t.Errorf("inspectNotDone(%+v) = %v\nwant %s", tc, err, tc.want)
		}
	}
}
