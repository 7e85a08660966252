package localkit

import "testing"

// A failed invocation's error on the status line: one line that says why, a crash's panic
// taken from the process's last output.
func TestFailureLine(t *testing.T) {
	for _, c := range []struct{ err, want string }{
		{"Runtime.Unknown: handler returned boom", "Runtime.Unknown: handler returned boom"},
		{"lambdart: init: process crashed: exit status 2; last output:\npanic: Table not available: orders\n\ngoroutine 1 [running]:\nmain.main()",
			"lambdart: init: process crashed: exit status 2; last output: panic: Table not available: orders"},
		{"lambdart: process crashed: signal: killed; last output:\nstarting\nout of memory", "lambdart: process crashed: signal: killed; last output: out of memory"},
	} {
		if got := failureLine(c.err); got != c.want {
			t.Errorf("failureLine(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
