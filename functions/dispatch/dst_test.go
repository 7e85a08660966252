package dispatch

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// dstCase is one daily schedule whose two consecutive occurrences around a daylight-saving
// change are 23 hours apart and fall on the same UTC day: the pair a key derived from the UTC
// day (the old PERIOD=24h) merged, losing the second day's work.
type dstCase struct {
	zone        string
	first, next time.Time // local wall-clock times of the two occurrences
	wantUTC     [2]string // the scheduled times Scheduler sends for them
}

func dstCases(t *testing.T) []dstCase {
	t.Helper()
	at := func(zone string, y int, m time.Month, d, h, min int) time.Time {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(y, m, d, h, min, 0, 0, loc)
	}
	return []dstCase{
		// cron(30 1 * * ? *) Europe/Berlin: Sunday 2025-03-30 01:30 CET is before the 02:00
		// spring-forward, Monday 01:30 is CEST.
		{"Europe/Berlin", at("Europe/Berlin", 2025, 3, 30, 1, 30), at("Europe/Berlin", 2025, 3, 31, 1, 30),
			[2]string{"2025-03-30T00:30:00Z", "2025-03-30T23:30:00Z"}},
		// cron(30 19 * * ? *) America/New_York: Saturday 19:30 EST, then the change day
		// (Sunday 2025-03-09, 02:00 EST -> 03:00 EDT) at 19:30 EDT.
		{"America/New_York", at("America/New_York", 2025, 3, 8, 19, 30), at("America/New_York", 2025, 3, 9, 19, 30),
			[2]string{"2025-03-09T00:30:00Z", "2025-03-09T23:30:00Z"}},
		// cron(30 10 * * ? *) Australia/Sydney: Saturday 10:30 AEST, then the change day
		// (Sunday 2025-10-05, 02:00 AEST -> 03:00 AEDT) at 10:30 AEDT.
		{"Australia/Sydney", at("Australia/Sydney", 2025, 10, 4, 10, 30), at("Australia/Sydney", 2025, 10, 5, 10, 30),
			[2]string{"2025-10-04T00:30:00Z", "2025-10-04T23:30:00Z"}},
	}
}

// TestHandleDSTChangeDays: two daily occurrences 23 hours apart across a spring-forward change
// must send different keys (both days' work happens); the same occurrence delivered twice (a
// Scheduler double fire or retry, with its own execution id) must send identical messages.
func TestHandleDSTChangeDays(t *testing.T) {
	for _, c := range dstCases(t) {
		t.Run(c.zone, func(t *testing.T) {
			got := [2]string{c.first.UTC().Format(time.RFC3339), c.next.UTC().Format(time.RFC3339)}
			if got != c.wantUTC {
				t.Fatalf("fixture: occurrences in UTC are %v, want %v", got, c.wantUTC)
			}
			te := newTestEnv(t, testConfig(false), nil)
			items := []Item{{ID: "report"}, {ID: "cleanup"}}
			fire := func(scheduled, exec string) {
				t.Helper()
				if _, err := te.h.Handle(context.Background(), Event{ScheduledTime: scheduled, ExecutionID: exec, Job: "nightly", Items: items}); err != nil {
					t.Fatal(err)
				}
			}
			fire(c.wantUTC[0], "exec-1")
			fire(c.wantUTC[1], "exec-2")
			fire(c.wantUTC[0], "exec-1-again") // double fire of the first occurrence
			if len(te.sqs.calls) != 3 {
				t.Fatalf("%d SendMessageBatch calls, want 3", len(te.sqs.calls))
			}
			keys := func(call int) map[string]bool {
				out := map[string]bool{}
				for _, e := range te.sqs.calls[call].Entries {
					out[aws.ToString(e.MessageAttributes[attrKey].StringValue)] = true
				}
				return out
			}
			first, next := keys(0), keys(1)
			for k := range next {
				if first[k] {
					t.Errorf("occurrences %s and %s share key %q: the consumer would skip the second day's item as a duplicate",
						c.wantUTC[0], c.wantUTC[1], k)
				}
			}
			if !reflect.DeepEqual(te.sqs.calls[0], te.sqs.calls[2]) {
				a, _ := json.Marshal(te.sqs.calls[0].Entries)
				b, _ := json.Marshal(te.sqs.calls[2].Entries)
				t.Errorf("double fire of %s sent different messages:\n%s\n%s", c.wantUTC[0], a, b)
			}
		})
	}
}
