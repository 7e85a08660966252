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

// The sample send-message's body for a consumer not of these constructs: one its filter lets
// through when the filter's body pattern is plain values, else a placeholder, said so.
func TestSampleBody(t *testing.T) {
	for _, c := range []struct {
		filters []string
		body    string
		known   bool
	}{
		{nil, "hello", false},
		{[]string{`{"body":{"type":["order","refund"],"shop":{"region":["eu"]}}}`}, `{"shop":{"region":"eu"},"type":"order"}`, true},
		{[]string{`{"body":{"amount":[{"numeric":[">",10]}]}}`}, "hello", false},
		{[]string{`{"body":{"$or":[{"a":["x"]},{"b":["y"]}]}}`}, "hello", false},
		{[]string{`{"attributes":{"MessageGroupId":["g"]}}`}, "hello", false},
	} {
		if body, known := sampleBody(c.filters); body != c.body || known != c.known {
			t.Errorf("sampleBody(%q) = %q, %v; want %q, %v", c.filters, body, known, c.body, c.known)
		}
	}
}
