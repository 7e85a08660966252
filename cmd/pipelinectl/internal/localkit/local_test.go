package localkit

import "testing"

func TestInvokedAs(t *testing.T) {
	for arg0, want := range map[string]string{
		"/root/.cache/go-build/40/401f33-d/pipelinectl": "go tool pipelinectl", // go tool
		"/tmp/go-build2911/b001/exe/pipelinectl":        "go tool pipelinectl", // go run
		"/usr/local/bin/pipelinectl":                    "pipelinectl",
		"pipelinectl":                                   "pipelinectl",
	} {
		if got := invokedAs(arg0); got != want {
			t.Errorf("invokedAs(%q) = %q, want %q", arg0, got, want)
		}
	}
}
