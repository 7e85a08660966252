package queue

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// The DLQ's redrive-allow policy names the source queue while the source's redrive policy
// names the DLQ. Wired with two references that is a dependency cycle CloudFormation rejects
// at deploy time. aws-cdk-lib 2.265's synth-time template validator does not catch it (it
// passed the naive wiring in testdata, and an explicit DependsOn cycle, when we tried), but
// the assertions library does: building a Template checks the Ref / Fn::GetAtt / DependsOn
// graph for cycles unless SkipCyclicalDependenciesCheck is set.

// cycleCheck loads tmpl with the cyclic-dependency check on and returns its complaint, if any.
func cycleCheck(tmpl map[string]any) (problem string) {
	defer func() {
		if r := recover(); r != nil {
			problem = fmt.Sprint(r)
		}
	}()
	assertions.Template_FromJSON(&tmpl, &assertions.TemplateParsingOptions{SkipCyclicalDependenciesCheck: jsii.Bool(false)})
	return ""
}

func TestNoDependencyCycle(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			if problem := cycleCheck(*f.tmpl.ToJSON()); problem != "" {
				t.Error(problem)
			}
		})
	}
}

// The check can fail: it rejects the naive wiring (the redrive-allow policy reading the
// source queue's Arn attribute), saved from a real synth.
func TestDependencyCycleCheckRejectsNaiveRedriveAllowPolicy(t *testing.T) {
	b, err := os.ReadFile("testdata/naive-redrive-allow.template.json")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	problem := cycleCheck(tmpl)
	for _, want := range []string{"dependency cycle", "DLQ581697C4", "SrcEFF73705"} {
		if !strings.Contains(problem, want) {
			t.Fatalf("want a dependency cycle through both queues, got %q", problem)
		}
	}
}
