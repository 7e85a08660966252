package alarm

import (
	"math"
	"strings"
	"testing"
	"time"
)

// These test the alarm evaluator on hand-made series, without backends: an evaluator that
// never fires, or fires on anything, would make every alarm verdict of the suite worthless.

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// perMinute adds one value per minute of the wall clock (scale 1), NaN skipping a minute.
func perMinute(s *Series, m MetricID, vals ...float64) {
	for i, v := range vals {
		if !math.IsNaN(v) {
			s.Add(m, t0.Add(time.Duration(i)*time.Minute+time.Second), v)
		}
	}
}

func simpleAlarm(stat string, threshold float64, m, n int, missing string, metric MetricID) Alarm {
	return Alarm{LogicalID: "A", Queries: []Query{{ID: "m1", Metric: metric, Period: time.Minute, Stat: stat, ReturnData: true}},
		Period: time.Minute, Threshold: threshold, Comparison: "GreaterThanOrEqualToThreshold",
		EvaluationPeriods: n, DatapointsToAlarm: m, TreatMissingData: missing}
}

// states renders an evaluation as the state after each period ("." = unchanged).
func states(t *testing.T, a Alarm, s *Series, periods int) string {
	t.Helper()
	ev, err := evaluate(a, s, Clock{Start: t0, Scale: 1}, t0.Add(time.Duration(periods)*a.Period))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, periods)
	for i := range out {
		out[i] = "."
	}
	for _, tr := range ev.Transitions {
		out[int(tr.At.Sub(t0)/a.Period)-1] = map[string]string{StateOK: "O", StateAlarm: "A", StateInsufficient: "I"}[tr.State]
	}
	return strings.Join(out, "")
}

var nan = math.NaN()

func TestEvaluateMOfN(t *testing.T) {
	m := NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q")
	for _, tc := range []struct {
		name string
		m, n int
		vals []float64
		want string
	}{
		{"1 of 1 fires on the first breach", 1, 1, []float64{0, 0, 3, 0}, "O.AO"},
		{"3 of 3 needs three in a row", 3, 3, []float64{5, 5, 0, 5, 5, 5, 0}, "O....AO"},
		{"2 of 3 fires on two within three", 2, 3, []float64{5, 0, 5, 0, 0}, "O.AO."},
		{"below the threshold never fires", 1, 1, []float64{0.5, 0.9, 0}, "O.."},
	} {
		s := NewSeries()
		perMinute(s, m, tc.vals...)
		a := simpleAlarm("Maximum", 1, tc.m, tc.n, "notBreaching", m)
		if got := states(t, a, s, len(tc.vals)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestEvaluateMissingData(t *testing.T) {
	m := NewMetricID("AWS/Lambda", "Errors", "FunctionName", "F")
	vals := []float64{nan, 2, nan, nan, nan}
	for _, tc := range []struct{ mode, want string }{
		{"notBreaching", "OA.O."}, // gaps are good
		{"breaching", "AAAAA"},    // gaps are bad: ALARM from the first period on
		{"missing", ".A.I."},      // starts INSUFFICIENT_DATA; back to it when the whole range is missing
		{"ignore", ".A..."},       // gaps keep the state
		{"", ".A.I."},             // CloudWatch's default is missing
	} {
		s := NewSeries()
		perMinute(s, m, vals...)
		a := simpleAlarm("Sum", 1, 1, 2, tc.mode, m)
		if tc.mode == "breaching" {
			a.EvaluationPeriods, a.DatapointsToAlarm = 1, 1
		}
		if got := states(t, a, s, len(vals)); got != strings.ReplaceAll(tc.want, "AAAAA", "A....") {
			t.Errorf("TreatMissingData %q: %s, want %s", tc.mode, got, tc.want)
		}
	}
}

func TestEvaluateDynamoDBIgnoresMissingData(t *testing.T) {
	// CloudWatch ignores missing data for AWS/DynamoDB metrics whatever the alarm says: after
	// a throttle, quiet periods keep the alarm in ALARM.
	m := NewMetricID("AWS/DynamoDB", "WriteThrottleEvents", "TableName", "T")
	s := NewSeries()
	perMinute(s, m, nan, 3, nan, nan)
	if got := states(t, simpleAlarm("Sum", 1, 1, 1, "notBreaching", m), s, 4); got != ".A.." {
		t.Errorf("DynamoDB alarm: %s, want .A.. (missing data ignored)", got)
	}
	other := NewMetricID("AWS/Lambda", "Errors", "FunctionName", "F")
	s2 := NewSeries()
	perMinute(s2, other, nan, 3, nan, nan)
	if got := states(t, simpleAlarm("Sum", 1, 1, 1, "notBreaching", other), s2, 4); got != "OAO." {
		t.Errorf("Lambda alarm: %s, want OAO.", got)
	}
}

func TestEvaluateStatistics(t *testing.T) {
	m := NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q")
	s := NewSeries()
	// Two samples per minute: the minimum of minute 2 dips below 1000.
	for i, v := range []float64{1200, 1500, 1100, 900, 1300, 1300} {
		s.Add(m, t0.Add(time.Duration(i)*30*time.Second+time.Second), v)
	}
	if got := states(t, simpleAlarm("Minimum", 1000, 1, 1, "notBreaching", m), s, 3); got != "AOA" {
		t.Errorf("Minimum: %s, want AOA", got)
	}
	if got := states(t, simpleAlarm("Maximum", 1000, 1, 1, "notBreaching", m), s, 3); got != "A.." {
		t.Errorf("Maximum: %s, want A..", got)
	}
	for stat, want := range map[string]float64{"Sum": 2700, "Average": 1350, "SampleCount": 2, "p50": 1200, "p99": 1500, "Minimum": 1200} {
		v, err := statistic(stat, []float64{1200, 1500})
		if err != nil || v != want {
			t.Errorf("%s = %v, %v; want %v", stat, v, err, want)
		}
	}
	if v, _ := statistic("Sum", nil); !math.IsNaN(v) {
		t.Errorf("Sum of nothing = %v, want missing", v)
	}
	if _, err := statistic("tm90", nil); err == nil || !strings.Contains(err.Error(), `statistic "tm90" is not evaluated`) {
		t.Errorf("unknown statistic: err = %v", err)
	}
}

// stalled is the stalled-consumer expression as the monitoring construct writes it.
func stalled(n int) Alarm {
	q := func(id, name, stat string) Query {
		return Query{ID: id, Metric: NewMetricID("AWS/SQS", name, "QueueName", "Q"), Period: time.Minute, Stat: stat}
	}
	return Alarm{LogicalID: "Stalled", Period: time.Minute, Threshold: 1, Comparison: "GreaterThanOrEqualToThreshold",
		EvaluationPeriods: n, DatapointsToAlarm: n, TreatMissingData: "notBreaching",
		Queries: []Query{
			{ID: "expr_1", Expression: "IF((FILL(visible, 0) + FILL(inflight, 0)) > 0 AND FILL(deleted, 0) == 0, 1, 0)", ReturnData: true},
			q("visible", "ApproximateNumberOfMessagesVisible", "Maximum"),
			q("inflight", "ApproximateNumberOfMessagesNotVisible", "Maximum"),
			q("deleted", "NumberOfMessagesDeleted", "Sum"),
		}}
}

func TestEvaluateStalledExpression(t *testing.T) {
	visible := NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q")
	inflight := NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", "Q")
	deleted := NewMetricID("AWS/SQS", "NumberOfMessagesDeleted", "QueueName", "Q")
	for _, tc := range []struct {
		name           string
		vis, infl, del []float64
		want           string
	}{
		{"messages wait, nothing deleted: fires after 3 periods", []float64{5, 5, 5, 5}, []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, "O.A."},
		{"in flight and failing counts too", []float64{0, 0, 0, 0}, []float64{3, 3, 3, 3}, []float64{0, 0, 0, 0}, "O.A."},
		{"a delete in the window keeps it quiet", []float64{5, 5, 5, 5}, []float64{0, 0, 0, 0}, []float64{0, 1, 0, 0}, "O..."},
		{"an empty queue is not stalled", []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}, "O..."},
		// FILL fills where another metric has data: no delete data at all is no delete.
		{"no delete data at all", []float64{5, 5, 5, 5}, []float64{0, 0, 0, 0}, []float64{nan, nan, nan, nan}, "O.A."},
		// No data from any metric: the expression has none, which notBreaching treats as good.
		{"no data at all", []float64{nan, nan, nan, nan}, []float64{nan, nan, nan, nan}, []float64{nan, nan, nan, nan}, "O..."},
	} {
		s := NewSeries()
		perMinute(s, visible, tc.vis...)
		perMinute(s, inflight, tc.infl...)
		perMinute(s, deleted, tc.del...)
		if got := states(t, stalled(3), s, 4); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestMathAndRuleParseErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"ANOMALY_DETECTION_BAND(m1)": "ANOMALY_DETECTION_BAND is not evaluated",
		"FILL(m1":                    `want ","`,
		"m1 ? 2":                     `unexpected '?'`,
	} {
		if _, err := parseMath(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseMath(%q): err = %v, want %q", expr, err, want)
		}
	}
	for rule, want := range map[string]string{
		`AT_LEAST(2, ALARM, (A, B))`: `rule function "AT_LEAST" is not evaluated`,
		`ALARM("A") OR`:              `rule function "" is not evaluated`,
	} {
		if _, err := parseRule(rule); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseRule(%q): err = %v, want %q", rule, err, want)
		}
	}
	env := map[string]float64{"a": 2, "b": nan}
	for expr, want := range map[string]float64{"a * 3 - 1": 5, "-a + 4 / 2": 0, "a >= 2 AND NOT (a == 3)": 1, "ABS(0 - a)": 2, "IF(a > 5, 1, 7)": 7} {
		n, err := parseMath(expr)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := n.eval(env); err != nil || v != want {
			t.Errorf("%s = %v, %v; want %v", expr, v, err, want)
		}
	}
	n, _ := parseMath("a + b")
	if v, _ := n.eval(env); !math.IsNaN(v) {
		t.Errorf("a + missing = %v, want missing", v)
	}
}

func TestClockScale(t *testing.T) {
	// One DLQ minute is 2 s of the run at the suite's scale, a 5-minute period 10 s.
	c := Clock{Start: t0, Scale: TimeScale}
	if got := c.Alarm(t0.Add(2 * time.Second)).Sub(t0); got != time.Minute {
		t.Errorf("2 s of the run = %v on the alarm clock, want 1m", got)
	}
	if got := c.Wall(t0.Add(5 * time.Minute)).Sub(t0); got != 10*time.Second {
		t.Errorf("5m on the alarm clock = %v of the run, want 10s", got)
	}
	m := NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q")
	s := NewSeries()
	s.Add(m, t0.Add(3*time.Second), 1) // in the second alarm minute
	ev, err := evaluate(simpleAlarm("Maximum", 1, 1, 1, "notBreaching", m), s, c, t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	at, ok := ev.FirstAlarm(t0)
	if !ok || at.Sub(t0) != 2*time.Minute || c.Wall(at).Sub(t0) != 4*time.Second {
		t.Errorf("first ALARM at %v (ok %v), want 2m on the alarm clock = 4s of the run", at.Sub(t0), ok)
	}
}

func TestRecordEMF(t *testing.T) {
	s := NewSeries()
	line := `{"Failed":0,"Processed":2,"Service":"consumer-fn-x1","_aws":{"Timestamp":1795428000000,"CloudWatchMetrics":[{"Namespace":"IdempotentSQS","Dimensions":[["Service"]],"Metrics":[{"Name":"Processed","Unit":"Count"},{"Name":"Failed","Unit":"Count"}]}]}}`
	if !RecordEMF(s, []byte(line), func(dim, v string) string { return strings.TrimSuffix(v, "-x1") }) {
		t.Fatal("an EMF line was not recognized")
	}
	processed := NewMetricID("IdempotentSQS", "Processed", "Service", "consumer-fn")
	got := s.snapshot(processed)
	if len(got) != 1 || got[0].v != 2 || !got[0].t.Equal(time.UnixMilli(1795428000000)) {
		t.Errorf("Processed = %v", got)
	}
	if !s.has(NewMetricID("IdempotentSQS", "Failed", "Service", "consumer-fn")) {
		t.Error("Failed (0) not recorded: a zero is data, not missing data")
	}
	for _, l := range []string{`{"message":"effect applied"}`, `not json`} {
		if RecordEMF(s, []byte(l), nil) {
			t.Errorf("%q taken for EMF", l)
		}
	}
}

func TestAgeTracker(t *testing.T) {
	a := NewAgeTracker()
	a.Sent("Q", "m1", t0)
	a.Sent("Q", "m2", t0.Add(time.Minute))
	if age, ok := a.Oldest("Q", t0.Add(2*time.Minute)); !ok || age != 2*time.Minute {
		t.Errorf("oldest = %v %v, want 2m", age, ok)
	}
	// Received three times: SQS moves it to the back and reports the next oldest.
	a.Received("Q", "m1", t0, 3)
	if age, _ := a.Oldest("Q", t0.Add(2*time.Minute)); age != time.Minute {
		t.Errorf("oldest after m1's third receive = %v, want 1m (m2)", age)
	}
	a.Deleted("Q", "m2")
	if _, ok := a.Oldest("Q", t0.Add(2*time.Minute)); ok {
		t.Error("an age with only a thrice-received message left")
	}
	a.Sent("Q", "m3", t0)
	a.Empty("Q")
	if _, ok := a.Oldest("Q", t0.Add(time.Hour)); ok {
		t.Error("an age for an empty queue")
	}
}

func TestEvaluateSumOfFilledMetrics(t *testing.T) {
	// The table's system-errors alarm sums FILL(e_Op, 0) over four operations; only
	// UpdateItem ever has data. The sum must still be a datapoint, and fire.
	a := Alarm{LogicalID: "SystemErrors", Period: time.Minute, Threshold: 1, Comparison: "GreaterThanOrEqualToThreshold",
		EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissingData: "notBreaching",
		Queries: []Query{{ID: "expr_1", Expression: "FILL(e_GetItem, 0) + FILL(e_UpdateItem, 0)", ReturnData: true}}}
	for _, op := range []string{"GetItem", "UpdateItem"} {
		a.Queries = append(a.Queries, Query{ID: "e_" + op, Period: time.Minute, Stat: "Sum",
			Metric: NewMetricID("AWS/DynamoDB", "SystemErrors", "TableName", "T", "Operation", op)})
	}
	s := NewSeries()
	perMinute(s, NewMetricID("AWS/DynamoDB", "SystemErrors", "TableName", "T", "Operation", "UpdateItem"), nan, 2, nan)
	// DynamoDB: missing data is ignored, so the alarm holds ALARM through the quiet minute.
	if got := states(t, a, s, 3); got != ".A." {
		t.Errorf("system errors: %s, want .A.", got)
	}
}
