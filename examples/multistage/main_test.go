package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
	"github.com/idempotent-sqs/pipeline/stacks"
)

// templates are both stages' stacks, synthesized once (bundling skipped: `cdk synth` in
// this directory builds the functions), with every cdk-nag pack the reference app runs.
var (
	templates = map[string]map[string]any{}
	stages    = map[string]awscdk.Stack{}
)

func TestMain(m *testing.M) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
	stacks.AddNagPacks(app, false)
	for _, stage := range []struct {
		id  string
		cfg StageConfig
	}{{"Dev", Dev}, {"Prod", Prod}} {
		s := NewPipelineStage(app, stage.id, stage.cfg)
		stack := s.Node().FindChild(jsii.String("Pipeline")).(awscdk.Stack)
		templates[stage.id] = *assertions.Template_FromStack(stack, nil).ToJSON()
		stages[stage.id] = stack
	}
	os.Exit(jsiitest.Run(m))
}

// resources returns the stage's resources of one type, by logical id.
func resources(stage, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range templates[stage]["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any { p, _ := r["Properties"].(map[string]any); return p }

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// Prod brings one key, and every data store the constructs create uses it: the table, every
// queue (processing, DLQ, schedule DLQ, dispatcher failures, undelivered notifications) and
// every alarm topic.
func TestProdEncryptsEverythingWithItsOwnKey(t *testing.T) {
	keys := resources("Prod", "AWS::KMS::Key")
	if len(keys) != 1 {
		t.Fatalf("prod has %d KMS keys, want exactly its own one: %v", len(keys), keys)
	}
	var keyID string
	for id := range keys {
		keyID = id
	}
	usesKey := func(v any) bool { return strings.Contains(jsonOf(v), `"`+keyID+`"`) }
	for id, q := range resources("Prod", "AWS::SQS::Queue") {
		if !usesKey(props(q)["KmsMasterKeyId"]) {
			t.Errorf("queue %s: KmsMasterKeyId %v, want the prod key %s", id, props(q)["KmsMasterKeyId"], keyID)
		}
	}
	for id, tb := range resources("Prod", "AWS::DynamoDB::Table") {
		if !usesKey(props(tb)["SSESpecification"]) {
			t.Errorf("table %s: SSESpecification %v, want the prod key", id, props(tb)["SSESpecification"])
		}
	}
	topics := resources("Prod", "AWS::SNS::Topic")
	if len(topics) == 0 {
		t.Fatal("prod has no SNS topic")
	}
	for id, tp := range topics {
		if !usesKey(props(tp)["KmsMasterKeyId"]) {
			t.Errorf("topic %s: KmsMasterKeyId %v, want the prod key", id, props(tp)["KmsMasterKeyId"])
		}
	}
}

func TestRetentionAndRecipientsDifferPerStage(t *testing.T) {
	for _, tc := range []struct {
		stage     string
		retention float64 // the processing queue's, seconds
		logDays   float64
		emails    []string
	}{
		{"Dev", 4 * 86400, 7, []string{"dev-team@example.com"}},
		{"Prod", 7 * 86400, 365, []string{"oncall@example.com", "payments-leads@example.com"}},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			var retentions []float64
			for _, q := range resources(tc.stage, "AWS::SQS::Queue") {
				if _, isSource := props(q)["RedrivePolicy"]; isSource {
					retentions = append(retentions, props(q)["MessageRetentionPeriod"].(float64))
				}
			}
			if len(retentions) != 1 || retentions[0] != tc.retention {
				t.Errorf("processing queue retention %v, want [%v]", retentions, tc.retention)
			}
			for id, lg := range resources(tc.stage, "AWS::Logs::LogGroup") {
				if got := props(lg)["RetentionInDays"]; got != tc.logDays {
					t.Errorf("log group %s: RetentionInDays %v, want %v", id, got, tc.logDays)
				}
			}
			var got []string
			for _, s := range resources(tc.stage, "AWS::SNS::Subscription") {
				if props(s)["Protocol"] == "email" {
					got = append(got, props(s)["Endpoint"].(string))
				}
			}
			for _, want := range tc.emails {
				if !strings.Contains(strings.Join(got, ","), want) {
					t.Errorf("subscriptions %v: %s missing", got, want)
				}
			}
			if len(got) < len(tc.emails) {
				t.Errorf("subscriptions %v, want at least %v", got, tc.emails)
			}
		})
	}
}

// Dev can be torn down with `cdk destroy`; prod keeps its table and protects it.
func TestOnlyDevTableIsDisposable(t *testing.T) {
	for stage, want := range map[string]struct {
		policy     string
		protection bool
	}{"Dev": {"Delete", false}, "Prod": {"Retain", true}} {
		for id, tb := range resources(stage, "AWS::DynamoDB::Table") {
			if tb["DeletionPolicy"] != want.policy || props(tb)["DeletionProtectionEnabled"] != want.protection {
				t.Errorf("%s table %s: DeletionPolicy %v, DeletionProtectionEnabled %v; want %s, %v",
					stage, id, tb["DeletionPolicy"], props(tb)["DeletionProtectionEnabled"], want.policy, want.protection)
			}
		}
	}
}

// Both stages pass all five cdk-nag packs (AwsSolutions, Serverless, NIST 800-53 R5, PCI DSS
// 3.2.1, HIPAA Security) with no finding left: neither errors nor warnings.
func TestNagFindsNothing(t *testing.T) {
	for id, stack := range stages {
		a := assertions.Annotations_FromStack(stack)
		for _, m := range append(*a.FindError(jsii.String("*"), assertions.Match_AnyValue()), *a.FindWarning(jsii.String("*"), assertions.Match_AnyValue())...) {
			t.Errorf("%s: cdk-nag at %s: %v", id, *m.Id, m.Entry.Data)
		}
	}
}
