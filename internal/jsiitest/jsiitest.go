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
//
// Importing it also turns off, for this test binary's kernel, the template validator CDK
// runs on every synth (CDK_VALIDATION=false): see init.
package jsiitest

import (
	"os"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// ValidationEnv is the variable that turns CDK's synth-time template validator on or off.
const ValidationEnv = "CDK_VALIDATION"

// init turns off CDK's synth-time template validator (CloudFormationValidatePlugin, a
// WebAssembly rule engine) in this test binary's jsii kernel. It costs 5-10 CPU seconds on
// the first synth of a kernel and more on every later one (test/stack: about a quarter of
// its node time), it only reports, and no test reads its report: the templates are the
// same. make synth and make lint run it (the default and the hardened stage), as a user's
// cdk synth does.
//
// A variable set in TestMain would come too late: the kernel process takes its environment
// when it is prepared, and jsii-runtime-go prepares it while the CDK packages register their
// types, at init, before any test code. Closing it here, before any jsii object exists and
// before it started, makes the first jsii call prepare a new one, which takes the variable.
// A CDK_VALIDATION already set (true, to run the tests with the validator) is left alone.
func init() {
	if _, set := os.LookupEnv(ValidationEnv); set {
		return
	}
	os.Setenv(ValidationEnv, "false")
	jsii.Close()
}

// Run runs the tests, then closes the jsii kernel (nothing when none was started), and
// returns the exit code.
func Run(m *testing.M) int {
	defer jsii.Close()
	return m.Run()
}
