// Package awscron evaluates AWS cron expressions (minutes hours day-of-month month
// day-of-week year, the form EventBridge Scheduler and constructs/dispatcher take) into the
// instants Scheduler invokes its target at. The dispatcher construct checks a cron with it at
// synth (a cron Scheduler would reject, or one that can never run, fails there instead of as a
// stack rollback), and the dispatcher's key tests generate occurrences with it.
//
// It understands the documented syntax:
//
//   - every field: single values, "*", lists "a,b", ranges "a-b" (ascending), steps "a/n",
//     "*/n" and "a-b/n" (not in day-of-week, where AWS documents no "/");
//   - month names JAN-DEC and day-of-week names SUN-SAT (1 = SUN ... 7 = SAT);
//   - day-of-month "?", "L" (last day), "LW" (last weekday), "nW" (the weekday nearest day n,
//     never crossing into another month; no occurrence in a month shorter than n days);
//   - day-of-week "?", "L" (Saturday, the week's last day), "nL" (the month's last weekday
//     n), "n#k" (the k-th weekday n of the month);
//   - exactly one of day-of-month and day-of-week "?" (Scheduler's rule).
//
// It rejects, rather than guesses at, what AWS does not document: wrap-around ranges
// ("FRI-MON", "22-2"), "L-n" offsets, L, W or # inside lists or ranges, "/" in day-of-week,
// and anything outside a field's range.
package awscron

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed AWS cron expression.
type Cron struct {
	expr            string
	minutes, hours  []int // ascending
	months          []bool
	years           []bool
	day             func(date time.Time) bool // date: a civil date, at midnight UTC
	hourlyOrCoarser bool                      // at most one run per hour
}

// Error says which field of a cron expression is wrong and why.
type Error struct {
	Expr  string
	Field string // minutes, hours, day-of-month, month, day-of-week, year, "day fields" or "fields"
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("cron %q: %s: %v", e.Expr, e.Field, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// HourlyOrCoarser reports a cron that runs at most once an hour (one minute value).
func (c *Cron) HourlyOrCoarser() bool { return c.hourlyOrCoarser }

// MinutesPerHour is how many minute values the cron names: its runs in an hour it runs in.
func (c *Cron) MinutesPerHour() int { return len(c.minutes) }

// String is the expression as parsed.
func (c *Cron) String() string { return c.expr }

// MaxYear is the last year an AWS cron's year field can name.
const MaxYear = 2199

// RunsOnOrAfter reports whether c has a date to run on from the civil date of from (in UTC)
// to the end of MaxYear: false for a cron that can never run again, such as "0 0 30 2 ? *"
// (February 30th) or a year range wholly in the past. It looks at dates, not times of day:
// a cron whose only times fall into a daylight-saving gap of its zone on every date it names
// is not caught (no such cron is useful).
func (c *Cron) RunsOnOrAfter(from time.Time) bool {
	date := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	end := time.Date(MaxYear+1, 1, 1, 0, 0, 0, 0, time.UTC)
	for ; date.Before(end); date = date.AddDate(0, 0, 1) {
		if y := date.Year(); !c.years[y] {
			date = time.Date(y, 12, 31, 0, 0, 0, 0, time.UTC) // skip the year
			continue
		}
		if !c.months[date.Month()] {
			date = time.Date(date.Year(), date.Month()+1, 0, 0, 0, 0, 0, time.UTC) // skip the month
			continue
		}
		if c.day(date) {
			return true
		}
	}
	return false
}

var (
	monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	weekdayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

	nearestWeekdayField = regexp.MustCompile(`^([0-9]{1,2})W$`)
	lastWeekdayField    = regexp.MustCompile(`^([1-7]|SUN|MON|TUE|WED|THU|FRI|SAT)L$`)
	nthWeekdayField     = regexp.MustCompile(`^([1-7]|SUN|MON|TUE|WED|THU|FRI|SAT)#([1-5])$`)
)

// Parse parses expr, or says which field it cannot evaluate (an *Error).
func Parse(expr string) (*Cron, error) {
	f := strings.Fields(expr)
	if len(f) != 6 {
		return nil, &Error{Expr: expr, Field: "fields", Err: fmt.Errorf("%d fields, want 6: minutes hours day-of-month month day-of-week year", len(f))}
	}
	c := &Cron{expr: expr}
	fail := func(field string, e error) (*Cron, error) {
		return nil, &Error{Expr: expr, Field: field, Err: e}
	}
	minutes, err := parseSet(f[0], 0, 59, nil, true)
	if err != nil {
		return fail("minutes", err)
	}
	hours, err := parseSet(f[1], 0, 23, nil, true)
	if err != nil {
		return fail("hours", err)
	}
	if c.months, err = parseSet(f[3], 1, 12, monthNames, true); err != nil {
		return fail("month", err)
	}
	if c.years, err = parseSet(f[5], 1970, MaxYear, nil, true); err != nil {
		return fail("year", err)
	}
	c.minutes, c.hours = members(minutes), members(hours)
	c.hourlyOrCoarser = len(c.minutes) == 1
	switch dom, dow := f[2], f[4]; {
	case (dom == "?") == (dow == "?"):
		return fail("day fields", fmt.Errorf("exactly one of day-of-month %q and day-of-week %q must be \"?\"", dom, dow))
	case dow == "?":
		if c.day, err = dayOfMonth(dom); err != nil {
			return fail("day-of-month", err)
		}
	default:
		if c.day, err = dayOfWeek(dow); err != nil {
			return fail("day-of-week", err)
		}
	}
	return c, nil
}

func members(set []bool) []int {
	var out []int
	for v, ok := range set {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// parseSet parses a list of values, ranges and steps into the set of values in [lo, hi]
// (indexed by value).
func parseSet(field string, lo, hi int, names map[string]int, steps bool) ([]bool, error) {
	value := func(s string) (int, error) {
		if v, ok := names[s]; ok {
			return v, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
		}
		return v, nil
	}
	set := make([]bool, hi+1)
	for _, part := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		if hasStep && !steps {
			return nil, fmt.Errorf("%q: no \"/\" in this field", part)
		}
		var from, to int
		var err error
		switch a, b, isRange := strings.Cut(rng, "-"); {
		case rng == "*":
			from, to = lo, hi
		case isRange:
			if from, err = value(a); err != nil {
				return nil, err
			}
			if to, err = value(b); err != nil {
				return nil, err
			}
			if from > to {
				return nil, fmt.Errorf("%q: wrap-around ranges are not supported", part)
			}
		default:
			if from, err = value(rng); err != nil {
				return nil, err
			}
			to = from
			if hasStep { // "a/n": from a to the end of the field
				to = hi
			}
		}
		inc := 1
		if hasStep {
			if inc, err = strconv.Atoi(stepText); err != nil || inc < 1 {
				return nil, fmt.Errorf("%q: step %q is not a positive integer", part, stepText)
			}
		}
		for v := from; v <= to; v += inc {
			set[v] = true
		}
	}
	return set, nil
}

func daysIn(date time.Time) int {
	return time.Date(date.Year(), date.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// weekdayNumber is AWS's day-of-week number: 1 = Sunday ... 7 = Saturday.
func weekdayNumber(date time.Time) int { return int(date.Weekday()) + 1 }

// nearestWeekday is the weekday closest to day n of date's month, within the month.
func nearestWeekday(date time.Time, n int) int {
	last := daysIn(date)
	switch time.Date(date.Year(), date.Month(), n, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3 // Monday the 3rd: Friday would be in the previous month
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2 // Friday: Monday would be in the next month
		}
		return n + 1
	}
	return n
}

func dayOfMonth(field string) (func(time.Time) bool, error) {
	switch {
	case field == "L":
		return func(d time.Time) bool { return d.Day() == daysIn(d) }, nil
	case field == "LW":
		return func(d time.Time) bool { return d.Day() == nearestWeekday(d, daysIn(d)) }, nil
	case nearestWeekdayField.MatchString(field):
		n, _ := strconv.Atoi(nearestWeekdayField.FindStringSubmatch(field)[1])
		if n < 1 || n > 31 {
			return nil, fmt.Errorf("%q: day %d is not from 1 to 31", field, n)
		}
		return func(d time.Time) bool { return n <= daysIn(d) && d.Day() == nearestWeekday(d, n) }, nil
	case strings.ContainsAny(field, "LW"):
		return nil, fmt.Errorf("%q: L and W only as \"L\", \"LW\" or \"nW\" on their own", field)
	}
	set, err := parseSet(field, 1, 31, nil, true)
	if err != nil {
		return nil, err
	}
	return func(d time.Time) bool { return set[d.Day()] }, nil
}

func dayOfWeek(field string) (func(time.Time) bool, error) {
	weekday := func(s string) int {
		if v, ok := weekdayNames[s]; ok {
			return v
		}
		v, _ := strconv.Atoi(s)
		return v
	}
	switch {
	case field == "L":
		return func(d time.Time) bool { return d.Weekday() == time.Saturday }, nil
	case lastWeekdayField.MatchString(field):
		w := weekday(lastWeekdayField.FindStringSubmatch(field)[1])
		return func(d time.Time) bool { return weekdayNumber(d) == w && d.Day()+7 > daysIn(d) }, nil
	case nthWeekdayField.MatchString(field):
		m := nthWeekdayField.FindStringSubmatch(field)
		w, k := weekday(m[1]), int(m[2][0]-'0')
		return func(d time.Time) bool { return weekdayNumber(d) == w && (d.Day()-1)/7+1 == k }, nil
	case strings.ContainsAny(field, "L#"):
		return nil, fmt.Errorf("%q: L and # only as \"L\", \"nL\" or \"n#k\" on their own", field)
	}
	set, err := parseSet(field, 1, 7, weekdayNames, false)
	if err != nil {
		return nil, err
	}
	return func(d time.Time) bool { return set[weekdayNumber(d)] }, nil
}

// Ambiguity picks which instant runs for a local time that occurs twice (a fall-back change).
// Scheduler documents only that such a time "runs only once"; tests try both choices.
type Ambiguity int

const (
	FirstInstant Ambiguity = iota
	SecondInstant
)

// Occurrences returns, in order, the instants at which Scheduler invokes the target for c in
// loc on the local dates [from, to) (civil dates at midnight UTC), by its documented
// daylight-saving rules: a local time that does not exist (spring forward) is skipped, and one
// that occurs twice (fall back) runs once, at the instant pick chooses.
func (c *Cron) Occurrences(loc *time.Location, from, to time.Time, pick Ambiguity) []time.Time {
	var out []time.Time
	for date := from; date.Before(to); date = date.AddDate(0, 0, 1) {
		if y := date.Year(); y >= len(c.years) || !c.years[y] || !c.months[date.Month()] || !c.day(date) {
			continue
		}
		for _, h := range c.hours {
			for _, m := range c.minutes {
				if at, ok := localInstant(date.Add(time.Duration(h)*time.Hour+time.Duration(m)*time.Minute), loc, pick); ok {
					out = append(out, at)
				}
			}
		}
	}
	return out
}

// localInstant resolves a local wall-clock reading (written as a UTC time) in loc: false
// when the reading does not exist there, else its instant (the one pick chooses when it
// exists twice). Every offset that can apply is the offset just before or just after a
// change within a day of the reading, so trying those three finds every instant.
func localInstant(wall time.Time, loc *time.Location, pick Ambiguity) (time.Time, bool) {
	var hits []time.Time
	for _, probe := range [...]time.Time{wall.Add(-26 * time.Hour), wall, wall.Add(26 * time.Hour)} {
		_, offset := probe.In(loc).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		local := at.In(loc)
		if local.Year() == wall.Year() && local.YearDay() == wall.YearDay() && local.Hour() == wall.Hour() &&
			local.Minute() == wall.Minute() && !slices.ContainsFunc(hits, at.Equal) {
			hits = append(hits, at)
		}
	}
	if len(hits) == 0 {
		return time.Time{}, false
	}
	slices.SortFunc(hits, time.Time.Compare)
	if pick == SecondInstant {
		return hits[len(hits)-1], true
	}
	return hits[0], true
}
