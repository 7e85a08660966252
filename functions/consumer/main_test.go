package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// main's wiring: the handler consume builds from logEffect logs one "effect applied" line per
// run, under the Lambda function's name. (Package consume tests the rest, on DynamoDB Local.)
func TestMainWiresTheLogEffect(t *testing.T) {
	env := map[string]string{"IDEMPOTENCY_DISABLED": "true", "AWS_LAMBDA_FUNCTION_NAME": "orders-Consumer-1A2B"}
	var out bytes.Buffer
	h := consume.Init(logEffect, consume.WithLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }),
		consume.WithOutput(&out))
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"idempotencyKey":"k1"}`}, {MessageId: "m2", Body: `{"idempotencyKey":"k2"}`},
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v\n%s", resp, err, out.String())
	}
	effects := map[string]string{}
	for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var l map[string]any
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("stdout line %q: %v", raw, err)
		}
		if l["message"] == "effect applied" {
			if l["service"] != "orders-Consumer-1A2B" {
				t.Errorf("effect line service = %v", l["service"])
			}
			effects[l["messageId"].(string)], _ = l["idempotencyKey"].(string)
		}
	}
	if len(effects) != 2 || effects["m1"] != "k1" || effects["m2"] != "k2" {
		t.Errorf("effects = %v, want m1:k1 and m2:k2\n%s", effects, out.String())
	}
}
