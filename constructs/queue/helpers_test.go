package queue

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// resource returns the properties of the resource with logical id, failing unless its type is typ.
func resource(t *testing.T, tmpl assertions.Template, id, typ string) map[string]any {
	t.Helper()
	r, ok := (*tmpl.ToJSON())["Resources"].(map[string]any)[id].(map[string]any)
	if !ok || r["Type"] != typ {
		t.Fatalf("no %s %s in the template", typ, id)
	}
	p, _ := r["Properties"].(map[string]any)
	return p
}

// findIDs returns the logical ids of the resources of typ whose properties match props.
func findIDs(tmpl assertions.Template, typ string, props any) []string {
	found := tmpl.FindResources(jsii.String(typ), map[string]any{"Properties": props})
	var ids []string
	for id := range *found {
		ids = append(ids, id)
	}
	return ids
}

// getAttTarget returns the logical id in {"Fn::GetAtt": [id, attr]}, or "" if v is not one.
func getAttTarget(v any, attr string) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	ga, ok := m["Fn::GetAtt"].([]any)
	if !ok || len(ga) != 2 || ga[1] != attr {
		return ""
	}
	id, _ := ga[0].(string)
	return id
}

// flatten renders a template value that may be a plain string or an Fn::Join as one string,
// with {"Ref": "AWS::Partition"} as "aws" and any other reference inlined as its JSON.
func flatten(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if x["Ref"] == "AWS::Partition" {
			return "aws"
		}
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
	return cdktest.JSON(v)
}
