package table_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// A table made by Powertools for AWS Lambda (partition key "id", TTL on "expiration") works
// as is: imported by name with every default, the consumer's environment names it, its
// partition key reaches the runtime as "id" (or is left to the runtime's default, "id"),
// there is no sort key, and the function may call exactly dynamodb:UpdateItem on it.
func TestPowertoolsTableWithTheConsumer(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Powertools")
	tbl := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{TableName: "powertools-idempotency"})
	consumer.NewIdempotentConsumer(stack, "Consumer", &consumer.IdempotentConsumerProps{
		Queue: queue.NewProcessingQueue(stack, "Queue", nil),
		Table: tbl,
	})
	tmpl := assertions.Template_FromStack(stack, nil)

	vars := functionVariables(t, tmpl)
	if vars["IDEMPOTENCY_TABLE_NAME"] != "powertools-idempotency" {
		t.Errorf("IDEMPOTENCY_TABLE_NAME = %v, want powertools-idempotency", vars["IDEMPOTENCY_TABLE_NAME"])
	}
	if pk, set := vars["IDEMPOTENCY_PARTITION_KEY"]; set && pk != "id" {
		t.Errorf("IDEMPOTENCY_PARTITION_KEY = %v, want id (or unset: the runtime's default)", pk)
	}
	if sk := vars["IDEMPOTENCY_SORT_KEY"]; sk != nil && sk != "" {
		t.Errorf("IDEMPOTENCY_SORT_KEY = %v, want none", sk)
	}

	tableArn := cdktest.JSON(stack.Resolve(tbl.Table().TableArn()))
	var dynamo []string
	for _, s := range statements(tmpl) {
		for _, a := range actionList(s) {
			if strings.HasPrefix(a, "dynamodb:") {
				dynamo = append(dynamo, a)
				if cdktest.JSON(s["Resource"]) != tableArn {
					t.Errorf("%s on %s, want only on the table %s", a, cdktest.JSON(s["Resource"]), tableArn)
				}
			}
		}
	}
	if len(dynamo) != 1 || dynamo[0] != "dynamodb:UpdateItem" {
		t.Errorf("DynamoDB actions granted = %v, want exactly dynamodb:UpdateItem", dynamo)
	}
}

// functionVariables returns the environment of the template's one Lambda function.
func functionVariables(t *testing.T, tmpl assertions.Template) map[string]any {
	t.Helper()
	fns := tmpl.FindResources(jsii.String("AWS::Lambda::Function"), nil)
	if len(*fns) != 1 {
		t.Fatalf("%d functions, want 1", len(*fns))
	}
	for _, fn := range *fns {
		env, _ := (*fn)["Properties"].(map[string]any)["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		return vars
	}
	return nil
}

// statements returns every statement of every IAM policy in the template.
func statements(tmpl assertions.Template) []map[string]any {
	var out []map[string]any
	for _, r := range *tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func actionList(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}
