package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/fakeaws"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/health"
)

// statusAPIs stands in for Lambda's ListEventSourceMappings and CloudWatch's DescribeAlarms
// (no local backend has them): mappingState is the consumer's one mapping's State, and
// alarm, when not "", a paging alarm of the pipeline in ALARM.
func statusAPIs(t *testing.T, consumer string, mappingState *atomic.Value, alarm *atomic.Value) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2015-03-31/event-source-mappings/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("FunctionName") != consumer || !strings.Contains(r.Header.Get("Authorization"), "/lambda/aws4_request") {
			http.Error(w, `{"Message":"Function not found"}`, http.StatusNotFound)
			return
		}
		state, reason := mappingState.Load().(string), "USER_INITIATED"
		fmt.Fprintf(w, `{"EventSourceMappings":[{"UUID":"uuid-1","EventSourceArn":"arn:aws:sqs:us-east-1:123456789012:work","State":%q,"StateTransitionReason":%q,"LastProcessingResult":"OK","BatchSize":10,"ScalingConfig":{"MaximumConcurrency":5}}]}`, state, reason)
	})
	mux.HandleFunc("POST /", fakeaws.CloudWatch("stack-Unhealthy", func() [][][4]string {
		alarms := [][4]string{{"stack-FifoDLQ", "ALARM", "[Fifo] Messages in the DLQ. Severity: page. Runbook: https://example.com/runbooks.md#dlq-not-empty", "ApproximateNumberOfMessagesVisible"}}
		if name := alarm.Load().(string); name != "" {
			alarms = append(alarms, [4]string{name, "ALARM", "[Standard] Messages in the DLQ. Severity: page. Runbook: https://example.com/runbooks.md#dlq-not-empty", "ApproximateNumberOfMessagesVisible"})
		}
		return [][][4]string{alarms}
	}, nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", srv.URL)
}

// statusPipe is a pipeline whose outputs name the composite alarm stack-Unhealthy, with the
// Lambda and CloudWatch stand-ins (statusAPIs): its mapping Enabled, no alarm of its own.
func statusPipe(t *testing.T) (p *pipe, state, alarm *atomic.Value) {
	t.Helper()
	p = newPipe(t, false)
	state, alarm = new(atomic.Value), new(atomic.Value)
	state.Store("Enabled")
	alarm.Store("")
	statusAPIs(t, "consumer", state, alarm)
	b, _ := os.ReadFile(p.outputs)
	var outs map[string]map[string]string
	json.Unmarshal(b, &outs)
	outs[p.stack]["UnhealthyAlarmName"] = "stack-Unhealthy"
	b, _ = json.Marshal(outs)
	os.WriteFile(p.outputs, b, 0o600)
	return p, state, alarm
}

// status reads the queues from ElasticMQ and the mapping and alarms from the stand-ins: a
// healthy pipeline exits 0; a message in the DLQ, a disabled mapping and a paging alarm in
// ALARM are each named as a problem (exit 1), and --output json carries them. Another
// pipeline's alarm is not this one's problem.
func TestStatus(t *testing.T) {
	p, state, alarm := statusPipe(t)
	fillQueue(t, p.queueURL, "w1", "w2")

	code, out, _ := ctl(t, p.args("status")...)
	if code != cli.ExitOK || !strings.Contains(out, "  queue     2 visible, 0 in flight, 0 delayed   "+p.queueURL) ||
		!strings.Contains(out, "  mapping   uuid-1 Enabled, last processing result \"OK\", batch size 10, maximum concurrency 5") ||
		!strings.Contains(out, "  alarms    no paging alarm in ALARM") || !strings.Contains(out, "  healthy") {
		t.Errorf("healthy: exit %d", code)
	}

	fillDLQ(t, p, "", "bad-1")
	state.Store("Disabled")
	alarm.Store("stack-StandardDLQ")
	code, out, errOut := ctl(t, p.args("status")...)
	for _, want := range []string{
		"  PROBLEM   messages in the DLQ: 1; pipelinectl dlq inspect --outputs " + p.outputs + " --pipeline Standard",
		"  PROBLEM   mapping uuid-1 is Disabled (USER_INITIATED): nothing receives while it is not Enabled; aws lambda update-event-source-mapping --uuid uuid-1 --enabled",
		"  PROBLEM   alarm stack-StandardDLQ is in ALARM: ",
		"(runbook: https://example.com/runbooks.md#dlq-not-empty)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("broken: output lacks %q", want)
		}
	}
	if code != cli.ExitError || !strings.Contains(errOut, "status: 1 of 1 pipelines need a look") || strings.Contains(out, "stack-FifoDLQ") {
		t.Errorf("broken: exit %d, %q", code, errOut)
	}
	// Without --pipeline, a paging alarm of no pipeline the outputs name is the stack's problem.
	code, out, _ = ctl(t, "status", "--outputs", p.outputs)
	if code != cli.ExitError || !strings.Contains(out, "stack\n  PROBLEM   alarm stack-FifoDLQ is in ALARM: ") {
		t.Errorf("whole stack: exit %d, want the Fifo alarm as the stack's problem", code)
	}
	_, out, _ = ctl(t, append(p.args("status"), "--output", "json")...)
	var js []health.PipelineStatus
	if err := json.Unmarshal([]byte(out), &js); err != nil || len(js) != 1 || len(js[0].Problems) != 3 || js[0].DeadLetterQueue.Visible != 1 ||
		js[0].Mappings[0].State != "Disabled" || len(js[0].Alarms) != 1 || !js[0].AlarmsChecked {
		t.Errorf("--output json: %v %+v", err, js)
	}
}

// With CloudWatch and Lambda out of reach, status still prints the queue and DLQ depths it
// read, says what it could not read and why (the variable of each service, once), and exits
// 1: unknown is never healthy.
func TestStatusPrintsWhatItCouldRead(t *testing.T) {
	p, _, _ := statusPipe(t)
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", "http://127.0.0.1:1")
	fillQueue(t, p.queueURL, "w1", "w2", "w3")

	code, out, errOut := ctl(t, p.args("status")...)
	for _, want := range []string{
		"  queue     3 visible, 0 in flight, 0 delayed   " + p.queueURL,
		"  DLQ       0 visible, 0 in flight   " + p.dlqURL,
		"  UNKNOWN   mappings: the event source mappings of consumer: ",
		"cannot reach the Lambda endpoint: check AWS_ENDPOINT_URL_LAMBDA",
		"  UNKNOWN   alarms: the alarms of stack-Unhealthy: ",
		"cannot reach the CloudWatch endpoint: check AWS_ENDPOINT_URL_CLOUDWATCH",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "  healthy\n") || strings.Count(out+errOut, "cannot reach the CloudWatch endpoint") != 1 {
		t.Errorf("output says healthy, or explains CloudWatch other than once")
	}
	if code != cli.ExitError || !strings.Contains(errOut, "status: 1 of 1 pipelines could not be read whole (UNKNOWN above, with why)") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// fillQueue sends bodies to a standard queue.
func fillQueue(t *testing.T, url string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := sqsSrv.Client().SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
}
