package cfn

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// value is a template value written as JSON, as a template holds it.
func value(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// deployed answers as a deployment would: queue Q, its ARN, parameter P without a value,
// export "exp" of stack A.
var deployed = Resolver{
	Ref: func(name string) (any, error) {
		switch name {
		case "Q":
			return "http://local/000000000000/q-dev", nil
		case "AWS::Region":
			return "eu-west-1", nil
		case "P":
			return nil, &Unresolved{What: "parameter P (String)", Why: "which has no Default", Param: "P"}
		}
		return nil, &Unresolved{What: name, Why: "which is not a resource or parameter of the template"}
	},
	GetAtt: func(id, attr string) (any, error) {
		if id == "Q" && attr == "Arn" {
			return "arn:aws:sqs:eu-west-1:000000000000:q-dev", nil
		}
		return nil, &Unresolved{What: id + "." + attr, Why: "an attribute the local kit has no value for"}
	},
	Import: func(name any) (any, error) {
		if name == "exp" {
			return "exported", nil
		}
		return nil, UnresolvedImport(name)
	},
	Literal: func(s string) any {
		if s == "arn:aws:sqs:eu-west-1:000000000000:q" { // a queue's ARN by its template name
			return "arn:aws:sqs:eu-west-1:000000000000:q-dev"
		}
		return s
	},
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"Ref": "Q"}`, `"http://local/000000000000/q-dev"`},
		{`{"Fn::GetAtt": ["Q", "Arn"]}`, `"arn:aws:sqs:eu-west-1:000000000000:q-dev"`},
		{`{"Fn::Join": ["-", ["a", {"Ref": "AWS::Region"}]]}`, `"a-eu-west-1"`},
		{`{"Fn::Select": [1, {"Fn::Split": [":", {"Fn::GetAtt": ["Q", "Arn"]}]}]}`, `"aws"`},
		{`{"Fn::Select": ["5", {"Fn::Split": [":", {"Fn::GetAtt": ["Q", "Arn"]}]}]}`, `"q-dev"`},
		{`{"Fn::Sub": "${Q.Arn}/${AWS::Region}/${!Literal}"}`, `"arn:aws:sqs:eu-west-1:000000000000:q-dev/eu-west-1/${Literal}"`},
		{`{"Fn::Sub": ["${X}-${Q}", {"X": {"Ref": "AWS::Region"}}]}`, `"eu-west-1-http://local/000000000000/q-dev"`},
		{`{"Fn::ImportValue": {"Fn::Join": ["", ["e", "xp"]]}}`, `"exported"`},
		// a plain string and the string a join makes go through Literal: the queue's ARN by name
		{`"arn:aws:sqs:eu-west-1:000000000000:q"`, `"arn:aws:sqs:eu-west-1:000000000000:q-dev"`},
		{`{"Fn::Join": [":", ["arn:aws:sqs", {"Ref": "AWS::Region"}, "000000000000:q"]]}`, `"arn:aws:sqs:eu-west-1:000000000000:q-dev"`},
		{`{"deadLetterTargetArn": {"Fn::GetAtt": ["Q", "Arn"]}, "maxReceiveCount": 5, "on": true}`,
			`{"deadLetterTargetArn": "arn:aws:sqs:eu-west-1:000000000000:q-dev", "maxReceiveCount": 5, "on": true}`},
	} {
		got, err := deployed.Resolve(value(t, tc.in))
		if err != nil {
			t.Errorf("Resolve(%s): %v", tc.in, err)
			continue
		}
		if want := value(t, tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("Resolve(%s) = %#v, want %#v", tc.in, got, want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"Ref": "P"}`, "parameter P (String), which has no Default"},
		{`{"Fn::GetAtt": ["Q", "QueueName"]}`, "Q.QueueName, an attribute the local kit has no value for"},
		{`{"Fn::GetAtt": "Q.Arn"}`, "Fn::GetAtt Q.Arn: want [id, attribute]"},
		{`{"Fn::Join": ["", ["a", {"Ref": "Nope"}]]}`, `Fn::Join ["",["a",{"Ref":"Nope"}]]: Nope, which is not a resource or parameter of the template`},
		{`{"Fn::Select": [9, ["a"]]}`, `Fn::Select [9,["a"]]: not resolvable in this deployment`},
		{`{"Fn::Sub": "${P}-${Q}"}`, "parameter P (String), which has no Default"},
		{`{"Fn::ImportValue": "other"}`, `Fn::ImportValue "other", an export of none of the stacks the kit runs (run the stack that exports it too)`},
		{`{"Fn::If": ["C", "a", "b"]}`, `Fn::If ["C","a","b"], an intrinsic the local kit does not evaluate`},
		{`[{"Ref": "Q"}, {"Ref": "Nope"}]`, "Nope, which is not a resource or parameter of the template"},
	} {
		_, err := deployed.Resolve(value(t, tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("Resolve(%s): got error %v, want %q", tc.in, err, tc.want)
		}
	}
	// A parameter without a value stays one, through the functions that use it.
	_, err := deployed.Resolve(value(t, `{"Fn::Join": ["", [{"Ref": "P"}]]}`))
	var u *Unresolved
	if !errors.As(err, &u) || u.Param != "P" {
		t.Errorf("Join of parameter P: got %v, want an Unresolved of parameter P", err)
	}
	if _, err := deployed.Resolve(struct{}{}); err == nil || !strings.Contains(err.Error(), "unexpected template value struct {}") {
		t.Errorf("a Go value no template holds: got %v", err)
	}
	// No hooks: every name is unresolved, and an import says which.
	_, err = Resolver{}.Resolve(value(t, `{"Fn::ImportValue": "x"}`))
	if err == nil || err.Error() != `Fn::ImportValue "x", an export of none of the stacks the kit runs (run the stack that exports it too)` {
		t.Errorf("import with no hook: %v", err)
	}
	_, err = Resolver{}.Resolve(value(t, `{"Fn::GetAtt": ["Q", "Arn"]}`))
	if err == nil || err.Error() != "Q.Arn, which has no value before deployment" {
		t.Errorf("GetAtt with no hook: %v", err)
	}
}

func TestStaticString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"orders"`, "orders"},
		{`{"Fn::Join": [":", ["arn", {"Ref": "AWS::Partition"}, "sqs", {"Ref": "AWS::Region"}, {"Ref": "AWS::AccountId"}, "q"]]}`, "arn:aws:sqs:local:000000000000:q"},
		{`{"Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:q"}`, "arn:aws:sqs:local:000000000000:q"},
		{`{"Fn::Select": [5, {"Fn::Split": [":", "arn:aws:sqs:us-east-1:1:imported"]}]}`, "imported"},
		{`{"Ref": "Queue"}`, ""},
		{`{"Fn::Join": ["", ["a", {"Fn::GetAtt": ["Q", "Arn"]}]]}`, ""},
		{`{"Fn::ImportValue": "x"}`, ""},
		{`7`, ""},
	} {
		if got := StaticString(value(t, tc.in)); got != tc.want {
			t.Errorf("StaticString(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStaticWithParameters(t *testing.T) {
	known := func(name string) (any, bool) {
		v, ok := map[string]any{"Cron": "0 * * * ? *"}[name]
		return v, ok
	}
	cron := value(t, `{"Fn::Join": ["", ["cron(", {"Ref": "Cron"}, ")"]]}`)
	if got := Static(known).String(cron); got != "cron(0 * * * ? *)" {
		t.Errorf("a cron from a parameter with a value = %q", got)
	}
	if got := StaticString(cron); got != "" {
		t.Errorf("the same cron, no parameter known = %q, want \"\"", got)
	}
	if got := Static(known).String(value(t, `{"Fn::Join": ["", ["cron(", {"Ref": "Other"}, ")"]]}`)); got != "" {
		t.Errorf("a cron from a parameter without a value = %q, want \"\"", got)
	}
}

func TestNumbers(t *testing.T) {
	p := value(t, `{"Timeout": "30", "BatchSize": 10, "Bad": "ten"}`).(map[string]any)
	if got := Int(p, "Timeout", 3); got != 30 {
		t.Errorf("Int of a string number = %d, want 30", got)
	}
	if got := Int(p, "BatchSize", 1); got != 10 {
		t.Errorf("Int = %d, want 10", got)
	}
	if got := Int(p, "Missing", 3); got != 3 {
		t.Errorf("Int of a missing key = %d, want the default 3", got)
	}
	if got := Float(p["Bad"]); got != 0 {
		t.Errorf("Float(%q) = %v, want 0", p["Bad"], got)
	}
	for v, want := range map[any]string{true: "true", 1.5: "1.5", "s": "s"} {
		if got := Scalar(v); got != want {
			t.Errorf("Scalar(%v) = %q, want %q", v, got, want)
		}
	}
	if got := Scalar([]any{"a", 1.0}); got != `["a",1]` {
		t.Errorf("Scalar of a list = %s, want JSON", got)
	}
}
