package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
	"github.com/idempotent-sqs/pipeline/stacks"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

const (
	tableName = "powertools-idempotency"
	topicArn  = "arn:aws:sns:eu-west-1:111122223333:on-call"
)

var (
	stack *OrdersStack
	tmpl  map[string]any
)

// The stack is synthesized once, with every cdk-nag pack attached (bundling
// skipped: `cdk synth` in examples/orders builds the function).
func TestMain(m *testing.M) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
	stack = NewOrdersStack(app, "Orders", &OrdersStackProps{
		IdempotencyTableName: tableName,
		AlarmTopicArn:        topicArn,
		Entry:                "../functions/orders", // go test runs in app/
	})
	stacks.AddNagPacks(app, false) // every pack the reference app runs
	tmpl = *assertions.Template_FromStack(stack.Stack, nil).ToJSON()
	os.Exit(jsiitest.Run(m))
}

func resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// The consumer runs this module's function against the imported table, with the
// environment the function library reads and the orders table's name.
func TestConsumerUsesTheImportedTableAndItsOwnTable(t *testing.T) {
	tables := resources("AWS::DynamoDB::Table")
	if len(tables) != 1 {
		t.Fatalf("want only the orders table created, got %d tables", len(tables))
	}
	var fn map[string]any
	for _, f := range resources("AWS::Lambda::Function") {
		fn = f
	}
	env := jsonOf(fn["Properties"].(map[string]any)["Environment"])
	for _, want := range []string{
		`"IDEMPOTENCY_TABLE_NAME":"` + tableName + `"`,
		`"IDEMPOTENCY_PARTITION_KEY":"id"`,
		`"ORDERS_TABLE_NAME":{"Ref":"OrdersTable`,
		`"DEAD_LETTER_QUEUE_URL"`,
	} {
		if !strings.Contains(env, want) {
			t.Errorf("consumer environment %s lacks %s", env, want)
		}
	}
}

// The role may UpdateItem on both tables and nothing else on them.
func TestGrantsAreTheTwoUpdateItems(t *testing.T) {
	var statements []string
	for _, p := range resources("AWS::IAM::Policy") {
		for _, s := range p["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			if strings.Contains(jsonOf(s), `"dynamodb:`) {
				statements = append(statements, jsonOf(s))
			}
		}
	}
	all := strings.Join(statements, "\n")
	for _, want := range []string{":table/" + tableName, `"OrdersTable`} {
		if !strings.Contains(all, want) {
			t.Errorf("no DynamoDB statement on %s:\n%s", want, all)
		}
	}
	for _, s := range statements {
		if !strings.Contains(s, `"dynamodb:UpdateItem"`) || strings.Count(s, `"dynamodb:`) != 1 {
			t.Errorf("statement grants more than UpdateItem: %s", s)
		}
	}
}

// Every alarm notifies the existing topic, and the imported table is watched.
func TestAlarmsNotifyTheExistingTopicAndWatchTheImportedTable(t *testing.T) {
	alarms := resources("AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}
	watched := 0
	for id, a := range alarms {
		if !strings.Contains(jsonOf(a), topicArn) {
			t.Errorf("alarm %s does not notify %s", id, topicArn)
		}
		if strings.Contains(jsonOf(a), `"Value":"`+tableName+`"`) {
			watched++
		}
	}
	if watched == 0 {
		t.Errorf("no alarm watches the imported table %s", tableName)
	}
	if n := len(resources("AWS::SNS::Topic")); n != 0 {
		t.Errorf("%d topics created; the existing one is used", n)
	}
}

// All five cdk-nag packs find nothing, neither errors nor warnings.
func TestNagFindsNothing(t *testing.T) {
	a := assertions.Annotations_FromStack(stack.Stack)
	for _, m := range append(*a.FindError(jsii.String("*"), assertions.Match_AnyValue()), *a.FindWarning(jsii.String("*"), assertions.Match_AnyValue())...) {
		t.Errorf("cdk-nag at %s: %v", *m.Id, m.Entry.Data)
	}
}
