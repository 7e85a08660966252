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

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
)

// TestVerify: `pipelinectl verify` after a deploy, against the deployed consumer and
// dispatcher: it passes on a healthy pipeline and, on three broken ones, fails saying what
// is broken. The queue refuses the dispatcher's sends (as a missing sqs:SendMessage grant
// would); the table refuses the consumer's writes (dynamodb:UpdateItem); the event source
// mapping is off (no poller runs). Its probes run no effect.
func TestVerify(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "verify")
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
	var invocations atomic.Int32
	mux := http.NewServeMux()
	handleInvoke(mux, w, w.functionName(p.Dispatcher), w.env(p.Dispatcher, nil), &invocations)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := []string{"AWS_ENDPOINT_URL_LAMBDA=" + srv.URL}
	b, _ := json.Marshal(map[string]map[string]string{"Pipeline-e2e": {
		"StandardQueueUrl": w.d.QueueURL[p.Queue], "StandardDeadLetterQueueUrl": w.d.QueueURL[p.DLQ],
		"StandardDispatcherFunctionName": w.functionName(p.Dispatcher),
		"StandardConsumerFunctionName":   w.functionName(p.Consumer), "IdempotencyTableName": vars["IDEMPOTENCY_TABLE_NAME"],
		"FifoQueueUrl": w.d.QueueURL[fifo.Queue], "FifoDeadLetterQueueUrl": w.d.QueueURL[fifo.DLQ],
		"FifoConsumerFunctionName": w.functionName(fifo.Consumer),
	}})
	if err := os.WriteFile(outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"verify", "--outputs", outputs, "--pipeline", "Standard", "--key-prefix", vars["IDEMPOTENCY_KEY_PREFIX"]}

	// Healthy.
	_, stop := w.poll(p, 1)
	code, out := runCtlEnv(t, env, append(args, "--timeout", "60s")...)
	if code != 0 || !strings.Contains(out, "Standard     OK: probe pipelinectl-probe-") || !strings.Contains(out, "completed, and the dispatcher's, in ") ||
		!strings.Contains(out, "; the DLQ did not grow") || invocations.Load() != 1 {
		t.Errorf("healthy pipeline: exit %d, %d dispatcher invocations", code, invocations.Load())
	}
	healthy := out

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
	code, out = runCtl(t, "verify", "--outputs", outputs, "--pipeline", "Fifo", "--key-prefix", fifoVars["IDEMPOTENCY_KEY_PREFIX"], "--timeout", "8s")
	if code != 1 || !strings.Contains(out, "FAILED: nothing received the probes from "+w.d.QueueURL[fifo.Queue]+" in 8s: the consumer's event source mapping is disabled or missing") ||
		!strings.Contains(out, "aws lambda list-event-source-mappings --function-name "+w.functionName(fifo.Consumer)) {
		t.Errorf("mapping disabled: exit %d", code)
	}
	if n := len(w.ledger.Effects()); n != 0 {
		t.Errorf("the probes ran %d effects, want none", n)
	}
	report(t, "healthy: %s; dispatcher cannot send: exit 1 with its error; table refused: exit 1 with the table named; mapping off: exit 1 naming the mapping; effects run by probes: %d",
		strings.TrimSpace(healthy[strings.Index(healthy, "Standard     OK"):]), len(w.ledger.Effects()))
}
