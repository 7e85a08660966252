package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/health"
)

// describeAlarmsPage is one DescribeAlarms answer in CloudWatch's query-API XML: each alarm
// is {name, state, description, metric}. With full false it holds only the name and the state,
// all CloudWatch answers to ChildrenOfAlarmName.
func describeAlarmsPage(next string, full bool, alarms ...[4]string) string {
	var b strings.Builder
	b.WriteString(`<DescribeAlarmsResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><DescribeAlarmsResult><MetricAlarms>`)
	for _, a := range alarms {
		if full {
			fmt.Fprintf(&b, `<member><AlarmName>%s</AlarmName><StateValue>%s</StateValue><StateReason>%s</StateReason><AlarmDescription>%s</AlarmDescription><MetricName>%s</MetricName></member>`,
				a[0], a[1], "Threshold Crossed: no datapoints were received for 2 periods and 2 missing datapoints were treated as [Breaching].", a[2], a[3])
		} else {
			fmt.Fprintf(&b, `<member><AlarmName>%s</AlarmName><StateValue>%s</StateValue></member>`, a[0], a[1])
		}
	}
	b.WriteString(`</MetricAlarms><CompositeAlarms/>`)
	if next != "" {
		fmt.Fprintf(&b, `<NextToken>%s</NextToken>`, next)
	}
	b.WriteString(`</DescribeAlarmsResult></DescribeAlarmsResponse>`)
	return b.String()
}

// cloudWatch stands in for DescribeAlarms as CloudWatch answers it: ChildrenOfAlarmName (one
// page each of pages, names and states only), or AlarmNames.member.N with AlarmTypes (every
// field of the named alarms). requests records each call's form.
func cloudWatch(t *testing.T, composite string, pages [][][4]string, requests *[]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(cloudWatchHandler(composite, func() [][][4]string { return pages }, requests))
}

// cloudWatchHandler is cloudWatch's handler, with the pages read at each call.
func cloudWatchHandler(composite string, pagesNow func() [][][4]string, requests *[]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if requests != nil {
			*requests = append(*requests, r.Form.Encode())
		}
		pages := pagesNow()
		if !strings.Contains(r.Header.Get("Authorization"), "/monitoring/aws4_request") || r.Form.Get("Action") != "DescribeAlarms" {
			http.Error(w, `<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`, http.StatusForbidden)
			return
		}
		if c := r.Form.Get("ChildrenOfAlarmName"); c != "" {
			if c != composite || len(r.Form) > 4 { // Action, Version, ChildrenOfAlarmName, NextToken at most
				http.Error(w, `<ErrorResponse><Error><Code>InvalidParameterCombination</Code></Error></ErrorResponse>`, http.StatusBadRequest)
				return
			}
			page, next := 0, ""
			fmt.Sscanf(r.Form.Get("NextToken"), "page-%d", &page)
			if page+1 < len(pages) {
				next = fmt.Sprintf("page-%d", page+1)
			}
			var alarms [][4]string
			if page < len(pages) {
				alarms = pages[page]
			}
			fmt.Fprint(w, describeAlarmsPage(next, false, alarms...))
			return
		}
		if r.Form.Get("AlarmTypes.member.1") != "MetricAlarm" || r.Form.Get("AlarmTypes.member.2") != "CompositeAlarm" {
			http.Error(w, `<ErrorResponse><Error><Code>InvalidParameterValue</Code></Error></ErrorResponse>`, http.StatusBadRequest)
			return
		}
		byName := map[string][4]string{}
		for _, page := range pages {
			for _, a := range page {
				byName[a[0]] = a
			}
		}
		var named [][4]string
		for i := 1; r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i)) != ""; i++ {
			if a, ok := byName[r.Form.Get(fmt.Sprintf("AlarmNames.member.%d", i))]; ok {
				named = append(named, a)
			}
		}
		fmt.Fprint(w, describeAlarmsPage("", true, named...))
	}
}

// health.CheckAlarms reads every page of the composite's children (names and states only, as
// CloudWatch answers ChildrenOfAlarmName), then their details by name, each request signed for
// CloudWatch ("monitoring"), and sorts the alarms in ALARM: a heartbeat alarm of a pipeline
// whose probes passed is a note, any other alarm in ALARM a failure; --pipeline keeps that
// pipeline's alarms only.
func TestCheckAlarmsReadsTheCompositesChildren(t *testing.T) {
	const runbook = " Severity: page. Runbook: https://example.com/runbooks.md#"
	var requests []string
	srv := cloudWatch(t, "stack-Unhealthy-1", [][][4]string{
		{{"stack-OrdersDLQ-1", "OK", "[Orders] Messages in the DLQ." + runbook + "dlq-not-empty", "ApproximateNumberOfMessagesVisible"},
			{"stack-OrdersHeartbeat-1", "ALARM", "[Orders] No heartbeat completed." + runbook + "heartbeat-missing", "ProbeCompleted"}},
		{{"stack-RefundsHeartbeat-1", "ALARM", "[Refunds] No heartbeat completed." + runbook + "heartbeat-missing", "ProbeCompleted"},
			{"stack-RefundsStalled-1", "ALARM", "[Refunds] Messages have waited." + runbook + "stalled-consumer", ""}},
	}, &requests)
	defer srv.Close()
	rc := &cli.RESTClient{Cfg: aws.Config{Region: "eu-west-1", HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}, Endpoint: srv.URL}

	checked, failures, notes, err := health.CheckAlarms(t.Context(), rc, "stack-Unhealthy-1", "", map[string]bool{"Orders": true, "Refunds": false})
	if err != nil {
		t.Fatal(err)
	}
	names := func(as []health.AlarmState) (out []string) {
		for _, a := range as {
			out = append(out, a.Label()+" "+a.Name+" "+a.Runbook())
		}
		return out
	}
	if checked != 4 || len(requests) != 3 || !strings.Contains(requests[2], "AlarmNames.member.4=stack-RefundsStalled-1") ||
		fmt.Sprint(names(notes)) != "[Orders stack-OrdersHeartbeat-1 https://example.com/runbooks.md#heartbeat-missing]" ||
		fmt.Sprint(names(failures)) != "[Refunds stack-RefundsHeartbeat-1 https://example.com/runbooks.md#heartbeat-missing Refunds stack-RefundsStalled-1 https://example.com/runbooks.md#stalled-consumer]" {
		t.Errorf("checked %d in %d requests %q; notes %v; failures %v", checked, len(requests), requests, names(notes), names(failures))
	}
	if failures[0].Reason == "" {
		t.Errorf("the details were not read: %+v", failures[0])
	}
	checked, failures, notes, err = health.CheckAlarms(t.Context(), rc, "stack-Unhealthy-1", "Orders", map[string]bool{"Orders": true})
	if err != nil || checked != 2 || len(failures) != 0 || len(notes) != 1 {
		t.Errorf("--pipeline Orders: checked %d, failures %v, notes %v, %v", checked, names(failures), names(notes), err)
	}
	if _, _, _, err := health.CheckAlarms(t.Context(), rc, "other", "", nil); err == nil || !strings.Contains(err.Error(), "monitoring DescribeAlarms: 400") {
		t.Errorf("refused: err = %v", err)
	}
}
