package dispatcher_test

import (
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The function options from before Function still work: a dispatcher that sets every one
// of them the old way synthesizes the same function and log group as one that sets them in
// Function (CHANGELOG's compatibility promise).
func TestDeprecatedFunctionFieldsStillWork(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "Deprecated")
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}})
	opts := function.Options{
		Entry: "testdata/shards", ModuleDir: "../..", Timeout: 2 * time.Minute, MemorySize: 512,
		Architecture: awslambda.Architecture_X86_64(), Environment: map[string]string{"SHARDS": "4"},
		Layers: []awslambda.ILayerVersion{awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String("Layer"),
			jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"))},
		Vpc: vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		SecurityGroups:               []awsec2.ISecurityGroup{awsec2.NewSecurityGroup(stack, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})},
		ReservedConcurrentExecutions: 2, LogRetention: awslogs.RetentionDays_TWO_WEEKS, LogRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		LogGroupEncryptionKey: awskms.NewKey(stack, jsii.String("LogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)}),
		DisableTracing:        true,
	}
	queue := newFakeQueue(stack, "Queue", false)
	current := dispatcher.ScheduledDispatcherProps{Queue: queue, JobName: "shards", Function: opts}
	old := dispatcher.ScheduledDispatcherProps{Queue: queue, JobName: "shards"}
	cdktest.SetDeprecated(t, &old, opts) // every option, the old way
	a := dispatcher.NewScheduledDispatcher(stack, "Current", &current)
	b := dispatcher.NewScheduledDispatcher(stack, "Old", &old)
	if a.Timeout() != b.Timeout() {
		t.Errorf("Timeout(): %v through Function, %v through the deprecated field", a.Timeout(), b.Timeout())
	}

	tpl := assertions.Template_FromStack(stack, nil)
	// Each function's own role and log group, whose ids differ, and its description (its id).
	cdktest.ExpectSameResource(t, tpl, cdktest.LogicalID(stack, b.Function()), cdktest.LogicalID(stack, a.Function()),
		"Role", "LoggingConfig", "Description")
	cdktest.ExpectSameResource(t, tpl, cdktest.LogicalID(stack, b.LogGroup()), cdktest.LogicalID(stack, a.LogGroup()))
}

// An option set through its deprecated field is named as the user wrote it; set both ways
// to different values, it is an error naming both; set both ways to the same value, it is
// not.
func TestDeprecatedFieldsInProblems(t *testing.T) {
	scratch := cdktest.NewStack(cdktest.NewApp(), "Scratch")
	items := []dispatcher.WorkItem{{ID: "a"}}
	for _, tc := range []struct {
		name  string
		props dispatcher.ScheduledDispatcherProps
		want  string // the whole problem's start; "" for none
	}{
		{"deprecated memory out of range", dispatcher.ScheduledDispatcherProps{Items: items, MemorySize: 64},
			"MemorySize: got 64; use 128 to 10240 MB (Lambda's limits)"},
		{"deprecated entry: Items may be empty", dispatcher.ScheduledDispatcherProps{Entry: "/nonexistent/shards"},
			"Entry: got /nonexistent/shards; set it to the directory of a Go main package"},
		{"memory set both ways", dispatcher.ScheduledDispatcherProps{Items: items, MemorySize: 512, Function: function.Options{MemorySize: 1024}},
			"MemorySize: both MemorySize and Function.MemorySize are set, to different values; set Function.MemorySize alone (MemorySize is deprecated)"},
		{"owned variable in the deprecated environment", dispatcher.ScheduledDispatcherProps{Items: items, Environment: map[string]string{"JOB_NAME": "x"}},
			"Environment: JOB_NAME is set by the construct from its props"},
		{"memory set both ways to one value", dispatcher.ScheduledDispatcherProps{Items: items, MemorySize: 512, Function: function.Options{MemorySize: 512}}, ""},
	} {
		tc.props.Queue, tc.props.JobName = newFakeQueue(scratch, tc.name+" queue", false), "job"
		got := cdktest.Problems(func() { dispatcher.NewScheduledDispatcher(scratch, tc.name, &tc.props) })
		cdktest.ExpectProblemStarting(t, tc.name, got, tc.want)
	}
}
