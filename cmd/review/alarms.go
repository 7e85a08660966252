package main

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// An alarm row says what one alarm (or composite alarm) evaluates, when it fires and whom
// it notifies.
type alarm struct {
	ID, Name  string
	Composite bool
	// Metric is the metric, metric math expression or alarm rule evaluated; a math
	// expression is followed by the metrics it reads, one a line.
	Metric []string
	// Condition is the comparison, threshold and the periods that must breach.
	Condition string
	Missing   string
	Actions   string
	// Targets are the logical ids (or ARNs) an alarm notifies, in any state.
	Targets []string
	// Severity is what its description says it is (page, ticket), "" when it says none.
	Severity string
	// Runbook is the runbooks.md anchor the description links to, "" if none.
	Runbook string
}

var runbookLink = regexp.MustCompile(`runbooks\.md#[A-Za-z0-9_.-]+`)

var comparisons = map[string]string{
	"GreaterThanOrEqualToThreshold":            ">=",
	"GreaterThanThreshold":                     ">",
	"LessThanThreshold":                        "<",
	"LessThanOrEqualToThreshold":               "<=",
	"LessThanLowerOrGreaterThanUpperThreshold": "outside the band",
	"GreaterThanUpperThreshold":                "above the band",
	"LessThanLowerThreshold":                   "below the band",
}

// alarms lists every CloudWatch alarm and composite alarm of s, in logical id order.
func alarms(s *stack) []alarm {
	var out []alarm
	for _, id := range s.IDs {
		r := s.Resources[id]
		p := r.Properties
		a := alarm{ID: id, Name: show(p["AlarmName"]), Actions: alarmActions(p)}
		if m := runbookLink.FindString(show(p["AlarmDescription"])); m != "" {
			a.Runbook = m
		}
		if m := severityOf.FindStringSubmatch(show(p["AlarmDescription"])); m != nil {
			a.Severity = m[1]
		}
		for _, prop := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
			for _, v := range list(p[prop]) {
				if t := refOrShow(v); !slices.Contains(a.Targets, t) {
					a.Targets = append(a.Targets, t)
				}
			}
		}
		switch r.Type {
		case "AWS::CloudWatch::Alarm":
			a.Metric = alarmMetric(p)
			op := comparisons[show(p["ComparisonOperator"])]
			if op == "" {
				op = show(p["ComparisonOperator"])
			}
			threshold := show(p["Threshold"])
			if t := show(p["ThresholdMetricId"]); t != "" {
				threshold = t
			}
			eval := show(p["EvaluationPeriods"])
			a.Condition = fmt.Sprintf("%s %s in %s of %s periods", op, threshold, orDefault(show(p["DatapointsToAlarm"]), eval), eval)
			a.Missing = orDefault(show(p["TreatMissingData"]), "missing (default)")
		case "AWS::CloudWatch::CompositeAlarm":
			a.Composite = true
			a.Metric = []string{show(p["AlarmRule"])}
			a.Condition = "the rule is true"
			if sup := p["ActionsSuppressor"]; sup != nil {
				a.Condition += "; actions suppressed while " + refOrShow(sup) + " is in ALARM"
			}
			a.Missing = "n/a"
		default:
			continue
		}
		out = append(out, a)
	}
	return out
}

// alarmMetric renders a single-metric alarm as "Statistic of Namespace Metric{dims} per
// period", and a metric math alarm as its returned expression followed by its inputs.
func alarmMetric(p map[string]any) []string {
	if p["Metrics"] == nil {
		stat := orDefault(show(p["Statistic"]), show(p["ExtendedStatistic"]))
		return []string{metricStat(stat, p["Namespace"], p["MetricName"], p["Dimensions"], p["Period"])}
	}
	var head, inputs []string
	for _, q := range list(p["Metrics"]) {
		id := show(cfn.Dig(q, "Id"))
		var line string
		if e := cfn.Dig(q, "Expression"); e != nil {
			line = id + " = " + show(e)
		} else {
			ms := cfn.Dig(q, "MetricStat")
			line = id + " = " + metricStat(show(cfn.Dig(ms, "Stat")), cfn.Dig(ms, "Metric", "Namespace"),
				cfn.Dig(ms, "Metric", "MetricName"), cfn.Dig(ms, "Metric", "Dimensions"), cfn.Dig(ms, "Period"))
		}
		if rd, set := cfn.Dig(q, "ReturnData").(bool); rd || !set && len(list(p["Metrics"])) == 1 {
			head = append(head, line)
		} else {
			inputs = append(inputs, line)
		}
	}
	sort.Strings(inputs)
	return append(head, inputs...)
}

func metricStat(stat string, namespace, name, dims, period any) string {
	var d []string
	for _, dim := range list(dims) {
		d = append(d, show(cfn.Dig(dim, "Name"))+"="+show(cfn.Dig(dim, "Value")))
	}
	sort.Strings(d)
	s := fmt.Sprintf("%s of %s %s", stat, show(namespace), show(name))
	if len(d) > 0 {
		s += "{" + strings.Join(d, ", ") + "}"
	}
	if sec, ok := period.(float64); ok {
		s += " per " + duration(sec)
	}
	return s
}

// alarmActions renders who an alarm notifies per state: ALARM: topic; OK: topic.
func alarmActions(p map[string]any) string {
	var out []string
	for _, k := range []struct{ state, prop string }{{"ALARM", "AlarmActions"}, {"OK", "OKActions"}, {"INSUFFICIENT_DATA", "InsufficientDataActions"}} {
		var targets []string
		for _, v := range list(p[k.prop]) {
			targets = append(targets, refOrShow(v))
		}
		if len(targets) > 0 {
			sort.Strings(targets)
			out = append(out, k.state+": "+strings.Join(targets, ", "))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	if p["ActionsEnabled"] == false {
		return "disabled (" + strings.Join(out, "; ") + ")"
	}
	return strings.Join(out, "; ")
}
