//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// TestVerify: `pipelinectl verify` after a deploy, against the deployed consumer and
// dispatcher: it passes on a healthy pipeline and, on three broken ones, fails saying what
// is broken. The queue refuses the dispatcher's sends (as a missing sqs:SendMessage grant
// would); the table refuses the consumer's writes (dynamodb:UpdateItem); the event source
// mapping is off (no poller runs). Its probes run no effect. It then reads the paging
// alarms' states from CloudWatch (a stand-in that evaluates the template's alarms over the
// run): a heartbeat alarm in ALARM while the probes pass is a note, and a message in the DLQ
// (its paging alarm in ALARM) fails verify, naming the alarm and its runbook.
func TestVerify(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	w := newWorld(t, "verify")
	o := w.watchAlarms()
	p, fifo := w.pipeline(false), w.pipeline(true)
	outputs := filepath.Join(t.TempDir(), "outputs.json")
	vars, err := w.d.Env(p.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	fifoVars, err := w.d.Env(fifo.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	// Lambda's Invoke for the dispatcher, which verify asks for a probe of its own.
	// CloudWatch's DescribeAlarms, for the alarm check.
	var invocations, alarmCalls atomic.Int32
	mux := http.NewServeMux()
	handleInvoke(mux, w, w.functionName(p.Dispatcher), w.env(p.Dispatcher, nil), &invocations)
	handleDescribeAlarms(mux, w, &alarmCalls)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := []string{"AWS_ENDPOINT_URL_LAMBDA=" + srv.URL, "AWS_ENDPOINT_URL_CLOUDWATCH=" + srv.URL}
	composite := w.d.Template.Composites[0].LogicalID
	b, _ := json.Marshal(map[string]map[string]string{"Pipeline-e2e": {
		"StandardQueueUrl": w.d.QueueURL[p.Queue], "StandardDeadLetterQueueUrl": w.d.QueueURL[p.DLQ],
		"StandardDispatcherFunctionName": w.functionName(p.Dispatcher),
		"StandardConsumerFunctionName":   w.functionName(p.Consumer), "IdempotencyTableName": vars["IDEMPOTENCY_TABLE_NAME"],
		"FifoQueueUrl": w.d.QueueURL[fifo.Queue], "FifoDeadLetterQueueUrl": w.d.QueueURL[fifo.DLQ],
		"FifoConsumerFunctionName": w.functionName(fifo.Consumer), "UnhealthyAlarmName": composite,
	}})
	if err := os.WriteFile(outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", "--outputs", outputs, "--pipeline", "Standard", "--key-prefix", vars["IDEMPOTENCY_KEY_PREFIX"]}

	// Healthy.
	_, stop := w.poll(p, 1)
	code, out := runCtlEnv(t, env, append(args, "--timeout", "60s")...)
	if code != 0 || !strings.Contains(out, "Standard     OK: probe pipelinectl-probe-") || !strings.Contains(out, "completed, and the dispatcher's, in ") ||
		!strings.Contains(out, "; the DLQ did not grow") || invocations.Load() != 1 ||
		!strings.Contains(out, "alarms       OK: none of the ") || !strings.Contains(out, " paging alarms of "+composite+" is in ALARM") {
		t.Errorf("healthy pipeline: exit %d, %d dispatcher invocations", code, invocations.Load())
	}
	healthy := out

	// The heartbeats fail (their records cannot be written) while verify's probes pass: the
	// heartbeat alarm is in ALARM, which verify notes without failing.
	hb, dlq := heartbeatAlarm(p), dlqAlarm(p.DLQ)
	hbID, dlqID := "", ""
	for _, a := range w.d.Template.Alarms {
		switch {
		case hb.match(a):
			hbID = a.LogicalID
		case dlq.match(a):
			dlqID = a.LogicalID
		}
	}
	inAlarm := func(id string) func() bool {
		return func() bool {
			return w.evaluate(time.Now())[id].StateAt(o.Clock.Alarm(time.Now())) == alarm.StateAlarm
		}
	}
	w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if strings.Contains(c.Key, "pipelinectl-probe-heartbeat-") {
			return ddbproxy.Fault{Status: 400, Type: "AccessDeniedException"}
		}
		return ddbproxy.Fault{}
	}
	w.waitFor("the heartbeat alarm in ALARM", w.alarmWait(hb), inAlarm(hbID))
	code, out = runCtlEnv(t, env, append(args, "--timeout", "60s")...)
	if code != 0 || !strings.Contains(out, "Standard     note: alarm "+hbID+" is in ALARM for want of heartbeats") || !strings.Contains(out, "#heartbeat-missing") ||
		!strings.Contains(out, "is in ALARM but the heartbeat noted above") {
		t.Errorf("heartbeats failing, probes passing: exit %d, want 0 with a note on %s", code, hbID)
	}
	w.dynamo.Policy = nil

	// A message in the DLQ: its paging alarm is in ALARM, and verify fails naming it.
	w.send(p.DLQ, []message{{Body: body("verify-dlq")}})
	w.waitFor("the DLQ alarm in ALARM", w.alarmWait(dlq), inAlarm(dlqID))
	code, out = runCtlEnv(t, env, append(args, "--timeout", "60s")...)
	if code != 1 || !strings.Contains(out, "Standard     FAILED: alarm "+dlqID+" is in ALARM: ") || !strings.Contains(out, "#dlq-not-empty") ||
		!strings.Contains(out, "Standard     OK: probe") {
		t.Errorf("a paging alarm in ALARM: exit %d, want 1 naming %s", code, dlqID)
	}

	// The dispatcher cannot send to its queue (as without sqs:SendMessage).
	w.sqsPx.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if c.Op == "SendMessageBatch" {
			return ddbproxy.Fault{Status: 400, Type: "AccessDenied"}
		}
		return ddbproxy.Fault{}
	}
	code, out = runCtlEnv(t, env, append(args, "--timeout", "60s")...)
	if code != 1 || !strings.Contains(out, "FAILED: the dispatcher "+w.functionName(p.Dispatcher)+" could not send its probe to "+w.d.QueueURL[p.Queue]+": ") ||
		!strings.Contains(out, "AccessDenied") || !strings.Contains(out, "its role needs sqs:SendMessage on the queue") {
		t.Errorf("dispatcher without send: exit %d", code)
	}
	w.sqsPx.Policy = nil
	stop()
	w.quiesce()

	// The consumer cannot write the table.
	w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if c.Op == "UpdateItem" && strings.Contains(c.Key, "pipelinectl-probe-") {
			return ddbproxy.Fault{Status: 400, Type: "AccessDeniedException"}
		}
		return ddbproxy.Fault{}
	}
	_, stop = w.poll(p, 1)
	code, out = runCtlEnv(t, env, append(args, "--timeout", "10s")...)
	if code != 1 || !strings.Contains(out, "FAILED: the consumer received the probes but wrote no record in 10s: it cannot write the table "+vars["IDEMPOTENCY_TABLE_NAME"]+" (dynamodb:UpdateItem") {
		t.Errorf("consumer without table access: exit %d", code)
	}
	stop()
	w.dynamo.Policy = nil

	// The FIFO pipeline's event source mapping is disabled: nothing receives.
	code, out = runCtlEnv(t, env, "verify", "--outputs", outputs, "--pipeline", "Fifo", "--key-prefix", fifoVars["IDEMPOTENCY_KEY_PREFIX"], "--timeout", "8s")
	if code != 1 || !strings.Contains(out, "FAILED: nothing received the probes from "+w.d.QueueURL[fifo.Queue]+" in 8s: the consumer's event source mapping is disabled or missing") ||
		!strings.Contains(out, "aws lambda list-event-source-mappings --function-name "+w.functionName(fifo.Consumer)) {
		t.Errorf("mapping disabled: exit %d", code)
	}

	if n := len(w.ledger.Effects()); n != 0 {
		t.Errorf("the probes ran %d effects, want none", n)
	}
	report(t, "healthy: %s; dispatcher cannot send: exit 1 with its error; table refused: exit 1 with the table named; mapping off: exit 1 naming the mapping; "+
		"heartbeats failing: exit 0 with a note; DLQ alarm in ALARM: exit 1 naming it; %d DescribeAlarms calls; effects run by probes: %d",
		strings.TrimSpace(healthy[strings.Index(healthy, "Standard     OK"):]), alarmCalls.Load(), len(w.ledger.Effects()))
}
