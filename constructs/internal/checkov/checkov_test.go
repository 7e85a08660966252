package checkov_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// GIVEN an L2 queue and a raw CloudFormation queue WHEN skips are added, some twice THEN each
// resource carries checkov's suppression metadata once per check, with its reason.
func TestAddWritesCheckovSuppressionsOncePerCheck(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "Checkov")
	l2 := awssqs.NewQueue(stack, jsii.String("L2"), nil)
	l1 := awssqs.NewCfnQueue(stack, jsii.String("L1"), &awssqs.CfnQueueProps{QueueName: jsii.String("raw")})

	checkov.Add(l2, checkov.QueueSQSManagedEncryption)
	checkov.Add(l2, checkov.QueueSQSManagedEncryption, checkov.FunctionNoVPC) // the first again, and a second
	checkov.Add(l1, checkov.TableAWSManagedKey)

	tmpl := assertions.Template_FromStack(stack, nil)
	want := func(skips ...checkov.Skip) map[string]any {
		list := make([]any, len(skips))
		for i, s := range skips {
			list[i] = map[string]any{"id": s.ID, "comment": s.Reason}
		}
		return map[string]any{"Metadata": map[string]any{"checkov": map[string]any{"skip": assertions.Match_Exact(list)}}}
	}
	tmpl.HasResource(jsii.String("AWS::SQS::Queue"), want(checkov.QueueSQSManagedEncryption, checkov.FunctionNoVPC))
	tmpl.HasResource(jsii.String("AWS::SQS::Queue"), map[string]any{
		"Properties": map[string]any{"QueueName": "raw"},
		"Metadata":   want(checkov.TableAWSManagedKey)["Metadata"],
	})
}

func TestAddRejectsAConstructWithoutAResource(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "NoResource")
	defer func() {
		r := recover()
		msg, _ := r.(string)
		if want := "checkov.Add: NoResource is neither a CloudFormation resource nor a construct whose default child is one"; msg != want {
			t.Fatalf("panic = %v, want %q", r, want)
		}
	}()
	checkov.Add(stack, checkov.FunctionNoVPC)
}

// Every skip names a check and gives a reason.
func TestEverySkipHasAReason(t *testing.T) {
	for _, s := range []checkov.Skip{
		checkov.QueueSQSManagedEncryption, checkov.TableAWSManagedKey, checkov.FunctionNoDLQ,
		checkov.FunctionNoReservedConcurrency, checkov.FunctionNoVPC, checkov.FunctionPlainEnvironment,
		checkov.LogGroupServiceKey,
	} {
		if len(s.ID) < len("CKV_AWS_1") || len(s.Reason) < 40 {
			t.Errorf("skip %+v: want a checkov id and a reason a reviewer can accept", s)
		}
	}
}
