package standin

import (
	"encoding/json"
	"testing"
)

// The forms CDK writes for a mapping's function are run by test/outside's corpus, as the CDK
// CLI synthesizes them; this test holds what mappedFunction says of the expressions that lead
// to no one function, which a user's app gets from CDK only by mistake.
func TestMappedFunctionRefusals(t *testing.T) {
	types := map[string]string{
		"Fn": typeFunction, "Other": typeFunction, "Topic": "AWS::SNS::Topic",
		"Alias": "AWS::Lambda::Alias", "Version": "AWS::Lambda::Version", "Loop": "AWS::Lambda::Alias",
	}
	names := map[string]string{"Alias": `{"Ref":"Version"}`, "Version": `{"Ref":"Fn"}`, "Loop": `{"Ref":"Loop"}`}
	resource := func(id string) (string, any) {
		var next any
		if s, ok := names[id]; ok {
			json.Unmarshal([]byte(s), &next)
		}
		return types[id], next
	}
	params := map[string]Parameter{"FunctionArn": {Name: "FunctionArn", Type: "String"}}
	for _, c := range []struct {
		expr              string
		fn, external, why string
	}{
		{`{"Fn::Join":["",[{"Fn::Select":[6,{"Fn::Split":[":",{"Ref":"Alias"}]}]},":live"]]}`, "Fn", "", ""},
		{`{"Fn::Join":["",[{"Ref":"Fn"},":",{"Fn::GetAtt":["Version","Version"]}]]}`, "Fn", "", ""},
		{`"orders-legacy"`, "", "function orders-legacy", ""},
		{`"arn:aws:lambda:eu-west-1:111122223333:function:orders:live"`, "", "function orders:live", ""},
		{`{"Ref":"FunctionArn"}`, "", `function {"Ref":"FunctionArn"}`, ""},
		{`{"Ref":"Topic"}`, "", "", "its FunctionName refers to Topic (AWS::SNS::Topic), not a Lambda function, alias or version"},
		{`{"Fn::Join":[":",[{"Ref":"Fn"},{"Ref":"Other"}]]}`, "", "", `its FunctionName {"Fn::Join":[":",[{"Ref":"Fn"},{"Ref":"Other"}]]} leads to functions Fn, Other: want one`},
		{`{"Ref":"Loop"}`, "", "", "its FunctionName leads through more than two aliases or versions"},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.expr), &v); err != nil {
			t.Fatal(err)
		}
		fn, external, why := mappedFunction(v, resource, params)
		if fn != c.fn || external != c.external || why != c.why {
			t.Errorf("%s: got function %q, external %q, why %q; want %q, %q, %q", c.expr, fn, external, why, c.fn, c.external, c.why)
		}
	}
}
