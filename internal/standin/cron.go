package standin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a schedule's time zone resolves on a machine without a zone database

	"github.com/idempotent-sqs/pipeline/internal/awscron"
)

// ScheduleExpression is an EventBridge Scheduler ScheduleExpression with its time zone:
// cron(minutes hours day-of-month month day-of-week year), rate(N unit) or at(time). Next
// gives its firing times.
type ScheduleExpression struct {
	expr  string
	loc   *time.Location
	rate  time.Duration // rate(...)
	start time.Time     // rate(...): the first firing is start+rate
	at    time.Time     // at(...)
	cron  *awscron.Cron // cron(...)
}

var (
	cronExpr     = regexp.MustCompile(`^cron\((.*)\)$`)
	rateSchedule = regexp.MustCompile(`^rate\(([0-9]+) (minute|minutes|hour|hours|day|days)\)$`)
	atExpr       = regexp.MustCompile(`^at\(([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\)$`)
)

// parseScheduleExpression parses expr in the time zone zone ("" is UTC). A rate schedule
// counts from start, as Scheduler counts from the schedule's creation. A cron is evaluated
// by package awscron, which the dispatcher construct checks it with at synth: Scheduler's
// documented rules, a local time that a spring-forward change skips included.
func parseScheduleExpression(expr, zone string, start time.Time) (*ScheduleExpression, error) {
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("schedule time zone %q: %w", zone, err)
		}
	}
	e := &ScheduleExpression{expr: expr, loc: loc}
	if m := rateSchedule.FindStringSubmatch(expr); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[m[2][0]]
		if n == 0 {
			return nil, fmt.Errorf("schedule expression %q: the rate must be at least 1", expr)
		}
		e.rate, e.start = time.Duration(n)*unit, start
		return e, nil
	}
	if m := atExpr.FindStringSubmatch(expr); m != nil {
		t, err := time.ParseInLocation("2006-01-02T15:04:05", m[1], loc)
		if err != nil {
			return nil, fmt.Errorf("schedule expression %q: %w", expr, err)
		}
		e.at = t
		return e, nil
	}
	m := cronExpr.FindStringSubmatch(expr)
	if m == nil {
		return nil, fmt.Errorf("schedule expression %q: want cron(...), rate(N minutes|hours|days) or at(yyyy-mm-ddThh:mm:ss)", expr)
	}
	var err error
	if e.cron, err = awscron.Parse(m[1]); err != nil {
		return nil, fmt.Errorf("schedule expression %q: %w", expr, err)
	}
	return e, nil
}

// Parse is the schedule's expression, or an error saying why the kit cannot fire it on
// its own and what to do instead.
func (s Schedule) Parse(start time.Time) (*ScheduleExpression, error) {
	const instead = "leave Options.Cron off (pipelinectl local up --cron=false) and fire it with Fire (--fire)"
	if len(s.DeployTime) > 0 {
		return nil, fmt.Errorf("schedule %s: %s is a deploy-time value the kit cannot know: %s", s.LogicalID, strings.Join(s.DeployTime, " and "), instead)
	}
	e, err := parseScheduleExpression(s.Expression, s.Timezone, start)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w; %s", s.LogicalID, err, instead)
	}
	return e, nil
}

// String is the expression and its time zone.
func (e *ScheduleExpression) String() string { return e.expr + " " + e.loc.String() }

// Next is the first firing time after t, and false when there is none (an at() in the
// past, a cron whose dates have all gone by). A local time that occurs twice (a fall-back
// change) fires once, at its first instant: the kit's choice, since Scheduler documents
// only that it runs once.
func (e *ScheduleExpression) Next(t time.Time) (time.Time, bool) {
	switch {
	case e.rate > 0:
		if t.Before(e.start) {
			return e.start.Add(e.rate), true
		}
		n := t.Sub(e.start)/e.rate + 1
		return e.start.Add(n * e.rate), true
	case e.cron == nil:
		return e.at, e.at.After(t)
	}
	if !e.cron.RunsOnOrAfter(t.AddDate(0, 0, -1)) {
		return time.Time{}, false
	}
	local := t.In(e.loc)
	from := time.Date(local.Year(), local.Month(), local.Day()-1, 0, 0, 0, 0, time.UTC) // a day early: zones ahead of UTC
	for from.Year() <= awscron.MaxYear {
		to := from.AddDate(0, 0, 32)
		for _, at := range e.cron.Occurrences(e.loc, from, to, awscron.FirstInstant) {
			if at.After(t) {
				return at, true
			}
		}
		from = to
	}
	return time.Time{}, false
}
