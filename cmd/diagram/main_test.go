package main

import (
	"strings"
	"testing"
)

func TestRenderDrawsEveryRelationOfTheTemplate(t *testing.T) {
	tpl, err := readTemplate("testdata/Pipeline.template.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := render(&b, []namedTemplate{{Name: "Pipeline", Template: tpl}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## Pipeline",
		`Queue[["Standard/Queue<br/><small>AWS::SQS::Queue</small>"]]`,
		`Fn("Standard/Consumer/Function<br/><small>AWS::Lambda::Function</small>")`,
		"Queue -->|redrive| Dlq",
		"Queue -->|batch 10| Fn",
		"Fn -->|IDEMPOTENCY_TABLE_NAME| Table",
		"Sched -->|invoke| Fn",
		"Sched -->|failed delivery| Dlq",
		"Fn -->|async failure| Dlq",
		`alarms0["2 CloudWatch alarms"] -->|notify| Topic`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diagram lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Role") || strings.Contains(out, "Esm") {
		t.Errorf("IAM roles and mappings are edges or noise, not nodes:\n%s", out)
	}
}
