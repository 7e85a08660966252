package health

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/fakeaws"
)

// cloudWatch stands in for DescribeAlarms as CloudWatch answers it: ChildrenOfAlarmName (one
// page each of pages, names and states only), or AlarmNames.member.N with AlarmTypes (every
// field of the named alarms). requests records each call's form.
func cloudWatch(t *testing.T, composite string, pages [][][4]string, requests *[]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(fakeaws.CloudWatch(composite, func() [][][4]string { return pages }, requests))
}

// checkAlarms reads every page of the composite's children (names and states only, as
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

	checked, failures, notes, err := checkAlarms(t.Context(), rc, []string{"stack-Unhealthy-1"}, "", map[string]bool{"Orders": true, "Refunds": false})
	if err != nil {
		t.Fatal(err)
	}
	names := func(as []Alarm) (out []string) {
		for _, a := range as {
			out = append(out, a.label()+" "+a.Name+" "+a.runbook())
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
	checked, failures, notes, err = checkAlarms(t.Context(), rc, []string{"stack-Unhealthy-1"}, "Orders", map[string]bool{"Orders": true})
	if err != nil || checked != 2 || len(failures) != 0 || len(notes) != 1 {
		t.Errorf("--pipeline Orders: checked %d, failures %v, notes %v, %v", checked, names(failures), names(notes), err)
	}
	if _, _, _, err := checkAlarms(t.Context(), rc, []string{"other"}, "", nil); err == nil || !strings.Contains(err.Error(), "monitoring DescribeAlarms: 400") {
		t.Errorf("refused: err = %v", err)
	}
}
