package pipeline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The nag app holds pipelines as a user builds them, with every cdk-nag pack attached (what
// the reference app runs), synthesized once from TestMain.
var (
	plainStack, hardenedStack, importedKeyStack awscdk.Stack
	hardenedPipeline                            pipeline.Pipeline
	hardenedTmpl                                assertions.Template
)

func buildNagApp() {
	app := cdktest.NewApp()
	cdktest.AddNagPacks(app)
	items := &dispatcher.ScheduledDispatcherProps{Items: []dispatcher.WorkItem{{ID: "nightly"}}}

	// Defaults: each compliance control the defaults leave off carries its reason.
	plainStack = cdktest.NewStack(app, "Plain")
	pipeline.NewPipeline(plainStack, "Orders", &pipeline.PipelineProps{Dispatcher: items})

	// Hardening with nothing else given: the pipeline makes its log key, security group and
	// table backup plan itself; the VPC's flow logs have a key of their own.
	hardenedStack = cdktest.NewStack(app, "Hardened")
	flowKey := awskms.NewKey(hardenedStack, jsii.String("FlowLogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	hardenedPipeline = pipeline.NewPipeline(hardenedStack, "Orders", &pipeline.PipelineProps{
		Dispatcher: items,
		Hardening:  &pipeline.Hardening{Vpc: pipeline.NewIsolatedVpc(hardenedStack, "Vpc", flowKey)},
	})

	// A key imported into the app: CDK cannot add to its policy, so synth warns.
	importedKeyStack = cdktest.NewStack(app, "ImportedFlowLogKey")
	pipeline.NewIsolatedVpc(importedKeyStack, "Vpc",
		awskms.Key_FromKeyArn(importedKeyStack, jsii.String("Key"), jsii.String("arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab")))

	hardenedTmpl = assertions.Template_FromStack(hardenedStack, nil)
}

// All five packs (AwsSolutions, Serverless, NIST 800-53 R5, PCI DSS 3.2.1, HIPAA Security)
// find nothing unsuppressed in a default pipeline or a hardened one.
func TestNagFindsNothing(t *testing.T) {
	for _, s := range []awscdk.Stack{plainStack, hardenedStack} {
		for _, finding := range cdktest.NagFindings(s) {
			t.Errorf("cdk-nag: %s", finding)
		}
	}
}

// suppressed returns the cdk-nag rule ids suppressed on the resource (its Metadata).
func suppressed(r map[string]any) []string {
	meta, _ := r["Metadata"].(map[string]any)
	nag, _ := meta["cdk_nag"].(map[string]any)
	rules, _ := nag["rules_to_suppress"].([]any)
	var ids []string
	for _, rule := range rules {
		if m, ok := rule.(map[string]any); ok {
			id, _ := m["id"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}

// Hardening turns the controls on rather than suppressing their rules: no resource of the
// hardened stack carries a suppression of the rules it answers, and no role carries the
// IAMNoInlinePolicy suppression of its DefaultPolicy (where it would find nothing today and
// hide a finding tomorrow).
func TestHardeningSuppressesNothingItTurnsOn(t *testing.T) {
	answered := []string{"LambdaInsideVPC", "LambdaConcurrency", "CloudWatchLogGroupEncrypted", "DynamoDBInBackupPlan"}
	for id, r := range (*hardenedTmpl.ToJSON())["Resources"].(map[string]any) {
		res := r.(map[string]any)
		for _, rule := range suppressed(res) {
			if slices.ContainsFunc(answered, func(a string) bool { return strings.HasSuffix(rule, "-"+a) }) {
				t.Errorf("%s suppresses %s, which Hardening turns on", id, rule)
			}
			if res["Type"] == "AWS::IAM::Role" && strings.HasSuffix(rule, "-IAMNoInlinePolicy") {
				t.Errorf("role %s carries %s: it belongs on the role's DefaultPolicy", id, rule)
			}
		}
	}
}

func TestHardeningTurnsOnTheControls(t *testing.T) {
	h := hardenedTmpl
	sgs := *h.FindResources(jsii.String("AWS::EC2::SecurityGroup"), assertions.Match_ObjectLike(&map[string]any{
		"Properties": map[string]any{"GroupDescription": assertions.Match_StringLikeRegexp(jsii.String("^Functions of Hardened/Orders"))},
	}))
	if len(sgs) != 1 {
		t.Fatalf("%d function security groups, want 1 for the pipeline's two functions", len(sgs))
	}
	var sgID string
	for id, sg := range sgs {
		sgID = id
		p := (*sg)["Properties"].(map[string]any)
		if _, ok := p["SecurityGroupIngress"]; ok {
			t.Errorf("function security group has inbound rules: %s", cdktest.JSON(p["SecurityGroupIngress"]))
		}
		if got := cdktest.JSON(p["SecurityGroupEgress"]); !strings.Contains(got, `"FromPort":443`) || !strings.Contains(got, `"ToPort":443`) ||
			strings.Count(got, "IpProtocol") != 1 {
			t.Errorf("function security group egress %s, want HTTPS (443) only", got)
		}
	}

	want := map[string]float64{
		cdktest.LogicalID(hardenedStack, hardenedPipeline.Consumer().Function()):   consumer.DefaultMaxConcurrency,
		cdktest.LogicalID(hardenedStack, hardenedPipeline.Dispatcher().Function()): pipeline.DispatcherReservedConcurrency,
	}
	fns := *h.FindResources(jsii.String("AWS::Lambda::Function"), nil)
	for id, reserved := range want {
		p := (*fns[id])["Properties"].(map[string]any)
		if got, _ := p["ReservedConcurrentExecutions"].(float64); got != reserved {
			t.Errorf("%s: ReservedConcurrentExecutions %v, want %v", id, p["ReservedConcurrentExecutions"], reserved)
		}
		vpc := cdktest.JSON(p["VpcConfig"])
		if !strings.Contains(vpc, `"`+sgID+`"`) || !strings.Contains(vpc, "IsolatedSubnet") {
			t.Errorf("%s: VpcConfig %s, want the isolated subnets and security group %s", id, vpc, sgID)
		}
	}

	// Every log group (both functions', the flow logs') is under a customer managed key
	// whose policy lets CloudWatch Logs use it for that log group only.
	logGroups := *h.FindResources(jsii.String("AWS::Logs::LogGroup"), nil)
	if len(logGroups) != 3 {
		t.Errorf("%d log groups, want 3 (consumer, dispatcher, flow logs)", len(logGroups))
	}
	policies := cdktest.JSON(h.FindResources(jsii.String("AWS::KMS::Key"), nil))
	for id, lg := range logGroups {
		if _, ok := (*lg)["Properties"].(map[string]any)["KmsKeyId"]; !ok {
			t.Errorf("log group %s has no KmsKeyId", id)
		}
		if pattern := ":log-group:Hardened-" + id + "-*"; !strings.Contains(policies, pattern) {
			t.Errorf("no key policy statement lets CloudWatch Logs use a key for %s (%s)", id, pattern)
		}
	}
	if n := strings.Count(policies, "kms:EncryptionContext:aws:logs:arn"); n != len(logGroups) {
		t.Errorf("%d CloudWatch Logs statements in the key policies, want one per log group (%d)", n, len(logGroups))
	}

	cdktest.Must(t, "daily backup kept 35 days", func() {
		h.HasResourceProperties(jsii.String("AWS::Backup::BackupPlan"), map[string]any{
			"BackupPlan": map[string]any{"BackupPlanRule": []any{assertions.Match_ObjectLike(&map[string]any{
				"Lifecycle": map[string]any{"DeleteAfterDays": 35},
			})}},
		})
	})
}

// An imported key's policy cannot be changed by CDK: synth says what it must allow.
func TestImportedFlowLogKeyWarns(t *testing.T) {
	cdktest.Must(t, "warning", func() {
		assertions.Annotations_FromStack(importedKeyStack).HasWarning(jsii.String("/ImportedFlowLogKey/Vpc"),
			assertions.Match_StringLikeRegexp(jsii.String("NewIsolatedVpc's key is an imported key: for the flow logs' log group, its key policy must let")))
	})
}
