package schedule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/standin"
)

func TestScheduleExpressionNext(t *testing.T) {
	// Thursday 26 November 2026, 21:47:30 UTC.
	now := time.Date(2026, 11, 26, 21, 47, 30, 0, time.UTC)
	for _, c := range []struct {
		expr, zone string
		want       []string // the next firings, RFC 3339
	}{
		{"cron(0 * * * ? *)", "", []string{"2026-11-26T22:00:00Z", "2026-11-26T23:00:00Z", "2026-11-27T00:00:00Z"}},
		{"cron(0/15 * * * ? *)", "", []string{"2026-11-26T22:00:00Z", "2026-11-26T22:15:00Z"}},
		{"cron(*/20 9-17 ? * MON-FRI *)", "", []string{"2026-11-27T09:00:00Z", "2026-11-27T09:20:00Z", "2026-11-27T09:40:00Z", "2026-11-27T10:00:00Z"}},
		{"cron(30 2 1 * ? *)", "", []string{"2026-12-01T02:30:00Z", "2027-01-01T02:30:00Z"}},
		{"cron(0 12 L * ? *)", "", []string{"2026-11-30T12:00:00Z", "2026-12-31T12:00:00Z", "2027-01-31T12:00:00Z", "2027-02-28T12:00:00Z"}},
		{"cron(0 8 ? * 6L *)", "", []string{"2026-11-27T08:00:00Z", "2026-12-25T08:00:00Z"}},         // the last Friday
		{"cron(0 8 ? * 3#2 *)", "", []string{"2026-12-08T08:00:00Z", "2027-01-12T08:00:00Z"}},        // the second Tuesday
		{"cron(15 10 ? * SUN,7 2027)", "", []string{"2027-01-02T10:15:00Z", "2027-01-03T10:15:00Z"}}, // Saturdays and Sundays of 2027
		{"cron(0 9 * * ? *)", "Europe/Berlin", []string{"2026-11-27T08:00:00Z", "2026-11-28T08:00:00Z"}},
		{"cron(30 0 * * ? *)", "Pacific/Auckland", []string{"2026-11-27T11:30:00Z"}},                                                                                                           // 00:30 on the 28th there
		{"cron(0 12 15W * ? *)", "", []string{"2026-12-15T12:00:00Z", "2027-01-15T12:00:00Z", "2027-02-15T12:00:00Z", "2027-03-15T12:00:00Z", "2027-04-15T12:00:00Z", "2027-05-14T12:00:00Z"}}, // a Saturday 15th: Friday,
		// Daylight saving in New York: on 14 March 2027 02:30 does not exist (skipped: the next
		// is 14 March 2028, EDT by then); on 7 November 2027 01:30 occurs twice (fired once,
		// at the first instant, EDT; the next day's is EST).
		{"cron(30 2 14 3 ? 2027-2028)", "America/New_York", []string{"2028-03-14T06:30:00Z"}},
		{"cron(30 1 7,8 11 ? 2027)", "America/New_York", []string{"2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"}},
		{"rate(5 minutes)", "", []string{"2026-11-26T21:50:00Z", "2026-11-26T21:55:00Z"}},
		{"rate(1 day)", "", []string{"2026-11-27T21:45:00Z"}},
		{"at(2026-12-24T18:00:00)", "America/New_York", []string{"2026-12-24T23:00:00Z"}},
	} {
		e, err := Parse(c.expr, c.zone, time.Date(2026, 11, 26, 21, 45, 0, 0, time.UTC))
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		at := now
		for _, want := range c.want {
			next, ok := e.Next(at)
			if got := next.UTC().Format(time.RFC3339); !ok || got != want {
				t.Errorf("%s %s: Next(%s) = %s, %v; want %s", c.expr, c.zone, at.Format(time.RFC3339), got, ok, want)
				break
			}
			at = next
		}
	}
	past, err := Parse("at(2020-01-01T00:00:00)", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if next, ok := past.Next(now); ok {
		t.Errorf("an at() in the past fires at %v", next)
	}
	gone, err := Parse("cron(0 0 1 1 ? 2020-2025)", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if next, ok := gone.Next(now); ok {
		t.Errorf("a cron whose years are past fires at %v", next)
	}
}

func TestScheduleExpressionErrors(t *testing.T) {
	for _, c := range []struct{ expr, zone, want string }{
		{"cron(0 * * * *)", "", `schedule expression "cron(0 * * * *)": cron "0 * * * *": fields: 5 fields, want 6`},
		{"cron(0 * * * * *)", "", `day fields: exactly one of day-of-month "*" and day-of-week "*" must be "?"`},
		{"cron(60 * * * ? *)", "", `cron "60 * * * ? *": minutes:`},
		{"cron(0 0 ? * FRI-MON *)", "", `cron "0 0 ? * FRI-MON *": day-of-week:`},
		{"rate(0 minutes)", "", `the rate must be at least 1`},
		{"rate(5 seconds)", "", `want cron(...), rate(N minutes|hours|days) or at(yyyy-mm-ddThh:mm:ss)`},
		{"cron(0 * * * ? *)", "Mars/Olympus", `schedule time zone "Mars/Olympus"`},
	} {
		if _, err := Parse(c.expr, c.zone, time.Now()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: err = %v, want %q", c.expr, c.zone, err, c.want)
		}
	}
}

// A schedule whose expression or time zone is a CfnParameter cannot fire on its own here.
func TestScheduleParseDeployTime(t *testing.T) {
	doc := `{"Resources":{"F":{"Type":"AWS::Lambda::Function","Properties":{"Environment":{"Variables":{"QUEUE_URL":"q"}}}},
	  "S":{"Type":"AWS::Scheduler::Schedule","Properties":{"ScheduleExpression":{"Ref":"Cron"},
	  "ScheduleExpressionTimezone":"Europe/Paris","Target":{"Arn":{"Fn::GetAtt":["F","Arn"]},"Input":"{}"}}}}}`
	p := filepath.Join(t.TempDir(), "S.template.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := standin.LoadTemplate(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `schedule S: ScheduleExpression {"Ref":"Cron"} is a deploy-time value the kit cannot know: leave Options.Cron off (pipelinectl local up --cron=false) and fire it with Fire (--fire)`
	if _, err := Of(tmpl.Schedules[0], time.Now()); err == nil || err.Error() != want {
		t.Errorf("parse = %v, want %q", err, want)
	}

	// A parameter with a Default (or a value given) applies: the form CDK writes for a cron
	// of a CfnParameter (constructs/dispatcher's TestTokenProps holds it to CDK's output).
	withDefault := strings.Replace(strings.Replace(doc, `{"Ref":"Cron"}`, `{"Fn::Join":["",["cron(",{"Ref":"Cron"},")"]]}`, 1),
		`{"Resources":`, `{"Parameters":{"Cron":{"Type":"String","Default":"0 3 * * ? *"},"Zone":{"Type":"String"}},"Resources":`, 1)
	withDefault = strings.Replace(withDefault, `"Europe/Paris"`, `{"Ref":"Zone"}`, 1)
	if err := os.WriteFile(p, []byte(withDefault), 0o644); err != nil {
		t.Fatal(err)
	}
	if tmpl, err = standin.LoadTemplate(p); err != nil {
		t.Fatal(err)
	}
	want = `schedule S: ScheduleExpression {"Fn::Join":["",["cron(",{"Ref":"Cron"},")"]]} and ScheduleExpressionTimezone {"Ref":"Zone"} is a deploy-time value the kit cannot know: ` +
		`leave Options.Cron off (pipelinectl local up --cron=false) and fire it with Fire (--fire)`
	if _, err := Of(tmpl.Schedules[0], time.Now()); err == nil || err.Error() != want {
		t.Errorf("parse before the parameters have values = %v, want %q", err, want)
	}
	if err := tmpl.UseParameters(map[string]string{"Zone": "Europe/Paris"}); err != nil {
		t.Fatal(err)
	}
	if e, err := Of(tmpl.Schedules[0], time.Now()); err != nil || e.String() != "cron(0 3 * * ? *) Europe/Paris" {
		t.Errorf("parse with the Default and a value given = %v, %v; want cron(0 3 * * ? *) Europe/Paris", e, err)
	}

	s := standin.Schedule{LogicalID: "S", Expression: "cron(0 * * *)"}
	if _, err := Of(s, time.Now()); err == nil || !strings.Contains(err.Error(), `schedule S: schedule expression "cron(0 * * *)": cron "0 * * *": fields: 4 fields, want 6`) ||
		!strings.HasSuffix(err.Error(), "fire it with Fire (--fire)") {
		t.Errorf("parse of a bad cron = %v", err)
	}
}

func TestInput(t *testing.T) {
	s := standin.Schedule{LogicalID: "S", Input: `{"executionId":"<aws.scheduler.execution-id>","items":[{"id":"a"}],"job":"j","scheduledTime":"<aws.scheduler.scheduled-time>"}`}
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	in, err := Input(s, at, "e1", nil)
	if err != nil || string(in) != `{"executionId":"e1","items":[{"id":"a"}],"job":"j","scheduledTime":"2026-11-23T10:00:00Z"}` {
		t.Errorf("ScheduleInput = %s, %v", in, err)
	}
	in, err = Input(s, at, "e2", []map[string]any{{"id": "b"}})
	if err != nil || !strings.Contains(string(in), `"items":[{"id":"b"}]`) {
		t.Errorf("ScheduleInput with items = %s, %v", in, err)
	}
	if _, err := Input(standin.Schedule{LogicalID: "S", Input: `{"job":"j"}`}, at, "e", nil); err == nil || !strings.Contains(err.Error(), "wall clock") {
		t.Errorf("an input without the scheduled time: err = %v, want the wall-clock error", err)
	}
}
