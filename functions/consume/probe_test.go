package consume

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func probeRecord(id, value string) events.SQSMessage {
	r := record(id, `{"pipelineProbe":true}`)
	r.MessageAttributes = map[string]events.SQSMessageAttribute{AttrProbe: {DataType: "String", StringValue: &value}}
	return r
}

// A probe (what pipelinectl verify sends) completes its record through DynamoDB Local and runs
// no effect; its twice-sent copy is a duplicate; a malformed probe id is bad input. The body
// need not carry the consumer's key, on a composite table too. Each completed probe, duplicate
// or not, counts ProbeCompleted (what the heartbeat alarm reads); a flush without one does not
// publish it at all, so "no probe" is missing data.
func TestProbeCompletesItsRecordAndRunsNoEffect(t *testing.T) {
	// verify's ids, and the heartbeat's "heartbeat-<scheduled time>".
	ids := []string{"verify-1", "heartbeat-2026-11-25T03:05:00Z"}
	for i, env := range []map[string]string{nil, {"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant"}} {
		id := ids[i]
		hs := newHarness(t, env, nil)
		failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
			probeRecord("p1", id), record("m1", `{"idempotencyKey":"real","tenant":"t"}`)}})
		if len(failed) != 0 || len(effects) != 1 || effects[0] != "real" || metrics["Processed"] != 1 || metrics["InvalidInput"] != 0 || metrics["ProbeCompleted"] != 1 {
			t.Fatalf("%v: failed %v effects %v metrics %v", env, failed, effects, metrics)
		}
		if r := recs["p1"]; r["outcome"] != telemetry.OutcomeProbe || r["idempotencyKey"] != ProbeKeyPrefix+id || r["probe"] != true || r["level"] != "INFO" {
			t.Errorf("%v: probe line = %v", env, r)
		}
		failed, recs, effects, metrics = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{probeRecord("p2", id)}})
		if len(failed) != 0 || len(effects) != 0 || recs["p2"]["outcome"] != telemetry.OutcomeProbeDuplicate || metrics["ProbeCompleted"] != 1 {
			t.Errorf("%v: second probe: failed %v effects %v line %v metrics %v", env, failed, effects, recs["p2"], metrics)
		}
		_, _, _, metrics = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{record("m2", `{"idempotencyKey":"real-2","tenant":"t"}`)}})
		if v, ok := metrics["ProbeCompleted"]; ok || metrics["Processed"] != 1 {
			t.Errorf("%v: a batch without a probe published ProbeCompleted = %v (ok %v); metrics %v", env, v, ok, metrics)
		}
	}
	hs := newHarness(t, nil, nil)
	for _, bad := range []string{"", "a b", "a/b", strings.Repeat("x", 65)} {
		failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{probeRecord("bad", bad)}})
		if _, counted := metrics["ProbeCompleted"]; len(failed) != 1 || len(effects) != 0 || metrics["InvalidInput"] != 1 || counted ||
			!strings.Contains(recs["bad"]["reason"].(string), "a probe id is 1 to 64 letters, digits, '-', '_', '.' and ':'") {
			t.Errorf("probe id %q: failed %v effects %v metrics %v line %v", bad, failed, effects, metrics, recs["bad"])
		}
	}
}
