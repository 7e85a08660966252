package dispatch

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/internal/awscron"
)

func civilDate(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func mustLoad(t testing.TB, zone string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustCron(t testing.TB, expr string) *awscron.Cron {
	t.Helper()
	c, err := awscron.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func utcTexts(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, at := range ts {
		out[i] = at.UTC().Format(time.RFC3339)
	}
	return out
}

// The generator itself, against dates worked out by hand from the calendar and the zones'
// rules, so the property test below stands on known ground.
func TestAWSCronOccurrences(t *testing.T) {
	cases := []struct {
		name, cron, zone string
		from, to         time.Time
		pick             awscron.Ambiguity
		want             []string
	}{
		{"Berlin 02:30 skipped on the spring-forward day", "30 2 * * ? *", "Europe/Berlin", civilDate(2025, 3, 29), civilDate(2025, 4, 1), awscron.FirstInstant,
			[]string{"2025-03-29T01:30:00Z", "2025-03-31T00:30:00Z"}},
		{"Berlin 02:30 once on the fall-back day (first)", "30 2 * * ? *", "Europe/Berlin", civilDate(2025, 10, 25), civilDate(2025, 10, 28), awscron.FirstInstant,
			[]string{"2025-10-25T00:30:00Z", "2025-10-26T00:30:00Z", "2025-10-27T01:30:00Z"}},
		{"Berlin 02:30 once on the fall-back day (second)", "30 2 * * ? *", "Europe/Berlin", civilDate(2025, 10, 26), civilDate(2025, 10, 27), awscron.SecondInstant,
			[]string{"2025-10-26T01:30:00Z"}},
		{"Berlin 01:30 around spring forward (the regression pair)", "30 1 * * ? *", "Europe/Berlin", civilDate(2025, 3, 30), civilDate(2025, 4, 1), awscron.FirstInstant,
			[]string{"2025-03-30T00:30:00Z", "2025-03-30T23:30:00Z"}},
		{"New York hours 1-3 on the spring-forward day", "0 1-3 * * ? *", "America/New_York", civilDate(2025, 3, 9), civilDate(2025, 3, 10), awscron.FirstInstant,
			[]string{"2025-03-09T06:00:00Z", "2025-03-09T07:00:00Z"}}, // 02:00 does not exist
		{"New York hours 1-3 on the fall-back day", "0 1-3 * * ? *", "America/New_York", civilDate(2025, 11, 2), civilDate(2025, 11, 3), awscron.FirstInstant,
			[]string{"2025-11-02T05:00:00Z", "2025-11-02T07:00:00Z", "2025-11-02T08:00:00Z"}}, // 01:00 once
		{"Sydney 02:30 skipped in October", "30 2 * * ? *", "Australia/Sydney", civilDate(2025, 10, 4), civilDate(2025, 10, 6), awscron.FirstInstant,
			[]string{"2025-10-03T16:30:00Z"}},
		{"Lord Howe: half-hour shift, 02:00-02:29 do not exist", "0/15 2 * * ? *", "Australia/Lord_Howe", civilDate(2025, 10, 5), civilDate(2025, 10, 6), awscron.FirstInstant,
			[]string{"2025-10-04T15:30:00Z", "2025-10-04T15:45:00Z"}},
		{"Lord Howe: 01:45 twice, half an hour apart (second)", "45 1 * * ? *", "Australia/Lord_Howe", civilDate(2025, 4, 6), civilDate(2025, 4, 7), awscron.SecondInstant,
			[]string{"2025-04-05T15:15:00Z"}},
		{"Kolkata: 30-minute offset", "0 0 1 * ? *", "Asia/Kolkata", civilDate(2025, 1, 1), civilDate(2025, 3, 1), awscron.FirstInstant,
			[]string{"2024-12-31T18:30:00Z", "2025-01-31T18:30:00Z"}},
		{"last day of the month", "0 3 L * ? *", "UTC", civilDate(2025, 1, 1), civilDate(2025, 4, 1), awscron.FirstInstant,
			[]string{"2025-01-31T03:00:00Z", "2025-02-28T03:00:00Z", "2025-03-31T03:00:00Z"}},
		{"last weekday of the month", "45 23 LW * ? *", "UTC", civilDate(2025, 8, 1), civilDate(2025, 9, 1), awscron.FirstInstant,
			[]string{"2025-08-29T23:45:00Z"}}, // the 31st is a Sunday
		{"nearest weekday, not crossing the month", "0 8 1W * ? *", "UTC", civilDate(2025, 2, 1), civilDate(2025, 3, 1), awscron.FirstInstant,
			[]string{"2025-02-03T08:00:00Z"}}, // the 1st is a Saturday: Monday the 3rd
		{"nearest weekday of a Saturday and a Sunday", "0 8 15W * ? *", "UTC", civilDate(2025, 3, 1), civilDate(2025, 7, 1), awscron.FirstInstant,
			[]string{"2025-03-14T08:00:00Z", "2025-04-15T08:00:00Z", "2025-05-15T08:00:00Z", "2025-06-16T08:00:00Z"}},
		{"last Friday", "0 9 ? * 6L *", "UTC", civilDate(2025, 1, 1), civilDate(2025, 3, 1), awscron.FirstInstant,
			[]string{"2025-01-31T09:00:00Z", "2025-02-28T09:00:00Z"}},
		{"second Tuesday", "0 9 ? * TUE#2 *", "UTC", civilDate(2025, 1, 1), civilDate(2025, 3, 1), awscron.FirstInstant,
			[]string{"2025-01-14T09:00:00Z", "2025-02-11T09:00:00Z"}},
		{"L in day-of-week is Saturday", "0 9 ? * L *", "UTC", civilDate(2025, 3, 1), civilDate(2025, 3, 9), awscron.FirstInstant,
			[]string{"2025-03-01T09:00:00Z", "2025-03-08T09:00:00Z"}},
		{"weekdays by name", "0 2 ? * MON-FRI *", "UTC", civilDate(2025, 3, 7), civilDate(2025, 3, 11), awscron.FirstInstant,
			[]string{"2025-03-07T02:00:00Z", "2025-03-10T02:00:00Z"}},
		{"steps and lists", "5/20,59 10-12/2 ? * 2 *", "UTC", civilDate(2025, 3, 3), civilDate(2025, 3, 4), awscron.FirstInstant,
			[]string{"2025-03-03T10:05:00Z", "2025-03-03T10:25:00Z", "2025-03-03T10:45:00Z", "2025-03-03T10:59:00Z",
				"2025-03-03T12:05:00Z", "2025-03-03T12:25:00Z", "2025-03-03T12:45:00Z", "2025-03-03T12:59:00Z"}},
		{"months and years", "0 12 1 JAN,7 ? 2026-2199", "UTC", civilDate(2025, 1, 1), civilDate(2027, 1, 1), awscron.FirstInstant,
			[]string{"2026-01-01T12:00:00Z", "2026-07-01T12:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := utcTexts(mustCron(t, c.cron).Occurrences(mustLoad(t, c.zone), c.from, c.to, c.pick))
			if !slices.Equal(got, c.want) {
				t.Errorf("cron(%s) %s:\n got %v\nwant %v", c.cron, c.zone, got, c.want)
			}
		})
	}

	// Whole years: every local hour, less the one that does not exist; the repeated one once.
	counts := []struct {
		cron, zone string
		want       int
	}{
		{"0 * * * ? *", "UTC", 8760},
		{"0 * * * ? *", "Asia/Kolkata", 8760},
		{"0 * * * ? *", "Europe/Berlin", 8759},
		{"0/30 * * * ? *", "Australia/Lord_Howe", 17519}, // 02:00 skipped in October, 01:30 once in April
	}
	for _, c := range counts {
		if got := len(mustCron(t, c.cron).Occurrences(mustLoad(t, c.zone), civilDate(2025, 1, 1), civilDate(2026, 1, 1), awscron.FirstInstant)); got != c.want {
			t.Errorf("cron(%s) %s in 2025: %d occurrences, want %d", c.cron, c.zone, got, c.want)
		}
	}
}

// propertyZones cover both hemispheres, whole-hour and half-hour offsets and shifts, and zones
// without daylight-saving time.
var propertyZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe"}

// propertyCrons: hourly or coarser ones are evaluated over two whole years, finer ones over
// the weeks around every daylight-saving change (where runs are skipped or merged), and the
// every-minute one over the change days and the days either side, to keep the test fast.
var propertyCrons = []string{
	"0 * * * ? *", "30 * * * ? *", "0 0/6 * * ? *", "0 1-3 * * ? *",
	"30 1 * * ? *", "30 2 * * ? *", "0 0 * * ? *", "30 19 * * ? *", "30 10 * * ? *",
	"0 2 ? * MON-FRI *", "15 10 ? * 2 *", "0 3 L * ? *", "45 23 LW * ? *", "0 8 15W * ? *",
	"0 9 ? * 6L *", "0 9 ? * 3#2 *", "0 12 1 1,4,7,10 ? 2025-2026",
	"0/15 * * * ? *", "* * * * ? *", "*/30 * * * ? *", "5/10 1-3 ? * SUN *",
}

var propertyFrom, propertyTo = civilDate(2025, 1, 1), civilDate(2027, 1, 1)

// dstWindows are the local dates from before to after every offset change of loc in the
// property's range (before days earlier, after days later); a zone without changes gets the
// days around Europe's 2025 changes, as a control.
func dstWindows(loc *time.Location, before, after int) [][2]time.Time {
	var windows [][2]time.Time
	for at := propertyFrom; ; {
		_, end := at.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(propertyTo) {
			break
		}
		local := end.In(loc)
		day := civilDate(local.Year(), local.Month(), local.Day())
		windows = append(windows, [2]time.Time{day.AddDate(0, 0, -before), day.AddDate(0, 0, after+1)})
		at = end
	}
	if len(windows) == 0 {
		for _, day := range []time.Time{civilDate(2025, 3, 30), civilDate(2025, 10, 26)} {
			windows = append(windows, [2]time.Time{day.AddDate(0, 0, -before), day.AddDate(0, 0, after+1)})
		}
	}
	return windows
}

// keyFunc derives the idempotency key of one item from the scheduled time Scheduler sends.
type keyFunc func(scheduled string) (string, error)

// handlerKey is the Handler's own derivation: the event's validation and occurrence (run)
// and the message built for an item (messages), as Handle runs them.
func handlerKey(h *Handler) keyFunc {
	items := []Item{{ID: "item"}}
	return func(scheduled string) (string, error) {
		run, err := h.run(Event{ScheduledTime: scheduled})
		if err != nil {
			return "", err
		}
		msgs, err := h.messages(items, run.occurrenceText())
		if err != nil {
			return "", err
		}
		return msgs[0].key, nil
	}
}

// checkOccurrenceKeys reports distinct occurrences that share a key, a repeat of an
// occurrence (the same instant, rendered at loc's offset instead of UTC) whose key differs,
// and occurrences that break the premise of the minute key: whole minutes, in order, at
// least a minute apart.
func checkOccurrenceKeys(occs []time.Time, loc *time.Location, key keyFunc) []string {
	var problems []string
	owner := make(map[string]time.Time, len(occs))
	for i, at := range occs {
		if !at.Truncate(time.Minute).Equal(at) || (i > 0 && at.Sub(occs[i-1]) < time.Minute) {
			problems = append(problems, fmt.Sprintf("premise: occurrence %s is not a whole minute at least 1m after %s", at, occs[max(i-1, 0)]))
		}
		k, err := key(at.UTC().Format(time.RFC3339))
		if err != nil {
			return append(problems, err.Error())
		}
		if prev, dup := owner[k]; dup {
			problems = append(problems, fmt.Sprintf("occurrences %s and %s share key %q", prev.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339), k))
		}
		owner[k] = at
		again := at.In(loc).Format(time.RFC3339)
		if again == at.UTC().Format(time.RFC3339) {
			continue // UTC: the repeat would be the same text
		}
		if k2, err := key(again); err != nil || k2 != k {
			problems = append(problems, fmt.Sprintf("repeat of %s as %q: key %q (%v), want %q", at.UTC().Format(time.RFC3339), again, k2, err, k))
		}
	}
	return problems
}

// TestOccurrenceKeysProperty: for every cron x zone x occurrence over two years (or the days
// around daylight-saving changes, for sub-hourly crons), the Handler's keys are distinct for
// distinct occurrences and equal for a repeat of one. Scheduler does not document which
// instant runs for a local time that occurs twice; the first is checked everywhere, the
// second over the weeks around the changes (the only place the choice differs).
func TestOccurrenceKeysProperty(t *testing.T) {
	h := NewHandler(testConfig(false), &fakeSQS{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	key := handlerKey(h)
	start := time.Now()
	checked, pairs := 0, 0
	for _, zone := range propertyZones {
		loc := mustLoad(t, zone)
		weeks, days := dstWindows(loc, 3, 3), dstWindows(loc, 1, 1)
		for _, expr := range propertyCrons {
			c := mustCron(t, expr)
			pairs++
			n := 0
			for _, pick := range []awscron.Ambiguity{awscron.FirstInstant, awscron.SecondInstant} {
				ranges := [][2]time.Time{{propertyFrom, propertyTo}}
				switch {
				case c.MinutesPerHour() > 4: // every few minutes: the change days only
					ranges = days
				case !c.HourlyOrCoarser() || pick == awscron.SecondInstant:
					ranges = weeks
				}
				for _, r := range ranges {
					occs := c.Occurrences(loc, r[0], r[1], pick)
					n += len(occs)
					if problems := checkOccurrenceKeys(occs, loc, key); len(problems) > 0 {
						t.Errorf("cron(%s) %s: %d problems, first: %s", expr, zone, len(problems), strings.Join(problems[:min(3, len(problems))], "; "))
					}
				}
			}
			if n == 0 {
				t.Errorf("cron(%s) %s: no occurrences; the property would hold vacuously", expr, zone)
			}
			checked += n
		}
	}
	t.Logf("%d crons x %d zones (%d pairs), both choices for repeated local times: %d occurrences checked in %v",
		len(propertyCrons), len(propertyZones), pairs, checked, time.Since(start).Round(time.Millisecond))
}

// The property check can fail: the derivation the dispatcher had with PERIOD=24h (the UTC day)
// gives two runs of a daily cron one key around spring-forward changes, and the check finds
// exactly those, in each hemisphere.
func TestOccurrenceKeysPropertyCatchesDayPeriod(t *testing.T) {
	dayKey := func(scheduled string) (string, error) {
		at, err := time.Parse(time.RFC3339, scheduled)
		return msgkey.DispatchKey("nightly", at.Truncate(24*time.Hour).UTC().Format(time.RFC3339), "item"), err
	}
	cases := []struct {
		cron, zone string
		want       []string
	}{
		{"30 1 * * ? *", "Europe/Berlin", []string{"2025-03-30T00:30:00Z and 2025-03-30T23:30:00Z", "2026-03-29T00:30:00Z and 2026-03-29T23:30:00Z"}},
		{"30 19 * * ? *", "America/New_York", []string{"2025-03-09T00:30:00Z and 2025-03-09T23:30:00Z", "2026-03-08T00:30:00Z and 2026-03-08T23:30:00Z"}},
		{"30 10 * * ? *", "Australia/Sydney", []string{"2025-10-04T00:30:00Z and 2025-10-04T23:30:00Z", "2026-10-03T00:30:00Z and 2026-10-03T23:30:00Z"}},
	}
	for _, c := range cases {
		loc := mustLoad(t, c.zone)
		problems := checkOccurrenceKeys(mustCron(t, c.cron).Occurrences(loc, propertyFrom, propertyTo, awscron.FirstInstant), loc, dayKey)
		if len(problems) != len(c.want) {
			t.Errorf("cron(%s) %s with day keys: %d problems %v, want %d", c.cron, c.zone, len(problems), problems, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(problems[i], w) {
				t.Errorf("cron(%s) %s: problem %q, want the pair %s", c.cron, c.zone, problems[i], w)
			}
		}
	}
}
