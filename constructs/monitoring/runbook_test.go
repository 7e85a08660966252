package monitoring

import (
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// runbookPath is docs/runbooks.md, seen from this package's directory.
const runbookPath = "../../docs/runbooks.md"

// runbookAnchors returns the anchors of the runbook's headings (levels 2 and 3, outside code
// blocks), failing the test on a heading whose anchor repeats (GitHub would suffix it "-1").
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	anchors, err := cdktest.MarkdownAnchors(runbookPath)
	if err != nil {
		t.Fatalf("the runbooks: %v", err)
	}
	return anchors
}

func TestGithubAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"DLQ not empty":                    "dlq-not-empty",
		"A key is stuck INPROGRESS":        "a-key-is-stuck-inprogress",
		"Schedule DLQ delivery failed":     "schedule-dlq-delivery-failed",
		"What `make test` runs":            "what-make-test-runs",
		"Lock duration and visibility (x)": "lock-duration-and-visibility-x",
	} {
		if got := cdktest.GithubAnchor(in); got != want {
			t.Errorf("GithubAnchor(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every alarm and composite alarm of every fixture template ends its description with a link
// to a section the runbooks have, under the fixture's RunbookURL.
func TestEveryAlarmHasARunbookSection(t *testing.T) {
	anchors := runbookAnchors(t)
	used := map[string]bool{}
	for _, f := range []pipelineFixture{def, custom, keyed} {
		wantURL := DefaultRunbookURL
		if f.stack == custom.stack {
			wantURL = customProps.RunbookURL
		}
		n := 0
		for _, typ := range []string{"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"} {
			for id, r := range *f.tmpl.FindResources(&typ, nil) {
				n++
				props, _ := (*r)["Properties"].(map[string]any)
				desc := flatten(props["AlarmDescription"])
				m := cdktest.RunbookLink.FindStringSubmatch(desc)
				switch {
				case m == nil:
					t.Errorf("%s %s: no runbook link at the end of its description: %q", *f.stack.StackName(), id, desc)
				case m[1] != wantURL:
					t.Errorf("%s %s: runbook URL %q, want %q", *f.stack.StackName(), id, m[1], wantURL)
				case !anchors[m[2]]:
					t.Errorf("%s %s: %s has no section #%s", *f.stack.StackName(), id, runbookPath, m[2])
				default:
					used[m[2]] = true
				}
			}
		}
		if n != len(f.mon.Alarms())+1 {
			t.Errorf("%s: checked %d alarms, want %d and the composite", *f.stack.StackName(), n, len(f.mon.Alarms()))
		}
	}
	t.Logf("%d runbook sections linked by alarms, %d headings", len(used), len(anchors))
}
