package table

import (
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// With its defaults, with every other prop overridden, and provisioned with auto scaling, the
// table and the granted role pass every pack (AwsSolutions, Serverless, NIST 800-53 R4 and R5,
// HIPAA, PCI DSS: the last four check that a provisioned table scales both reads and writes).
func TestNagFindsNothing(t *testing.T) {
	for _, f := range []*fixture{&def, &custom, &provisioned} {
		t.Run(f.name, func(t *testing.T) {
			for _, finding := range cdktest.NagFindings(f.stack) {
				t.Errorf("cdk-nag: %s", finding)
			}
		})
	}
}

// The packs are live, and DisablePointInTimeRecovery is not hidden from them: turning PITR
// off is flagged (AwsSolutions-DDB3), and nothing else is.
func TestNagFlagsDisabledPointInTimeRecovery(t *testing.T) {
	findings := cdktest.NagFindings(noPITR.stack)
	if len(findings) == 0 || !slices.ContainsFunc(findings, func(s string) bool { return strings.Contains(s, "AwsSolutions-DDB3:") }) {
		t.Errorf("want AwsSolutions-DDB3 on a table without point-in-time recovery; findings:\n%s", strings.Join(findings, "\n"))
	}
	for _, f := range findings {
		if !strings.Contains(f, "DDB3") && !strings.Contains(f, "PITR") {
			t.Errorf("unexpected finding: %s", f)
		}
	}
}
