package monitoring

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// resolved is what a token (a queue name, a function name) becomes in the template, e.g.
// {"Fn::GetAtt": [<queue logical id>, "QueueName"]}: expectations never spell a hashed id.
func resolved(stack awscdk.Stack, token *string) any {
	return stack.Resolve(token)
}

// onlyResource returns the logical id and properties of the single resource of type that
// matches props, failing the test unless there is exactly one.
func onlyResource(t *testing.T, tmpl assertions.Template, typ string, props any) (string, map[string]any) {
	t.Helper()
	var match *map[string]*map[string]any
	if props == nil {
		match = tmpl.FindResources(jsii.String(typ), nil)
	} else {
		match = tmpl.FindResources(jsii.String(typ), map[string]any{"Properties": props})
	}
	if len(*match) != 1 {
		t.Fatalf("want exactly one %s matching %v, found %d", typ, props, len(*match))
	}
	for id, r := range *match {
		p, _ := (*r)["Properties"].(map[string]any)
		return id, p
	}
	panic("unreachable")
}

// alarmProps returns the template properties of alarm.
func alarmProps(t *testing.T, f pipelineFixture, alarm awscloudwatch.Alarm) map[string]any {
	t.Helper()
	if alarm == nil {
		t.Fatal("alarm is nil")
	}
	id := cdktest.LogicalID(f.stack, alarm)
	r, ok := (*f.tmpl.ToJSON())["Resources"].(map[string]any)[id].(map[string]any)
	if !ok || r["Type"] != "AWS::CloudWatch::Alarm" {
		t.Fatalf("no AWS::CloudWatch::Alarm %s in the template", id)
	}
	p, _ := r["Properties"].(map[string]any)
	return p
}

// expectAlarm fails the test unless alarm's template properties match want (objectLike):
// the template is searched with the matcher, and alarm must be among the results.
func expectAlarm(t *testing.T, f pipelineFixture, alarm awscloudwatch.Alarm, want map[string]any) {
	t.Helper()
	actual := alarmProps(t, f, alarm)
	found := f.tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"Properties": assertions.Match_ObjectLike(&want),
	})
	if _, ok := (*found)[cdktest.LogicalID(f.stack, alarm)]; !ok {
		got, _ := json.MarshalIndent(actual, "", "  ")
		t.Errorf("alarm %s does not match the expected properties; it has:\n%s", *alarm.Node().Path(), got)
	}
}

// flatten renders a template value that may be a plain string or an Fn::Join as one
// string, with every reference inlined as its JSON ({"Ref":"..."}).
func flatten(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if join, ok := x["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = flatten(p)
			}
			return strings.Join(out, sep)
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}
