package e2e

import (
	"fmt"
	"testing"
	"time"
)

// receipt is one ReceiveMessage that returned a message: when the call was sent (the
// server hid the message no earlier) and when its answer arrived (the server returned it no
// later).
type receipt struct{ sent, answered time.Time }

// earlyRedelivery checks receipts of one message that nobody deleted or released: each
// receive hid it for vis, so the next may come only after. It returns a description of the
// first receive that came early, or "". A receive counts as early only when its answer came
// before the previous call was sent plus vis: however slow the machine, the server then
// returned the message inside the timeout.
func earlyRedelivery(rs []receipt, vis time.Duration) string {
	for i := 1; i < len(rs); i++ {
		if gap := rs[i].answered.Sub(rs[i-1].sent); gap < vis {
			return fmt.Sprintf("receive %d answered %v after receive %d was sent, inside the visibility timeout %v", i+1, gap.Round(10*time.Millisecond), i, vis)
		}
	}
	return ""
}

func TestEarlyRedelivery(t *testing.T) {
	const vis = 18 * time.Second
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(sent, answered time.Duration) receipt { return receipt{t0.Add(sent), t0.Add(answered)} }
	for _, tc := range []struct {
		name string
		rs   []receipt
		want string
	}{
		{"one receive", []receipt{at(0, time.Second)}, ""},
		{"after the timeout", []receipt{at(0, time.Second), at(17*time.Second, vis)}, ""},
		// A slow first answer moves nothing: the server hid the message no earlier than the
		// call was sent, so only sent counts.
		{"slow answers", []receipt{at(0, 10*time.Second), at(vis, vis+5*time.Second)}, ""},
		{"early", []receipt{at(0, time.Second), at(5*time.Second, 6*time.Second)},
			"receive 2 answered 6s after receive 1 was sent, inside the visibility timeout 18s"},
		{"third early", []receipt{at(0, 0), at(vis, vis), at(vis+time.Second, 2*vis-time.Second)},
			"receive 3 answered 17s after receive 2 was sent, inside the visibility timeout 18s"},
	} {
		if got := earlyRedelivery(tc.rs, vis); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
