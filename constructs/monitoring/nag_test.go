package monitoring

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
)

// TestNagFindsNothing runs the AwsSolutions and Serverless packs (added to the fixture app in
// TestMain) over both fixture stacks: the monitoring resources need no suppression, and the
// fixtures carry only the documented Scheduler-DLQ / on-failure-queue one.
func TestNagFindsNothing(t *testing.T) {
	for _, f := range []pipelineFixture{def, custom} {
		annotations := assertions.Annotations_FromStack(f.stack)
		for kind, found := range map[string]*[]*cxapi.SynthesisMessage{
			"error":   annotations.FindError(jsii.String("*"), assertions.Match_AnyValue()),
			"warning": annotations.FindWarning(jsii.String("*"), assertions.Match_AnyValue()),
		} {
			for _, msg := range *found {
				t.Errorf("%s: cdk-nag %s at %s: %v", *f.stack.StackName(), kind, *msg.Id, msg.Entry.Data)
			}
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
