package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// describeAlarmsPage is one DescribeAlarms answer in CloudWatch's query-API XML.
func describeAlarmsPage(next string, alarms ...[4]string) string {
	var b strings.Builder
	b.WriteString(`<DescribeAlarmsResponse xmlns="http://monitoring.amazonaws.com/doc/2010-08-01/"><DescribeAlarmsResult><MetricAlarms>`)
	for _, a := range alarms {
		fmt.Fprintf(&b, `<member><AlarmName>%s</AlarmName><StateValue>%s</StateValue><StateReason>%s</StateReason><AlarmDescription>%s</AlarmDescription><MetricName>%s</MetricName></member>`,
			a[0], a[1], "Threshold Crossed: no datapoints were received for 2 periods and 2 missing datapoints were treated as [Breaching].", a[2], a[3])
	}
	b.WriteString(`</MetricAlarms><CompositeAlarms/>`)
	if next != "" {
		fmt.Fprintf(&b, `<NextToken>%s</NextToken>`, next)
	}
	b.WriteString(`</DescribeAlarmsResult></DescribeAlarmsResponse>`)
	return b.String()
}

// checkAlarms reads every page of the composite's children, each request signed for
// CloudWatch ("monitoring"), and sorts the alarms in ALARM: a heartbeat alarm of a pipeline
// whose probes passed is a note, any other alarm in ALARM a failure; --pipeline keeps that
// pipeline's alarms only.
func TestCheckAlarmsReadsTheCompositesChildren(t *testing.T) {
	const runbook = " Severity: page. Runbook: https://example.com/runbooks.md#"
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		requests = append(requests, r.Form.Encode())
		if !strings.Contains(r.Header.Get("Authorization"), "/monitoring/aws4_request") || r.Form.Get("ChildrenOfAlarmName") != "stack-Unhealthy-1" {
			http.Error(w, `<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`, http.StatusForbidden)
			return
		}
		if r.Form.Get("NextToken") == "" {
			fmt.Fprint(w, describeAlarmsPage("page-2",
				[4]string{"stack-OrdersDLQ-1", "OK", "[Orders] Messages in the DLQ." + runbook + "dlq-not-empty", "ApproximateNumberOfMessagesVisible"},
				[4]string{"stack-OrdersHeartbeat-1", "ALARM", "[Orders] No heartbeat completed." + runbook + "heartbeat-missing", "ProbeCompleted"}))
			return
		}
		fmt.Fprint(w, describeAlarmsPage("",
			[4]string{"stack-RefundsHeartbeat-1", "ALARM", "[Refunds] No heartbeat completed." + runbook + "heartbeat-missing", "ProbeCompleted"},
			[4]string{"stack-RefundsStalled-1", "ALARM", "[Refunds] Messages have waited." + runbook + "stalled-consumer", ""}))
	}))
	defer srv.Close()
	rc := &restClient{cfg: aws.Config{Region: "eu-west-1", HTTPClient: srv.Client(),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}, endpoint: srv.URL}

	checked, failures, notes, err := checkAlarms(t.Context(), rc, "stack-Unhealthy-1", "", map[string]bool{"Orders": true, "Refunds": false})
	if err != nil {
		t.Fatal(err)
	}
	names := func(as []alarmState) (out []string) {
		for _, a := range as {
			out = append(out, a.label()+" "+a.Name+" "+a.runbook())
		}
		return out
	}
	if checked != 4 || len(requests) != 2 || !strings.Contains(requests[0], "Action=DescribeAlarms") ||
		fmt.Sprint(names(notes)) != "[Orders stack-OrdersHeartbeat-1 https://example.com/runbooks.md#heartbeat-missing]" ||
		fmt.Sprint(names(failures)) != "[Refunds stack-RefundsHeartbeat-1 https://example.com/runbooks.md#heartbeat-missing Refunds stack-RefundsStalled-1 https://example.com/runbooks.md#stalled-consumer]" {
		t.Errorf("checked %d in %d requests %q; notes %v; failures %v", checked, len(requests), requests, names(notes), names(failures))
	}
	checked, failures, notes, err = checkAlarms(t.Context(), rc, "stack-Unhealthy-1", "Orders", map[string]bool{"Orders": true})
	if err != nil || checked != 2 || len(failures) != 0 || len(notes) != 1 {
		t.Errorf("--pipeline Orders: checked %d, failures %v, notes %v, %v", checked, names(failures), names(notes), err)
	}
	if _, _, _, err := checkAlarms(t.Context(), rc, "other", "", nil); err == nil || !strings.Contains(err.Error(), "monitoring DescribeAlarms: 403") {
		t.Errorf("refused: err = %v", err)
	}
}
