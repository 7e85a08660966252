package monitoring

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// TestNagFindsNothing runs the AwsSolutions and Serverless packs (added to the fixture app in
// TestMain) over the fixture stacks: the monitoring resources need no suppression, and the
// fixtures carry only the documented Scheduler-DLQ / on-failure-queue one.
func TestNagFindsNothing(t *testing.T) {
	for _, f := range []pipelineFixture{def, custom, keyed} {
		for _, finding := range cdktest.NagFindings(f.stack) {
			t.Errorf("%s: cdk-nag %s", *f.stack.StackName(), finding)
		}
	}
}

// Both packs are live in the fixture app: they flag a topic without TLS enforcement and a
// queue without a redrive policy.
func TestNagPacksAreActive(t *testing.T) {
	a := assertions.Annotations_FromStack(nagProbe)
	found := append(*a.FindError(jsii.String("*"), assertions.Match_AnyValue()), *a.FindWarning(jsii.String("*"), assertions.Match_AnyValue())...)
	var ids []string
	for _, m := range found {
		if d, ok := m.Entry.Data.(string); ok {
			ids = append(ids, strings.SplitN(d, ":", 2)[0])
		}
	}
	for _, want := range []string{"AwsSolutions-SNS3", "Serverless-SQSRedrivePolicy"} {
		if !slices.Contains(ids, want) {
			t.Errorf("cdk-nag did not report %s on the probe stack; findings: %v", want, ids)
		}
	}
}
