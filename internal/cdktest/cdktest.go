// Package cdktest holds what the construct and stack tests share: an app that skips Lambda
// bundling and the synth-time template validator (both cost seconds and neither matters to
// an assertion on resource properties), and a helper that expects a validation panic.
package cdktest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/nagpacks"
)

// Env is the fixed account and region test stacks use, so templates are deterministic.
var Env = &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")}

// NewApp returns an app for assertion tests: no Lambda bundling (app context
// aws:cdk:bundling-stacks = []). The tests' kernels run without CDK's template validator:
// internal/jsiitest, which every test package that makes constructs imports, turns it off.
func NewApp() awscdk.App {
	return awscdk.NewApp(&awscdk.AppProps{
		Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}},
	})
}

// NewStack returns a stack in app with the fixed test environment.
func NewStack(app awscdk.App, id string) awscdk.Stack {
	return awscdk.NewStack(app, jsii.String(id), &awscdk.StackProps{Env: Env})
}

// ExpectProblem runs build, which must panic with a *validate.Error, and fails the test
// unless one of the collected problems contains every fragment in want.
func ExpectProblem(t *testing.T, build func(), want ...string) {
	t.Helper()
	expectProblem(t, "", build, want)
}

// ExpectProblemIn is ExpectProblem that also requires the error to name construct (kind and
// quoted path, e.g. `ProcessingQueue "Stack/Orders/Queue"`).
func ExpectProblemIn(t *testing.T, construct string, build func(), want ...string) {
	t.Helper()
	expectProblem(t, construct, build, want)
}

func expectProblem(t *testing.T, construct string, build func(), want []string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("expected a validation error containing %q, got none", want)
		}
		verr, ok := validate.AsError(r)
		if !ok {
			t.Fatalf("expected a *validate.Error, got panic %v", r)
		}
		if construct != "" && verr.Construct != construct {
			t.Fatalf("the error names %s, want %s:\n%s", verr.Construct, construct, verr.Error())
		}
		for _, p := range verr.Problems {
			if containsAll(p, want) {
				return
			}
		}
		t.Fatalf("no problem contains %q; got:\n%s", want, verr.Error())
	}()
	build()
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// AddNagPacks attaches every cdk-nag pack the CDK app runs (internal/nagpacks: AwsSolutions,
// Serverless, NIST 800-53 R5, PCI DSS 3.2.1, HIPAA Security), without reports. Call it before
// the app's first synth (Template_FromStack), or the aspects never run.
func AddNagPacks(app awscdk.App) { nagpacks.Add(app, false) }

// NagFindings returns "path: message" for every error and warning annotation on stack:
// with the packs attached, each is an unsuppressed cdk-nag finding (or another synth error).
func NagFindings(stack awscdk.Stack) []string {
	a := assertions.Annotations_FromStack(stack)
	found := append(*a.FindError(jsii.String("*"), assertions.Match_AnyValue()),
		*a.FindWarning(jsii.String("*"), assertions.Match_AnyValue())...)
	out := make([]string, 0, len(found))
	for _, m := range found {
		out = append(out, fmt.Sprintf("%s: %v", *m.Id, m.Entry.Data))
	}
	return out
}

// LogicalID is the template id of c's CloudFormation resource: c's default child, or, for an
// L2 wrapped in one of our constructs, that L2's default child. Tests resolve ids this way
// instead of hard-coding hashed ids.
func LogicalID(stack awscdk.Stack, c constructs.IConstruct) string {
	child := c.Node().DefaultChild()
	if el, ok := child.(awscdk.CfnElement); ok {
		return *stack.GetLogicalId(el)
	}
	return *stack.GetLogicalId(child.Node().DefaultChild().(awscdk.CfnElement))
}

// Must runs an assertion that panics on failure (Template.HasResourceProperties and friends)
// and turns the panic into a test failure, so one failed assertion does not end the binary.
func Must(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assertion()
}

// JSON renders v for failure messages.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CheckovSkips returns the checkov check ids recorded as skipped on the resource with logical
// id in tmpl (resource Metadata "checkov": {"skip": [{"id": ...}]}), in order.
func CheckovSkips(tmpl assertions.Template, logicalID string) []string {
	res, _ := (*tmpl.ToJSON())["Resources"].(map[string]any)[logicalID].(map[string]any)
	meta, _ := res["Metadata"].(map[string]any)
	ck, _ := meta["checkov"].(map[string]any)
	list, _ := ck["skip"].([]any)
	var ids []string
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			id, _ := m["id"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}
