package consume

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func probeRecord(id, value string) events.SQSMessage {
	r := record(id, `{"pipelineProbe":true}`)
	r.MessageAttributes = map[string]events.SQSMessageAttribute{AttrProbe: {DataType: "String", StringValue: &value}}
	return r
}

// A probe (what pipelinectl verify sends) completes its record through DynamoDB Local and runs
// no effect; its twice-sent copy is a duplicate; a malformed probe id is bad input. The body
// need not carry the consumer's key, on a composite table too.
func TestProbeCompletesItsRecordAndRunsNoEffect(t *testing.T) {
	for _, env := range []map[string]string{nil, {"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant"}} {
		hs := newHarness(t, env, nil)
		failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
			probeRecord("p1", "verify-1"), record("m1", `{"idempotencyKey":"real","tenant":"t"}`)}})
		if len(failed) != 0 || len(effects) != 1 || effects[0] != "real" || metrics["Processed"] != 1 || metrics["InvalidInput"] != 0 {
			t.Fatalf("%v: failed %v effects %v metrics %v", env, failed, effects, metrics)
		}
		if r := recs["p1"]; r["outcome"] != OutcomeProbe || r["idempotencyKey"] != ProbeKeyPrefix+"verify-1" || r["probe"] != true || r["level"] != "INFO" {
			t.Errorf("%v: probe line = %v", env, r)
		}
		failed, recs, effects, _ = hs.invoke(events.SQSEvent{Records: []events.SQSMessage{probeRecord("p2", "verify-1")}})
		if len(failed) != 0 || len(effects) != 0 || recs["p2"]["outcome"] != OutcomeProbeDuplicate {
			t.Errorf("%v: second probe: failed %v effects %v line %v", env, failed, effects, recs["p2"])
		}
	}
	hs := newHarness(t, nil, nil)
	for _, bad := range []string{"", "a b", strings.Repeat("x", 65)} {
		failed, recs, effects, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{probeRecord("bad", bad)}})
		if len(failed) != 1 || len(effects) != 0 || metrics["InvalidInput"] != 1 ||
			!strings.Contains(recs["bad"]["reason"].(string), "a probe id is 1 to 64 letters, digits and '-'") {
			t.Errorf("probe id %q: failed %v effects %v metrics %v line %v", bad, failed, effects, metrics, recs["bad"])
		}
	}
}
