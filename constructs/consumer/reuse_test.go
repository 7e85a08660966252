package consumer_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/functions/consume"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// An existing table keyed on another attribute than "id": the partition key name reaches the
// runtime (IDEMPOTENCY_PARTITION_KEY), instead of the function writing "id" and failing.
// And a KeyPrefix that is a deploy-time value synthesizes.
func TestPartitionKeyReachesTheRuntime(t *testing.T) {
	s := cdktest.NewStack(cdktest.NewApp(), "PartitionKey")
	q := newFakeQueue(s, "Queue", false, 3*time.Minute, 4*24*time.Hour)
	tbl := newFakeTable(s, "Table", "")
	tbl.partitionKey = "pk"
	c := consumer.NewIdempotentConsumer(s, "Consumer", &consumer.IdempotentConsumerProps{Queue: q, Table: tbl})
	// A deploy-time KeyPrefix is passed on unchecked.
	prefix := awscdk.NewCfnParameter(s, jsii.String("Prefix"), &awscdk.CfnParameterProps{Default: jsii.String("orders")})
	c2 := consumer.NewIdempotentConsumer(s, "Consumer2", &consumer.IdempotentConsumerProps{Queue: q, Table: tbl, KeyPrefix: *prefix.ValueAsString()})
	tpl := assertions.Template_FromStack(s, nil)
	res := tpl.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{"Properties": map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{"IDEMPOTENCY_PARTITION_KEY": "pk"}},
	}})
	if _, ok := (*res)[cdktest.LogicalID(s, c.Function())]; !ok {
		t.Error("IDEMPOTENCY_PARTITION_KEY is not the table's partition key \"pk\"")
	}
	env := deployedEnv(t, tpl, s, c)
	if cfg, err := consume.LoadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil || cfg.Idempotency.PartitionKeyAttr != "pk" {
		t.Errorf("the function reads partition key %q (%v), want \"pk\"", cfg.Idempotency.PartitionKeyAttr, err)
	}
	res = tpl.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{"Properties": map[string]any{
		"Environment": map[string]any{"Variables": map[string]any{"IDEMPOTENCY_KEY_PREFIX": map[string]any{"Ref": "Prefix"}}},
	}})
	if _, ok := (*res)[cdktest.LogicalID(s, c2.Function())]; !ok {
		t.Error("IDEMPOTENCY_KEY_PREFIX is not the parameter")
	}
}

// What the construct created is reachable as the concrete L2 type, without type assertions.
func TestConcreteAccessors(t *testing.T) {
	var (
		fn     awslambda.Function                   = standard.Function()
		role   awsiam.Role                          = standard.Role()
		logs   awslogs.LogGroup                     = standard.LogGroup()
		source awslambdaeventsources.SqsEventSource = standard.EventSource()
	)
	if fn == nil || role == nil || logs == nil || source == nil {
		t.Fatal("nil accessor")
	}
	if got, want := fmt.Sprint(stack.Resolve(source.EventSourceMappingArn())), fmt.Sprint(stack.Resolve(standard.EventSourceMappingArn())); got != want {
		t.Errorf("EventSource().EventSourceMappingArn() = %s, want %s", got, want)
	}
}

// Your own function on existing resources, with the common Lambda options: an imported table
// and queue, each with an imported customer managed key, a VPC, a layer, reserved
// concurrency and x86_64. The function gets the same environment contract and the same
// grants, including the keys; the checkov skips whose reasons no longer hold are gone.
func TestOwnFunctionOnExistingResources(t *testing.T) {
	app := cdktest.NewApp()
	s := cdktest.NewStack(app, "Existing")
	tableKey := awskms.Key_FromKeyArn(s, jsii.String("TableKey"), jsii.String("arn:aws:kms:eu-west-1:123456789012:key/table-key"))
	queueKey := awskms.Key_FromKeyArn(s, jsii.String("QueueKey"), jsii.String("arn:aws:kms:eu-west-1:123456789012:key/queue-key"))
	idem := table.ImportIdempotencyTable(s, "Idempotency", &table.ExistingIdempotencyTableProps{
		TableName: "legacy-idempotency", PartitionKey: "pk", EncryptionKey: tableKey,
	})
	q := awssqs.Queue_FromQueueAttributes(s, jsii.String("Queue"), &awssqs.QueueAttributes{
		QueueArn: jsii.String("arn:aws:sqs:eu-west-1:123456789012:orders"), KeyArn: queueKey.KeyArn(),
	})
	vpc := awsec2.NewVpc(s, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}}})
	layer := awslambda.LayerVersion_FromLayerVersionArn(s, jsii.String("Layer"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:1"))

	c := consumer.NewIdempotentConsumer(s, "Consumer", &consumer.IdempotentConsumerProps{
		Queue: specQueue{visibility: 3 * time.Minute, retention: 4 * 24 * time.Hour, queue: q}, Table: idem,
		Function: function.Options{Entry: "testdata/shipping", Architecture: awslambda.Architecture_X86_64(), Vpc: vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}, Layers: []awslambda.ILayerVersion{layer}, ReservedConcurrentExecutions: 10, Environment: map[string]string{"SHIPMENTS_TABLE": "shipments"}},
	})
	tpl := assertions.Template_FromStack(s, nil)
	fnID := cdktest.LogicalID(s, c.Function())
	res := tpl.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{"Properties": map[string]any{
		"Architectures":                []any{"x86_64"},
		"Layers":                       []any{"arn:aws:lambda:eu-west-1:123456789012:layer:ext:1"},
		"ReservedConcurrentExecutions": 10,
		"VpcConfig":                    map[string]any{"SubnetIds": assertions.Match_AnyValue(), "SecurityGroupIds": assertions.Match_AnyValue()},
		"Environment": map[string]any{"Variables": map[string]any{
			"IDEMPOTENCY_TABLE_NAME": "legacy-idempotency", "IDEMPOTENCY_PARTITION_KEY": "pk", "SHIPMENTS_TABLE": "shipments",
			"IDEMPOTENCY_KEY_PREFIX": "Consumer", "IDEMPOTENCY_LOCK_CAP": "30s",
		}},
	}})
	if _, ok := (*res)[fnID]; !ok {
		t.Fatalf("function %s lacks the options or the environment contract", fnID)
	}

	got := map[string]bool{}
	for _, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{"Properties": map[string]any{
		"Roles": []any{map[string]any{"Ref": cdktest.LogicalID(s, c.Role())}}}}) {
		for _, st := range (*p)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			m := st.(map[string]any)
			for _, a := range actions(m) {
				got[fmt.Sprint(a, " ", cdktest.JSON(m["Resource"]))] = true
			}
		}
	}
	tableArn := `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":dynamodb:eu-west-1:123456789012:table/legacy-idempotency"]]}`
	for _, want := range []string{
		"dynamodb:UpdateItem " + tableArn,
		`kms:Decrypt "arn:aws:kms:eu-west-1:123456789012:key/table-key"`,
		`kms:GenerateDataKey "arn:aws:kms:eu-west-1:123456789012:key/table-key"`,
		`sqs:ReceiveMessage "arn:aws:sqs:eu-west-1:123456789012:orders"`,
		`sqs:DeleteMessage "arn:aws:sqs:eu-west-1:123456789012:orders"`,
		`kms:Decrypt "arn:aws:kms:eu-west-1:123456789012:key/queue-key"`,
		`ec2:CreateNetworkInterface "*"`,
	} {
		if !got[want] {
			t.Errorf("the function's role lacks %s; it has %v", want, got)
		}
	}
	skips := cdktest.CheckovSkips(tpl, fnID)
	if slices.Contains(skips, "CKV_AWS_115") || slices.Contains(skips, "CKV_AWS_117") {
		t.Errorf("checkov skips %v: a function with reserved concurrency in a VPC must not skip CKV_AWS_115 or CKV_AWS_117", skips)
	}
}
