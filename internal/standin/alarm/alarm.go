// Package alarm is CloudWatch for the local kit: it reads an AWS::CloudWatch::Alarm or
// AWS::CloudWatch::CompositeAlarm as synthesized (Parse, ParseComposite) and evaluates it
// with CloudWatch's rules (period, statistic, threshold, M of N, missing data, metric math,
// alarm rules) over the metrics a run produced (Series; RecordEMF reads a function's
// embedded-metric log lines into one). Nothing here knows which alarms a stack has: a
// caller asks which alarms went to ALARM, and the verdict is the template's definitions
// applied to the run's data.
package alarm

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// TimeScale is how much faster the alarm clock runs than the wall clock: every alarm is
// evaluated with its synthesized period, statistic, threshold, M of N and missing-data
// treatment, but on a clock where one real second is TimeScale seconds, so a 5-minute
// period takes 10 s of the run and a 1-minute DLQ period 2 s. Ages the harness reads (the
// age of the oldest message) are read on the same clock. This is the only place time is
// compressed.
const TimeScale = 30

// Alarm states.
const (
	StateOK           = "OK"
	StateAlarm        = "ALARM"
	StateInsufficient = "INSUFFICIENT_DATA"
)

// MetricID names one CloudWatch metric: namespace, name and dimensions. A dimension value
// that refers to a resource of the template (Ref, Fn::GetAtt) is that resource's logical id,
// so the harness records what the run produced under the same names.
type MetricID struct {
	Namespace, Name string
	Dims            string // "Name=Value" pairs, sorted by name, comma-separated
}

// NewMetricID builds a MetricID from dimension pairs (name, value, name, value...).
func NewMetricID(namespace, name string, dims ...string) MetricID {
	var pairs []string
	for i := 0; i+1 < len(dims); i += 2 {
		pairs = append(pairs, dims[i]+"="+dims[i+1])
	}
	slices.Sort(pairs)
	return MetricID{Namespace: namespace, Name: name, Dims: strings.Join(pairs, ",")}
}

// Dim returns the value of one dimension, "" when the metric has none of that name.
func (m MetricID) Dim(name string) string {
	for _, p := range strings.Split(m.Dims, ",") {
		if k, v, ok := strings.Cut(p, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func (m MetricID) String() string { return m.Namespace + " " + m.Name + " {" + m.Dims + "}" }

// Query is one entry of an alarm's Metrics array, or the single metric of a plain
// alarm (Id "m1").
type Query struct {
	ID         string
	Expression string // metric math; empty for a metric
	Metric     MetricID
	Period     time.Duration
	Stat       string // Sum, Maximum, Minimum, Average, SampleCount, pNN
	ReturnData bool
}

// Alarm is an AWS::CloudWatch::Alarm as synthesized.
type Alarm struct {
	LogicalID, Name, Description string
	Queries                      []Query
	Period                       time.Duration // of the returned query
	Threshold                    float64
	Comparison                   string
	EvaluationPeriods            int
	DatapointsToAlarm            int
	TreatMissingData             string // as synthesized: breaching, notBreaching, ignore, missing
	Actions                      []string
}

// Metrics are every metric the alarm reads.
func (a Alarm) Metrics() []MetricID {
	var out []MetricID
	for _, q := range a.Queries {
		if q.Expression == "" {
			out = append(out, q.Metric)
		}
	}
	return out
}

// Reads reports whether the alarm reads the metric namespace/name with the dimension
// dim=value (dim "" matches any dimensions).
func (a Alarm) Reads(namespace, name, dim, value string) bool {
	for _, m := range a.Metrics() {
		if m.Namespace == namespace && m.Name == name && (dim == "" || m.Dim(dim) == value) {
			return true
		}
	}
	return false
}

// missingTreatment is how the alarm actually treats missing data: CloudWatch ignores
// missing data for every alarm on an AWS/DynamoDB metric, whatever the alarm says.
func (a Alarm) missingTreatment() string {
	for _, m := range a.Metrics() {
		if m.Namespace == "AWS/DynamoDB" {
			return "ignore"
		}
	}
	if a.TreatMissingData == "" {
		return "missing" // CloudWatch's default
	}
	return a.TreatMissingData
}

// Composite is an AWS::CloudWatch::CompositeAlarm; its rule names child alarms by
// logical id.
type Composite struct {
	LogicalID, Name, Description string
	Rule                         string
	Actions                      []string
	rule                         ruleNode
}

// Children are the alarms the rule names, as it names them (logical ids or alarm names), in
// the rule's order.
func (c Composite) Children() []string { return c.rule.children(nil) }

// Parse reads an AWS::CloudWatch::Alarm's properties. Anything the evaluator cannot
// apply faithfully (anomaly detection, an unknown statistic) is an error, never ignored.
func Parse(id string, p map[string]any) (Alarm, error) {
	a := Alarm{LogicalID: id, Threshold: cfn.Float(p["Threshold"]), Comparison: str(p["ComparisonOperator"]),
		EvaluationPeriods: int(cfn.Float(p["EvaluationPeriods"])), DatapointsToAlarm: int(cfn.Float(p["DatapointsToAlarm"])),
		TreatMissingData: str(p["TreatMissingData"]), Name: str(p["AlarmName"]),
		Description: cfn.JoinString(p["AlarmDescription"], func(ref any) string { return "<" + cfn.RefTarget(ref) + ">" })}
	if a.DatapointsToAlarm == 0 {
		a.DatapointsToAlarm = a.EvaluationPeriods
	}
	a.Actions = refs(p["AlarmActions"])
	fail := func(format string, args ...any) (Alarm, error) {
		return Alarm{}, fmt.Errorf("alarm %s: %s", id, fmt.Sprintf(format, args...))
	}
	if _, ok := comparisons[a.Comparison]; !ok {
		return fail("comparison %q is not evaluated by the local kit (package local) (anomaly detection needs a model)", a.Comparison)
	}
	if a.EvaluationPeriods < 1 || a.DatapointsToAlarm < 1 || a.DatapointsToAlarm > a.EvaluationPeriods {
		return fail("%d of %d datapoints: want 1 <= M <= N", a.DatapointsToAlarm, a.EvaluationPeriods)
	}
	if ms, ok := p["Metrics"].([]any); ok {
		for _, raw := range ms {
			m, _ := raw.(map[string]any)
			q := Query{ID: str(m["Id"]), Expression: str(m["Expression"]), ReturnData: true}
			if rd, ok := m["ReturnData"].(bool); ok {
				q.ReturnData = rd
			}
			if st, ok := m["MetricStat"].(map[string]any); ok {
				met, _ := st["Metric"].(map[string]any)
				q.Metric = metricID(str(met["Namespace"]), str(met["MetricName"]), met["Dimensions"])
				q.Period = time.Duration(cfn.Float(st["Period"])) * time.Second
				q.Stat = str(st["Stat"])
			} else if q.Expression == "" {
				return fail("metric %s has neither MetricStat nor Expression", q.ID)
			}
			if q.Expression != "" {
				q.Period = time.Duration(cfn.Float(m["Period"])) * time.Second
				if _, err := parseMath(q.Expression); err != nil {
					return fail("expression %s: %v", q.ID, err)
				}
			}
			a.Queries = append(a.Queries, q)
		}
	} else {
		stat := str(p["Statistic"])
		if stat == "" {
			stat = str(p["ExtendedStatistic"])
		}
		a.Queries = []Query{{ID: "m1", ReturnData: true, Stat: stat,
			Metric: metricID(str(p["Namespace"]), str(p["MetricName"]), p["Dimensions"]),
			Period: time.Duration(cfn.Float(p["Period"])) * time.Second}}
	}
	var returned []Query
	for _, q := range a.Queries {
		if q.Stat != "" {
			if _, err := statistic(q.Stat, nil); err != nil {
				return fail("metric %s: %v", q.ID, err)
			}
		}
		if q.ReturnData {
			returned = append(returned, q)
		}
	}
	if len(returned) != 1 {
		return fail("%d queries return data, want exactly 1", len(returned))
	}
	a.Period = returned[0].Period
	if a.Period <= 0 { // an expression's period is its metrics'
		for _, q := range a.Queries {
			a.Period = max(a.Period, q.Period)
		}
	}
	if a.Period <= 0 {
		return fail("no period")
	}
	return a, nil
}

// ParseComposite reads an AWS::CloudWatch::CompositeAlarm: its AlarmRule, a string or an
// Fn::Join, names children by ARN (Fn::GetAtt X.Arn) or name (Ref X); both become X.
func ParseComposite(id string, p map[string]any) (Composite, error) {
	c := Composite{LogicalID: id, Name: str(p["AlarmName"]), Description: str(p["AlarmDescription"]), Actions: refs(p["AlarmActions"])}
	rule, err := flatten(p["AlarmRule"])
	if err != nil {
		return c, fmt.Errorf("composite alarm %s: AlarmRule: %w", id, err)
	}
	c.Rule = rule
	if c.rule, err = parseRule(rule); err != nil {
		return c, fmt.Errorf("composite alarm %s: AlarmRule %q: %w", id, rule, err)
	}
	return c, nil
}

// flatten renders a CloudFormation string expression with every resource reference as the
// resource's logical id.
func flatten(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any:
		if id := cfn.RefTarget(x); id != "" {
			return id, nil
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := flatten(p)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot read %v", v)
}

func metricID(namespace, name string, dims any) MetricID {
	list, _ := dims.([]any)
	var kv []string
	for _, d := range list {
		m, _ := d.(map[string]any)
		v := cfn.RefTarget(m["Value"])
		if v == "" {
			v = cfn.StaticString(m["Value"]) // a name, or one of an imported queue's ARN (Fn::Select of Fn::Split)
		}
		kv = append(kv, str(m["Name"]), v)
	}
	return NewMetricID(namespace, name, kv...)
}

func refs(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if id := cfn.RefTarget(e); id != "" {
			out = append(out, id)
		} else {
			out = append(out, str(e))
		}
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

var comparisons = map[string]func(v, t float64) bool{
	"GreaterThanOrEqualToThreshold": func(v, t float64) bool { return v >= t },
	"GreaterThanThreshold":          func(v, t float64) bool { return v > t },
	"LessThanThreshold":             func(v, t float64) bool { return v < t },
	"LessThanOrEqualToThreshold":    func(v, t float64) bool { return v <= t },
}

// Series holds the raw data points a run produced, per metric, at wall-clock times: one
// point per event for counts (an invocation, an error, a throttle), one per sample for
// gauges (queue depth). Safe for concurrent use.
type Series struct {
	mu     sync.Mutex
	points map[MetricID][]point
}

type point struct {
	t time.Time
	v float64
}

// NewSeries returns an empty Series.
func NewSeries() *Series { return &Series{points: map[MetricID][]point{}} }

// Add records one data point.
func (s *Series) Add(m MetricID, t time.Time, v float64) {
	s.mu.Lock()
	s.points[m] = append(s.points[m], point{t, v})
	s.mu.Unlock()
}

// has reports whether the metric has any data point.
func (s *Series) has(m MetricID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.points[m]) > 0
}

func (s *Series) snapshot(m MetricID) []point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.points[m])
}

// Clock maps wall-clock times of a run to the alarm clock: Start is the same instant on
// both, and the alarm clock runs Scale times faster.
type Clock struct {
	Start time.Time
	Scale float64
}

// WallDuration is the wall-clock length of d on the alarm clock.
func (c Clock) WallDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Scale)
}

// Alarm returns the alarm-clock time of wall-clock time t.
func (c Clock) Alarm(t time.Time) time.Time {
	return c.Start.Add(time.Duration(float64(t.Sub(c.Start)) * c.Scale))
}

// Wall returns the wall-clock time of alarm-clock time a.
func (c Clock) Wall(a time.Time) time.Time {
	return c.Start.Add(time.Duration(float64(a.Sub(c.Start)) / c.Scale))
}

// statistic computes a CloudWatch statistic over a period's raw values; NaN when there are
// none (missing data).
func statistic(stat string, vs []float64) (float64, error) {
	if strings.HasPrefix(stat, "p") {
		pct, err := strconv.ParseFloat(stat[1:], 64)
		if err != nil || pct < 0 || pct > 100 {
			return 0, fmt.Errorf("statistic %q is not evaluated by the local kit (package local)", stat)
		}
		if len(vs) == 0 {
			return math.NaN(), nil
		}
		s := slices.Sorted(slices.Values(vs))
		i := int(math.Ceil(pct/100*float64(len(s)))) - 1 // nearest rank
		return s[max(i, 0)], nil
	}
	switch stat {
	case "Sum", "Maximum", "Minimum", "Average", "SampleCount":
	default:
		return 0, fmt.Errorf("statistic %q is not evaluated by the local kit (package local)", stat)
	}
	if len(vs) == 0 {
		return math.NaN(), nil
	}
	switch stat {
	case "Sum", "Average":
		sum := 0.0
		for _, v := range vs {
			sum += v
		}
		if stat == "Average" {
			return sum / float64(len(vs)), nil
		}
		return sum, nil
	case "Maximum":
		return slices.Max(vs), nil
	case "Minimum":
		return slices.Min(vs), nil
	}
	return float64(len(vs)), nil
}

// Transition is a change of an alarm's state at an evaluation, on the alarm clock.
type Transition struct {
	At    time.Time
	State string
	Value float64 // the newest datapoint (NaN: missing)
}

// Evaluation is an alarm's history over a run.
type Evaluation struct {
	LogicalID   string
	Composite   bool
	Transitions []Transition
	Values      []float64 // every period's datapoint, oldest first (NaN: missing)
}

// FirstAlarm is the alarm-clock time the alarm first went to ALARM at or after from, and
// whether it did.
func (e Evaluation) FirstAlarm(from time.Time) (time.Time, bool) {
	for _, t := range e.Transitions {
		if t.State == StateAlarm && !t.At.Before(from) {
			return t.At, true
		}
	}
	return time.Time{}, false
}

// AlarmedWithin reports whether the alarm was in ALARM at any evaluation in [from, to] (it
// may have entered ALARM before from and stayed).
func (e Evaluation) AlarmedWithin(from, to time.Time) bool {
	state := StateInsufficient
	for _, t := range e.Transitions {
		if t.At.After(to) {
			break
		}
		if !t.At.Before(from) && t.State == StateAlarm {
			return true
		}
		state = t.State
	}
	return state == StateAlarm && !from.After(to)
}

// StateAt is the alarm's state at alarm-clock time at.
func (e Evaluation) StateAt(at time.Time) string {
	state := StateInsufficient
	for _, t := range e.Transitions {
		if t.At.After(at) {
			break
		}
		state = t.State
	}
	return state
}

// evaluate runs the alarm over s from clock.Start to the wall-clock time end: it computes
// each period's datapoint (periods aligned at clock.Start, on the alarm clock), and at the
// end of every period applies CloudWatch's rule to the last EvaluationPeriods datapoints. An
// alarm starts in INSUFFICIENT_DATA.
func evaluate(a Alarm, s *Series, clock Clock, end time.Time) (Evaluation, error) {
	ev := Evaluation{LogicalID: a.LogicalID}
	periods := int(clock.Alarm(end).Sub(clock.Start) / a.Period) // complete periods only
	values, err := a.datapoints(s, clock, periods)
	if err != nil {
		return ev, err
	}
	ev.Values = values
	cmp := comparisons[a.Comparison]
	mode := a.missingTreatment()
	n, m := a.EvaluationPeriods, a.DatapointsToAlarm
	state := StateInsufficient
	for i := range values {
		breaching, good, missing := 0, 0, 0
		for j := i - n + 1; j <= i; j++ {
			switch v := math.NaN(); {
			case j >= 0 && !math.IsNaN(values[j]):
				v = values[j]
				if cmp(v, a.Threshold) {
					breaching++
				} else {
					good++
				}
			default: // missing, or before the run
				missing++
			}
		}
		switch mode {
		case "breaching":
			breaching += missing
		case "notBreaching":
			good += missing
		}
		next := state
		switch {
		case breaching >= m:
			next = StateAlarm
		case mode == "breaching" || mode == "notBreaching":
			next = StateOK
		case missing == n: // missing / ignore with no data at all
			if mode == "missing" {
				next = StateInsufficient
			}
		case good > n-m: // M breaching datapoints are no longer possible
			next = StateOK
		}
		if next != state {
			ev.Transitions = append(ev.Transitions, Transition{At: clock.Start.Add(time.Duration(i+1) * a.Period), State: next, Value: values[i]})
			state = next
		}
	}
	return ev, nil
}

// datapoints computes the returned query's value for each of the first n periods.
func (a Alarm) datapoints(s *Series, clock Clock, n int) ([]float64, error) {
	perQuery := map[string][]float64{}
	var ret Query
	for _, q := range a.Queries {
		if q.ReturnData {
			ret = q
		}
		if q.Expression != "" {
			continue
		}
		if q.Period != a.Period {
			return nil, fmt.Errorf("alarm %s: metric %s has period %v, the alarm %v: mixed periods are not evaluated", a.LogicalID, q.ID, q.Period, a.Period)
		}
		buckets := make([][]float64, n)
		for _, p := range s.snapshot(q.Metric) {
			i := int(clock.Alarm(p.t).Sub(clock.Start) / a.Period)
			if i >= 0 && i < n {
				buckets[i] = append(buckets[i], p.v)
			}
		}
		vals := make([]float64, n)
		for i, b := range buckets {
			v, err := statistic(q.Stat, b)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		perQuery[q.ID] = vals
	}
	if ret.Expression == "" {
		return perQuery[ret.ID], nil
	}
	expr, err := parseMath(ret.Expression)
	if err != nil {
		return nil, err
	}
	// The expression has a datapoint where any of its metrics has one; there FILL fills the
	// others' gaps. A period where none has data stays without data, as in CloudWatch.
	out := make([]float64, n)
	for i := range out {
		env := map[string]float64{}
		anyData := false
		for id, vals := range perQuery {
			env[id] = vals[i]
			anyData = anyData || !math.IsNaN(vals[i])
		}
		if !anyData {
			out[i] = math.NaN()
			continue
		}
		v, err := expr.eval(env)
		if err != nil {
			return nil, fmt.Errorf("alarm %s: %w", a.LogicalID, err)
		}
		out[i] = v
	}
	return out, nil
}

// EvaluateAll evaluates every alarm of a template, then every composite alarm at each time
// one of its children was evaluated. The result is keyed by logical id.
func EvaluateAll(alarms []Alarm, composites []Composite, s *Series, clock Clock, end time.Time) (map[string]Evaluation, error) {
	out := map[string]Evaluation{}
	for _, a := range alarms {
		ev, err := evaluate(a, s, clock, end)
		if err != nil {
			return nil, err
		}
		out[a.LogicalID] = ev
	}
	// A rule names a child by logical id (a template reference) or by its AlarmName.
	byName := map[string]string{}
	for _, a := range alarms {
		if a.Name != "" {
			byName[a.Name] = a.LogicalID
		}
	}
	for _, c := range composites {
		if c.Name != "" {
			byName[c.Name] = c.LogicalID
		}
	}
	resolve := func(id string) string {
		if l, ok := byName[id]; ok {
			return l
		}
		return id
	}
	// Composites may have composite children: evaluate in rounds until all are done.
	pending := slices.Clone(composites)
	for len(pending) > 0 {
		var next []Composite
		for _, c := range pending {
			children := c.rule.children(nil)
			ready := true
			var times []time.Time
			for _, ch := range children {
				ch = resolve(ch)
				ev, ok := out[ch]
				if !ok {
					if !slices.ContainsFunc(composites, func(o Composite) bool { return o.LogicalID == ch }) {
						return nil, fmt.Errorf("composite alarm %s: child %q is not an alarm of this template", c.LogicalID, ch)
					}
					ready = false
					break
				}
				for _, tr := range ev.Transitions {
					times = append(times, tr.At)
				}
			}
			if !ready {
				next = append(next, c)
				continue
			}
			sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
			ev := Evaluation{LogicalID: c.LogicalID, Composite: true}
			state := StateInsufficient
			for _, at := range times {
				st := StateOK
				if c.rule.eval(func(id string) string { return out[resolve(id)].StateAt(at) }) {
					st = StateAlarm
				}
				if st != state {
					ev.Transitions = append(ev.Transitions, Transition{At: at, State: st, Value: math.NaN()})
					state = st
				}
			}
			out[c.LogicalID] = ev
		}
		if len(next) == len(pending) {
			return nil, fmt.Errorf("composite alarms %v refer to each other in a cycle", next[0].LogicalID)
		}
		pending = next
	}
	return out, nil
}
