package health

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// Alarm is one alarm as CloudWatch's DescribeAlarms reports it.
type Alarm struct {
	Name        string `json:"name"`
	State       string `json:"state"`
	Reason      string `json:"reason"`
	Description string `json:"-"`
	Metric      string `json:"metric,omitempty"` // "" for a metric-math alarm
}

// label is the pipeline an alarm of constructs/monitoring watches: its description starts
// with "[Label] ".
func (a Alarm) label() string {
	if m := labelPrefix.FindStringSubmatch(a.Description); m != nil {
		return m[1]
	}
	return ""
}

var labelPrefix = regexp.MustCompile(`^\[([A-Za-z0-9_-]{1,64})\] `)

// runbook is the runbook link an alarm's description ends with, or "".
func (a Alarm) runbook() string {
	if i := strings.LastIndex(a.Description, "Runbook: "); i >= 0 {
		return strings.TrimSpace(a.Description[i+len("Runbook: "):])
	}
	return ""
}

// childAlarms returns the alarms the composite alarm name covers, with their states, reasons,
// descriptions and metrics. CloudWatch's DescribeAlarms with ChildrenOfAlarmName answers only
// each child's name, ARN and state, so a second DescribeAlarms by AlarmNames (100 a call)
// reads the rest. Both are CloudWatch's query API, which every Region serves.
func childAlarms(ctx context.Context, rc *cli.RESTClient, names ...string) ([]Alarm, error) {
	var children []Alarm
	seen := map[string]bool{}
	for _, name := range names {
		got, err := describeAlarms(ctx, rc, url.Values{"ChildrenOfAlarmName": {name}})
		if err != nil {
			return nil, err
		}
		for _, a := range got {
			if !seen[a.Name] { // an alarm two composites share is read once
				seen[a.Name] = true
				children = append(children, a)
			}
		}
	}
	var out []Alarm
	for i := 0; i < len(children); i += 100 {
		form := url.Values{"AlarmTypes.member.1": {"MetricAlarm"}, "AlarmTypes.member.2": {"CompositeAlarm"}}
		for j, a := range children[i:min(i+100, len(children))] {
			form.Set(fmt.Sprintf("AlarmNames.member.%d", j+1), a.Name)
		}
		got, err := describeAlarms(ctx, rc, form)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// describeAlarms makes one DescribeAlarms query with the given parameters, every page.
func describeAlarms(ctx context.Context, rc *cli.RESTClient, params url.Values) ([]Alarm, error) {
	var out []Alarm
	token := ""
	for {
		form := url.Values{"Action": {"DescribeAlarms"}, "Version": {"2010-08-01"}}
		for k, v := range params {
			form[k] = v
		}
		if token != "" {
			form.Set("NextToken", token)
		}
		_, body, err := rc.Call(ctx, "monitoring", "DescribeAlarms", http.MethodPost, "/",
			http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, []byte(form.Encode()))
		if err != nil {
			return nil, err
		}
		type alarm struct {
			AlarmName, StateValue, StateReason, AlarmDescription, MetricName string
		}
		var resp struct {
			Result struct {
				Metric    []alarm `xml:"MetricAlarms>member"`
				Composite []alarm `xml:"CompositeAlarms>member"`
				NextToken string
			} `xml:"DescribeAlarmsResult"`
		}
		if err := xml.Unmarshal(body, &resp); err != nil {
			return nil, fmt.Errorf("CloudWatch DescribeAlarms: an answer that is not its XML: %w", err)
		}
		for _, a := range append(resp.Result.Metric, resp.Result.Composite...) {
			out = append(out, Alarm{Name: a.AlarmName, State: a.StateValue, Reason: a.StateReason, Description: a.AlarmDescription, Metric: a.MetricName})
		}
		if token = resp.Result.NextToken; token == "" {
			return out, nil
		}
	}
}

// heartbeatMetric is the metric of the heartbeat alarm (constructs/monitoring.WatchHeartbeat).
const heartbeatMetric = "ProbeCompleted"

// checkAlarms reads the paging alarms of the stack (the children of its composite alarm) and
// sorts those in ALARM by pipeline: a failure, or a note for a heartbeat alarm of a pipeline
// whose probes just completed (no heartbeat yet after a first deploy, or one that has not come
// round since the pipeline recovered: it clears within an interval). Alarms of pipelines other
// than only (when given) are left out.
func checkAlarms(ctx context.Context, rc *cli.RESTClient, composites []string, only string, passed map[string]bool) (checked int, failures, notes []Alarm, err error) {
	alarms, err := childAlarms(ctx, rc, composites...)
	if err != nil {
		return 0, nil, nil, err
	}
	for _, a := range alarms {
		if only != "" && a.label() != only {
			continue
		}
		checked++
		if a.State != "ALARM" {
			continue
		}
		if a.Metric == heartbeatMetric && passed[a.label()] {
			notes = append(notes, a)
			continue
		}
		failures = append(failures, a)
	}
	return checked, failures, notes, nil
}
