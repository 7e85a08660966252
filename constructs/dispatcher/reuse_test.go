package dispatcher_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// Scheduler publishes its metrics (TargetErrorCount, InvocationDroppedCount, ...) per
// schedule group only. Two dispatchers in one group would alarm on each other's failures, so
// each has a group of its own, unless given one.
func TestEachDispatcherHasItsOwnScheduleGroup(t *testing.T) {
	groupOf := func(d dispatcher.ScheduledDispatcher) string {
		g := d.Schedule().ScheduleGroup()
		if g == nil {
			t.Fatalf("%s: the schedule is in the default group, shared with every other schedule", *d.Node().Path())
		}
		return fmt.Sprint(awscdk.Stack_Of(d).Resolve(g.ScheduleGroupName()))
	}
	if a, b := groupOf(hourly), groupOf(tenants); a == b {
		t.Errorf("both dispatchers use schedule group %q", a)
	}
	for _, d := range []dispatcher.ScheduledDispatcher{hourly, tenants} {
		matches(t, "AWS::Scheduler::ScheduleGroup", d.ScheduleGroup(), map[string]any{"DeletionPolicy": "Delete"})
		matches(t, "AWS::Scheduler::Schedule", d.Schedule(), map[string]any{
			"Properties": map[string]any{"GroupName": stack.Resolve(d.ScheduleGroup().ScheduleGroupName())},
			"DependsOn":  assertions.Match_ArrayWith(&[]any{cdktest.LogicalID(stack, d.ScheduleGroup())}),
		})
		// Only schedules of that group may assume the schedule's role.
		matches(t, "AWS::IAM::Role", d.ScheduleRole(), map[string]any{"Properties": map[string]any{
			"AssumeRolePolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Condition": map[string]any{"StringEquals": map[string]any{"aws:SourceArn": getAtt(d.ScheduleGroup(), "Arn")}},
			}}},
		}})
	}
	// A group given is used, and none is created.
	if encrypted.ScheduleGroup() != awsscheduler.IScheduleGroup(sharedGroup) || groupOf(encrypted) != fmt.Sprint(stack.Resolve(sharedGroup.ScheduleGroupName())) {
		t.Errorf("the dispatcher given ScheduleGroup does not use it")
	}
	if n := len(*template.FindResources(jsii.String("AWS::Scheduler::ScheduleGroup"), nil)); n != 3 {
		t.Errorf("%d schedule groups, want 3 (hourly's, tenants', the shared one)", n)
	}
}

// A customer managed key encrypts both queues the dispatcher creates, and Scheduler's role
// (schedule DLQ) and the function's role (on-failure destination) may use it through SQS,
// with no wildcard action (TestFunctionPermissions and TestNag check the whole fixture).
func TestEncryptionKey(t *testing.T) {
	for _, q := range []constructs.IConstruct{encrypted.ScheduleDeadLetterQueue(), encrypted.FailureQueue()} {
		matches(t, "AWS::SQS::Queue", q, map[string]any{"Properties": assertions.Match_ObjectEquals(&map[string]any{
			"KmsMasterKeyId":         getAtt(key, "Arn"),
			"MessageRetentionPeriod": 14 * 24 * 3600,
		})})
		if skips := cdktest.CheckovSkips(template, cdktest.LogicalID(stack, q)); len(skips) != 0 {
			t.Errorf("%s: checkov skips %v on a queue with a customer managed key", cdktest.LogicalID(stack, q), skips)
		}
	}
	keyUse := map[string]any{
		"Action":    []any{"kms:GenerateDataKey", "kms:Decrypt"},
		"Effect":    "Allow",
		"Resource":  getAtt(key, "Arn"),
		"Condition": map[string]any{"StringEquals": map[string]any{"kms:ViaService": "sqs.eu-west-1.amazonaws.com"}},
	}
	for _, role := range []constructs.IConstruct{encrypted.Role(), encrypted.ScheduleRole()} {
		template.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
			"Roles":          []any{ref(role)},
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{keyUse})},
		})
	}
	// Without a key: SSE-SQS, and no key statement on either role.
	for _, role := range []constructs.IConstruct{hourly.Role(), hourly.ScheduleRole()} {
		res := template.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{"Properties": map[string]any{"Roles": []any{ref(role)}}})
		if strings.Contains(cdktest.JSON(res), "kms:") {
			t.Errorf("%s has key permissions without a key", cdktest.LogicalID(stack, role))
		}
	}
}

// Your own function (Entry) may take its items from elsewhere: Items may be empty, and the
// schedule input still carries job and occurrence.
func TestOwnFunctionWithoutItems(t *testing.T) {
	res := (*template.ToJSON())["Resources"].(map[string]any)[cdktest.LogicalID(stack, encrypted.Schedule())].(map[string]any)
	input := res["Properties"].(map[string]any)["Target"].(map[string]any)["Input"].(string)
	if !strings.Contains(input, `"items":[]`) || !strings.Contains(input, `"job":"Encrypted"`) {
		t.Errorf("input %s, want no items and the job", input)
	}
}

// Cron, TimeZone, JobName and DefaultGroup may be deploy-time values (a CfnParameter):
// validation skips the checks it cannot make and the schedule synthesizes with the tokens
// in place.
func TestTokenProps(t *testing.T) {
	s := cdktest.NewStack(cdktest.NewApp(), "Tokens")
	q := newFakeQueue(s, "Queue", false)
	cron := awscdk.NewCfnParameter(s, jsii.String("Cron"), &awscdk.CfnParameterProps{Default: jsii.String("0 3 * * ? *")})
	zone := awscdk.NewCfnParameter(s, jsii.String("Zone"), &awscdk.CfnParameterProps{Default: jsii.String("Europe/Paris")})
	job := awscdk.NewCfnParameter(s, jsii.String("Job"), &awscdk.CfnParameterProps{Default: jsii.String("nightly")})
	d := dispatcher.NewScheduledDispatcher(s, "Param", &dispatcher.ScheduledDispatcherProps{
		Queue: q, Items: one, Cron: *cron.ValueAsString(), TimeZone: *zone.ValueAsString(), JobName: *job.ValueAsString(),
	})
	// DefaultGroup too, on a FIFO queue.
	fq := newFakeQueue(s, "FifoQueue", true)
	group := awscdk.NewCfnParameter(s, jsii.String("Group"), &awscdk.CfnParameterProps{Default: jsii.String("tenant-1")})
	g := dispatcher.NewScheduledDispatcher(s, "Grouped", &dispatcher.ScheduledDispatcherProps{Queue: fq, Items: one, DefaultGroup: *group.ValueAsString()})
	tpl := assertions.Template_FromStack(s, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
		"ScheduleExpression":         map[string]any{"Fn::Join": []any{"", []any{"cron(", map[string]any{"Ref": "Cron"}, ")"}}},
		"ScheduleExpressionTimezone": map[string]any{"Ref": "Zone"},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{"JOB_NAME": map[string]any{"Ref": "Job"}}},
	})
	if d.JobName() != *job.ValueAsString() {
		t.Errorf("JobName() = %q, want the parameter's token", d.JobName())
	}

	matchesIn(t, tpl, s, "AWS::Lambda::Function", g.Function(), map[string]any{"Properties": map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{"DEFAULT_MESSAGE_GROUP_ID": map[string]any{"Ref": "Group"}}},
	}})
}

// tpl2 synthesizes a test's own stack.
func tpl2(s awscdk.Stack) assertions.Template { return assertions.Template_FromStack(s, nil) }

// matchesIn fails unless the resource of c in tpl matches props.
func matchesIn(t *testing.T, tpl assertions.Template, s awscdk.Stack, typ string, c constructs.IConstruct, props map[string]any) {
	t.Helper()
	if _, ok := (*tpl.FindResources(jsii.String(typ), props))[cdktest.LogicalID(s, c)]; !ok {
		t.Errorf("%s %s does not match %v", typ, cdktest.LogicalID(s, c), props)
	}
}

// The common Lambda options reach the function; the checkov skips whose reasons no longer
// hold (no VPC, no reserved concurrency) are gone.
func TestLambdaOptions(t *testing.T) {
	optsApp := cdktest.NewApp()
	cdktest.AddNagPacks(optsApp)
	s := cdktest.NewStack(optsApp, "Options")
	q := newFakeQueue(s, "Queue", false)
	vpc := awsec2.NewVpc(s, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}})
	sg := awsec2.NewSecurityGroup(s, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})
	layer := awslambda.LayerVersion_FromLayerVersionArn(s, jsii.String("Layer"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:2"))
	d := dispatcher.NewScheduledDispatcher(s, "Options", &dispatcher.ScheduledDispatcherProps{
		Queue: q, Items: one, Function: function.Options{Architecture: awslambda.Architecture_X86_64(), Vpc: vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}, SecurityGroups: []awsec2.ISecurityGroup{sg}, Layers: []awslambda.ILayerVersion{layer}, ReservedConcurrentExecutions: 1},
	})
	tpl := tpl2(s)
	matchesIn(t, tpl, s, "AWS::Lambda::Function", d.Function(), map[string]any{"Properties": map[string]any{
		"Architectures":                []any{"x86_64"},
		"Layers":                       []any{"arn:aws:lambda:eu-west-1:123456789012:layer:ext:2"},
		"ReservedConcurrentExecutions": 1,
		"VpcConfig": map[string]any{
			"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(s, sg), "GroupId"}}},
			"SubnetIds":        assertions.Match_AnyValue(),
		},
	}})
	if skips := fmt.Sprint(cdktest.CheckovSkips(tpl, cdktest.LogicalID(s, d.Function()))); skips != "[CKV_AWS_116 CKV_AWS_173]" {
		t.Errorf("checkov skips %s, want [CKV_AWS_116 CKV_AWS_173]", skips)
	}
	// cdk-nag passes what the dispatcher adds for a VPC (the test's own VPC has findings of
	// its own, flow logs, that are not the dispatcher's).
	for _, f := range cdktest.NagFindings(s) {
		if strings.HasPrefix(f, "/Options/Options/") {
			t.Errorf("unsuppressed cdk-nag finding at %s", f)
		}
	}
}

// What the construct created is reachable as the concrete L2 type, without type assertions:
// queue policies, alarms, metric methods and escape hatches of your own.
func TestConcreteAccessors(t *testing.T) {
	var (
		fn       awslambda.Function    = hourly.Function()
		role     awsiam.Role           = hourly.Role()
		schedule awsscheduler.Schedule = hourly.Schedule()
		sdlq     awssqs.Queue          = hourly.ScheduleDeadLetterQueue()
		fq       awssqs.Queue          = hourly.FailureQueue()
	)
	for _, c := range []constructs.IConstruct{fn, role, schedule, sdlq, fq} {
		if c == nil {
			t.Error("nil accessor")
		}
	}
}
