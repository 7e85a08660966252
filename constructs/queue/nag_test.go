package queue

import (
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The AwsSolutions and Serverless packs find nothing on any variant: both queues are
// encrypted and TLS-only, the source has a DLQ, and the DLQ carries the one documented
// suppression (Serverless-SQSRedrivePolicy: a DLQ needs no DLQ of its own).
func TestNagFindsNothing(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			for _, finding := range cdktest.NagFindings(f.stack) {
				t.Errorf("cdk-nag: %s", finding)
			}
		})
	}
}

// The packs are live: a plain queue (no DLQ, no TLS enforcement) is flagged by both.
func TestNagPacksAreActive(t *testing.T) {
	findings := cdktest.NagFindings(nagProbe)
	for _, want := range []string{"AwsSolutions-SQS3", "AwsSolutions-SQS4", "Serverless-SQSRedrivePolicy"} {
		if !slices.ContainsFunc(findings, func(f string) bool { return strings.Contains(f, want+":") }) {
			t.Errorf("cdk-nag did not report %s on the probe stack; findings:\n%s", want, strings.Join(findings, "\n"))
		}
	}
}
