// Package schedule stands in for EventBridge Scheduler in the local kit and the scenario
// tests: when a schedule of a template fires (Of, Expression.Next) and the event it hands its
// target (Input).
package schedule

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a schedule's time zone resolves on a machine without a zone database

	"github.com/idempotent-sqs/pipeline/internal/awscron"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// Expression is an EventBridge Scheduler ScheduleExpression with its time zone:
// cron(minutes hours day-of-month month day-of-week year), rate(N unit) or at(time). Next
// gives its firing times.
type Expression struct {
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

// Parse parses expr in the time zone zone ("" is UTC). A rate schedule
// counts from start, as Scheduler counts from the schedule's creation. A cron is evaluated
// by package awscron, which the dispatcher construct checks it with at synth: Scheduler's
// documented rules, a local time that a spring-forward change skips included.
func Parse(expr, zone string, start time.Time) (*Expression, error) {
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("schedule time zone %q: %w", zone, err)
		}
	}
	e := &Expression{expr: expr, loc: loc}
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

// Of is the expression of s, a schedule of a template, counting a rate from start; or an
// error saying why the kit cannot fire it on its own and what to do instead.
func Of(s standin.Schedule, start time.Time) (*Expression, error) {
	const instead = "leave Options.Cron off (pipelinectl local up --cron=false) and fire it with Fire (--fire)"
	if len(s.DeployTime) > 0 {
		return nil, fmt.Errorf("schedule %s: %s is a deploy-time value the kit cannot know: %s", s.LogicalID, strings.Join(s.DeployTime, " and "), instead)
	}
	e, err := Parse(s.Expression, s.Timezone, start)
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w; %s", s.LogicalID, err, instead)
	}
	return e, nil
}

// String is the expression and its time zone.
func (e *Expression) String() string { return e.expr + " " + e.loc.String() }

// Next is the first firing time after t, and false when there is none (an at() in the
// past, a cron whose dates have all gone by). A local time that occurs twice (a fall-back
// change) fires once, at its first instant: the kit's choice, since Scheduler documents
// only that it runs once.
func (e *Expression) Next(t time.Time) (time.Time, bool) {
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

// Input is the event EventBridge Scheduler hands the dispatcher for one firing: the
// schedule's target input from the template with Scheduler's context attributes filled in.
// A retried or duplicated firing carries the same scheduled time and a different execution
// id, which is what the dispatcher must derive its keys from. items, when not nil, replaces
// the template's work items (the scenarios need more than the two the stack ships with).
func Input(s standin.Schedule, scheduled time.Time, executionID string, items []map[string]any) ([]byte, error) {
	if !strings.Contains(s.Input, "<aws.scheduler.scheduled-time>") {
		return nil, fmt.Errorf("schedule %s: the input does not carry <aws.scheduler.scheduled-time>: the dispatcher would have to use the wall clock", s.LogicalID)
	}
	in := strings.NewReplacer(
		"<aws.scheduler.scheduled-time>", scheduled.UTC().Format(time.RFC3339),
		"<aws.scheduler.execution-id>", executionID,
	).Replace(s.Input)
	if items == nil {
		return []byte(in), nil
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(in), &ev); err != nil {
		return nil, fmt.Errorf("schedule %s input: %w", s.LogicalID, err)
	}
	if _, ok := ev["items"]; !ok {
		return nil, fmt.Errorf("schedule %s input has no items to replace", s.LogicalID)
	}
	ev["items"] = items
	return json.Marshal(ev)
}
