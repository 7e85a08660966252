// Package testmain runs a package's tests with a local server they need, from TestMain: a
// server that cannot start fails the run rather than skipping the tests. Only tests import
// it: it links package testing, which no shipped binary may (make check-function-deps).
//
//	func TestMain(m *testing.M) { os.Exit(testmain.With(m, dynamolocal.Start, &srv)) }
package testmain

import (
	"fmt"
	"os"
	"testing"
)

// With starts the server into *srv, runs the tests, stops the server and returns the exit
// code; a server that does not start is exit code 1, with the reason on stderr.
func With[S interface{ Stop() }](m *testing.M, start func() (S, error), srv *S) int {
	s, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer s.Stop()
	*srv = s
	return m.Run()
}
