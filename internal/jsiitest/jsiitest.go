// Package jsiitest ends a test package's jsii kernel when its tests are done. The kernel
// unpacks its runtime (2 MB) into a directory of its own under the temporary directory and
// removes it only in jsii.Close; a test binary that exits without it leaves one behind per
// run, some thirty for each make test. Only tests import it: it links package testing.
//
// The CDK apps do not call jsii.Close: jsii-runtime-go's Close races its own waiter for the
// kernel, which then prints "Runtime process exited abnormally: waitid: no child processes"
// on about half of the synths, where the CDK CLI shows it. A test's output is shown only when
// it fails.
//
//	func TestMain(m *testing.M) { os.Exit(jsiitest.Run(m)) }
package jsiitest

import (
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// Run runs the tests, then closes the jsii kernel (nothing when none was started), and
// returns the exit code.
func Run(m *testing.M) int {
	defer jsii.Close()
	return m.Run()
}
