package pipeline_test

import (
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The pipeline reads a part's function options through the deprecated fields as the part
// does: the consumer's deprecated Timeout sizes the queue's visibility timeout, and hardening
// fills in what a deprecated field leaves unset without contradicting what it sets.
func TestDeprecatedFunctionFieldsReachThePipeline(t *testing.T) {
	s := cdktest.NewStack(cdktest.NewApp(), "DeprecatedFields")
	vpc := pipeline.NewIsolatedVpc(s, "Vpc", awskms.NewKey(s, jsii.String("FlowLogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)}))
	sg := awsec2.NewSecurityGroup(s, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})
	p := pipeline.NewPipeline(s, "Orders", &pipeline.PipelineProps{
		Hardening: &pipeline.Hardening{Vpc: vpc},
		Consumer: &consumer.IdempotentConsumerProps{Timeout: 2 * time.Minute, SecurityGroups: []awsec2.ISecurityGroup{sg},
			ReservedConcurrentExecutions: 12},
		Dispatcher: &dispatcher.ScheduledDispatcherProps{Items: []dispatcher.WorkItem{{ID: "nightly"}}, Vpc: vpc, MemorySize: 512},
	})
	if got := p.Consumer().Timeout(); got != 2*time.Minute {
		t.Errorf("consumer timeout %v, want the deprecated Timeout's 2m0s", got)
	}
	tpl := assertions.Template_FromStack(s, nil)
	cdktest.Must(t, "the queue's visibility timeout is 6 x the deprecated Timeout", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"VisibilityTimeout": 720})
	})
	cdktest.Must(t, "the consumer keeps its deprecated security group and reserved concurrency, in the hardened VPC", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Timeout": 120, "ReservedConcurrentExecutions": 12,
			"VpcConfig": map[string]any{"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(s, sg), "GroupId"}}}},
		})
	})
	cdktest.Must(t, "the dispatcher keeps its deprecated memory size, with the hardened reserved concurrency", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"MemorySize": 512, "ReservedConcurrentExecutions": pipeline.DispatcherReservedConcurrency,
		})
	})
}

// Hardening fills in what a deprecated field leaves unset, an empty list included, and
// replaces the subnets of a deprecated VpcSubnets without Vpc as it replaces Function's,
// without a conflict the user did not make; a conflict the user did make is still reported.
func TestHardeningMakesNoConflictOfDeprecatedFields(t *testing.T) {
	s := cdktest.NewStack(cdktest.NewApp(), "HardenedDeprecated")
	vpc := pipeline.NewIsolatedVpc(s, "Vpc", awskms.NewKey(s, jsii.String("FlowLogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)}))
	pipeline.NewPipeline(s, "Orders", &pipeline.PipelineProps{
		Hardening: &pipeline.Hardening{Vpc: vpc},
		Consumer: &consumer.IdempotentConsumerProps{SecurityGroups: []awsec2.ISecurityGroup{},
			VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}},
		Dispatcher: &dispatcher.ScheduledDispatcherProps{Items: []dispatcher.WorkItem{{ID: "nightly"}}, SecurityGroups: []awsec2.ISecurityGroup{}},
	})

	cdktest.ExpectProblem(t, func() {
		pipeline.NewPipeline(s, "Both", &pipeline.PipelineProps{
			Hardening: &pipeline.Hardening{Vpc: vpc},
			Consumer:  &consumer.IdempotentConsumerProps{Timeout: time.Minute, Function: function.Options{Timeout: 2 * time.Minute}},
		})
	}, "Timeout: both Timeout and Function.Timeout are set, to different values; set Function.Timeout alone (Timeout is deprecated)")
}
