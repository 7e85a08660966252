package jsiitest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// TestMain is the package's own Run: TestKernelRunsWithoutTheValidator starts a kernel after
// TestCloseRemovesTheRuntime closed the first, and without Run it stayed in the temporary
// directory after every run (one a make test, found by watching which test started each).
func TestMain(m *testing.M) { os.Exit(Run(m)) }

// TestKernelRunsWithoutTheValidator: a synth in a binary that imports this package writes
// no validation report, which CDK's template validator writes beside the templates on
// every synth it checks (with or without findings).
func TestKernelRunsWithoutTheValidator(t *testing.T) {
	if v := os.Getenv(ValidationEnv); v != "false" {
		t.Skipf("%s=%q was set before the test ran: init leaves it alone", ValidationEnv, v)
	}
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	awssqs.NewQueue(awscdk.NewStack(app, jsii.String("S"), nil), jsii.String("Q"), nil)
	app.Synth(nil)
	if _, err := os.Stat(filepath.Join(out, "S.template.json")); err != nil {
		t.Fatalf("the synth wrote no template: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "validation-report.json")); !os.IsNotExist(err) {
		t.Errorf("the synth wrote %s (stat: %v): CDK's template validator ran in this binary's kernel, "+
			"so init's %s=false did not reach it", filepath.Join(out, "validation-report.json"), err, ValidationEnv)
	}
}
