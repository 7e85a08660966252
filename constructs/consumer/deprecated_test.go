package consumer_test

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

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The function options from before Function still work: a consumer that sets every one of
// them the old way synthesizes the same function and log group as one that sets them in
// Function (CHANGELOG's compatibility promise).
func TestDeprecatedFunctionFieldsStillWork(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "Deprecated")
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}})
	opts := function.Options{
		Entry: "testdata/shipping", ModuleDir: "../..", Timeout: time.Minute, MemorySize: 512,
		Architecture: awslambda.Architecture_X86_64(), Environment: map[string]string{"SHIPMENTS_TABLE": "shipments"},
		Layers: []awslambda.ILayerVersion{awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String("Layer"),
			jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"))},
		Vpc: vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED},
		SecurityGroups:               []awsec2.ISecurityGroup{awsec2.NewSecurityGroup(stack, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})},
		ReservedConcurrentExecutions: 20, LogRetention: awslogs.RetentionDays_TWO_WEEKS, LogRemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		LogGroupEncryptionKey: awskms.NewKey(stack, jsii.String("LogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)}),
		DisableTracing:        true,
	}
	queue := newFakeQueue(stack, "Queue", false, 6*time.Minute, 4*24*time.Hour)
	tbl := newFakeTable(stack, "Table", "")
	current := consumer.IdempotentConsumerProps{Queue: queue, Table: tbl, KeyPrefix: "orders", Function: opts}
	old := consumer.IdempotentConsumerProps{Queue: queue, Table: tbl, KeyPrefix: "orders"}
	cdktest.SetDeprecated(t, &old, opts) // every option, the old way
	a := consumer.NewIdempotentConsumer(stack, "Current", &current)
	b := consumer.NewIdempotentConsumer(stack, "Old", &old)
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
// to different values, it is an error naming both; set both ways to the same value (as the
// pipeline construct passes them on), it is not.
func TestDeprecatedFieldsInProblems(t *testing.T) {
	scratch := cdktest.NewStack(cdktest.NewApp(), "Scratch")
	for _, tc := range []struct {
		name  string
		props consumer.IdempotentConsumerProps
		want  string // the whole problem; "" for none
	}{
		{"deprecated timeout out of range", consumer.IdempotentConsumerProps{Timeout: 16 * time.Minute},
			"Timeout: got 16m0s; use whole seconds from 1s to 15m0s (Lambda's limits)"},
		{"the same timeout in Function", consumer.IdempotentConsumerProps{Function: function.Options{Timeout: 16 * time.Minute}},
			"Function.Timeout: got 16m0s; use whole seconds from 1s to 15m0s (Lambda's limits)"},
		{"timeout set both ways", consumer.IdempotentConsumerProps{Timeout: time.Minute, Function: function.Options{Timeout: 2 * time.Minute}},
			"Timeout: both Timeout and Function.Timeout are set, to different values; set Function.Timeout alone (Timeout is deprecated)"},
		{"environment set both ways", consumer.IdempotentConsumerProps{
			Environment: map[string]string{"A": "1"}, Function: function.Options{Environment: map[string]string{"A": "2"}}},
			"Environment: both Environment and Function.Environment are set, to different values; set Function.Environment alone (Environment is deprecated)"},
		{"deprecated reserved concurrency below MaxConcurrency", consumer.IdempotentConsumerProps{ReservedConcurrentExecutions: 5},
			"ReservedConcurrentExecutions: 5 is below MaxConcurrency 10"},
		{"timeout set both ways, Function's out of range: the problem names Function.Timeout",
			consumer.IdempotentConsumerProps{Timeout: 30 * time.Second, Function: function.Options{Timeout: 20 * time.Minute}},
			"Function.Timeout: got 20m0s; use whole seconds from 1s to 15m0s (Lambda's limits)"},
		{"empty deprecated list and a Function list: no conflict", consumer.IdempotentConsumerProps{
			Layers: []awslambda.ILayerVersion{}, Function: function.Options{Environment: map[string]string{"A": "1"}}, Environment: map[string]string{}}, ""},
		{"timeout set both ways to one value", consumer.IdempotentConsumerProps{Timeout: 30 * time.Second, Function: function.Options{Timeout: 30 * time.Second}}, ""},
	} {
		tc.props.Queue = newFakeQueue(scratch, tc.name+" queue", false, 3*time.Minute, 4*24*time.Hour)
		tc.props.Table = newFakeTable(scratch, tc.name+" table", "")
		got := cdktest.Problems(func() { consumer.NewIdempotentConsumer(scratch, tc.name, &tc.props) })
		cdktest.ExpectProblemStarting(t, tc.name, got, tc.want)
	}
}
