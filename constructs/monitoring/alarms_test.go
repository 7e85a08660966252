package monitoring

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// alarmInfo is what the runbook tests read of an alarm definition.
type alarmInfo struct {
	kind, id, field string
	severity        severity
	runbook         string
}

func infos[W any](kind string, defs []alarmDef[W]) []alarmInfo {
	out := make([]alarmInfo, len(defs))
	for i, d := range defs {
		out[i] = alarmInfo{kind: kind, id: d.id, field: cmpOr(d.field, d.id), severity: d.severity, runbook: d.runbook}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// catalog is every alarm of every watch, from the lists the Watch methods make them from.
func catalog() []alarmInfo {
	return slices.Concat(infos("queue", queueAlarms), infos("consumer", consumerAlarms), infos("dispatcher", dispatcherAlarms),
		infos("heartbeat", heartbeatAlarms), infos("table", tableAlarms))
}

// runbookSections maps each level-2 section's anchor to its first paragraph.
func runbookSections(t *testing.T) map[string]string {
	t.Helper()
	text, err := os.ReadFile(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(text), "\n## ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		para, _, _ := strings.Cut(strings.TrimSpace(body), "\n\n")
		sections[cdktest.GithubAnchor(heading)] = strings.ReplaceAll(para, "\n", " ")
	}
	return sections
}

// Each alarm in the lists has its runbook section, which opens with the alarm's severity,
// its id and the watch that makes it: "Severity: page. Alarm `Stalled` (consumer watch): ...".
func TestEveryAlarmDefinitionHasItsRunbookSection(t *testing.T) {
	sections := runbookSections(t)
	for _, a := range catalog() {
		para, ok := sections[a.runbook]
		switch {
		case !ok:
			t.Errorf("%s alarm %s: %s has no section #%s", a.kind, a.id, runbookPath, a.runbook)
		case !strings.HasPrefix(para, "Severity: "+a.severity.String()+". Alarm"):
			t.Errorf("%s alarm %s: section #%s should open with %q, it opens %.60q", a.kind, a.id, a.runbook, "Severity: "+a.severity.String()+". Alarm", para)
		case !strings.Contains(para, "`"+a.id+"`"):
			t.Errorf("%s alarm %s: section #%s's first paragraph does not name `%s`", a.kind, a.id, a.runbook, a.id)
		default:
			watches, _, _ := strings.Cut(para[strings.Index(para, "(")+1:], ")")
			if !strings.Contains(watches, a.kind) || !strings.Contains(watches, "watch") {
				t.Errorf("%s alarm %s: section #%s's first paragraph says (%s), want the %s watch named", a.kind, a.id, a.runbook, watches, a.kind)
			}
		}
	}
}

// The runbooks' severity table lists each alarm section under its alarms' severity.
func TestRunbookSeverityTableFollowsTheLists(t *testing.T) {
	text, err := os.ReadFile(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(#([a-z0-9-]+)\)`)
	for _, sev := range []severity{sevPage, sevTicket} {
		var want []string
		for _, a := range catalog() {
			if a.severity == sev && !slices.Contains(want, a.runbook) {
				want = append(want, a.runbook)
			}
		}
		row := regexp.MustCompile(`(?m)^\| ` + sev.String() + ` \| (.*) \|.*$`).FindStringSubmatch(string(text))
		if row == nil {
			t.Fatalf("%s: no severity row %q", runbookPath, sev)
		}
		var got []string
		for _, m := range link.FindAllStringSubmatch(row[1], -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the %s row links %v, want the sections of the %s alarms: %v", runbookPath, sev, got, sev, want)
		}
	}
}

// Each field of the Watch methods' Alarms structs is an alarm of its kind's list.
func TestAlarmsStructsFollowTheLists(t *testing.T) {
	all := catalog()
	for kind, typ := range map[string]reflect.Type{
		"queue": reflect.TypeFor[QueueAlarms](), "consumer": reflect.TypeFor[ConsumerAlarms](),
		"dispatcher": reflect.TypeFor[DispatcherAlarms](), "heartbeat": reflect.TypeFor[HeartbeatAlarms](),
		"table": reflect.TypeFor[TableAlarms](),
	} {
		for _, f := range reflect.VisibleFields(typ) {
			if !slices.ContainsFunc(all, func(a alarmInfo) bool { return a.kind == kind && a.field == f.Name }) {
				t.Errorf("%s.%s: no alarm of the %s list fills it", typ.Name(), f.Name, kind)
			}
		}
	}
}

// docs/design.md's table of alarms has a row for each alarm of the lists, under its watch,
// and none besides.
func TestDesignAlarmTableFollowsTheLists(t *testing.T) {
	const design = "../../docs/design.md"
	text, err := os.ReadFile(design)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (queue|consumer|dispatcher|table|heartbeat) \\| ((?:`\\w+`(?:, )?)+) \\|")
	id := regexp.MustCompile("`(\\w+)`")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(string(text), -1) {
		for _, i := range id.FindAllStringSubmatch(m[2], -1) {
			listed = append(listed, m[1]+" "+i[1])
		}
	}
	var want []string
	for _, a := range catalog() {
		want = append(want, a.kind+" "+a.id)
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("%s's alarm table lists (watch, alarm):\n%q\nwant the lists':\n%q", design, listed, want)
	}
}
