package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

func TestStartWithBadConfigFailsEveryInvocation(t *testing.T) {
	out := &syncBuffer{}
	called := false
	h := start(context.Background(), lookupFrom(map[string]string{"MAX_BODY_BYTES": "-5"}), out,
		func(context.Context) (idempotency.DynamoDBAPI, error) { called = true; return nil, nil }, nil)
	if called {
		t.Error("DynamoDB client built despite a bad configuration")
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m", `{"idempotencyKey":"k"}`)}}
	for range 2 {
		resp, err := h(context.Background(), ev)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "IDEMPOTENCY_TABLE_NAME is not set") ||
			!strings.Contains(err.Error(), `MAX_BODY_BYTES="-5"`) || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %v, %v; want the configuration error naming both variables", resp, err)
		}
	}
	lines := out.lines(t)
	if len(lines) != 1 || lines[0]["level"] != "ERROR" || lines[0]["message"] != "consumer not configured: every invocation will fail" ||
		!strings.Contains(lines[0]["error"].(string), "MAX_BODY_BYTES") {
		t.Errorf("start log = %v", lines)
	}
}

func TestStartClientError(t *testing.T) {
	out := &syncBuffer{}
	h := start(context.Background(), lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"}), out,
		func(context.Context) (idempotency.DynamoDBAPI, error) {
			return nil, errors.New("load AWS configuration: boom")
		}, nil)
	if _, err := h(context.Background(), events.SQSEvent{}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
}

func TestStartDisabledNeedsNoClient(t *testing.T) {
	out := &syncBuffer{}
	h := start(context.Background(), lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true"}), out,
		func(context.Context) (idempotency.DynamoDBAPI, error) { return nil, errors.New("must not be called") }, nil)
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m1", `{"idempotencyKey":"k"}`), record("m2", `{"idempotencyKey":"k"}`)}}
	resp, err := h(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v", resp, err)
	}
	effects := 0
	for _, l := range out.lines(t) {
		if l["message"] == "effect applied" {
			effects++
		}
	}
	if effects != 2 || !strings.Contains(out.buf.String(), "idempotency disabled") {
		t.Errorf("disabled: %d effects (want 2, no deduplication), log %s", effects, out.buf.String())
	}
}

// The production client path: awsenv honours AWS_ENDPOINT_URL_DYNAMODB, so
// the binary runs against DynamoDB Local unchanged.
func TestStartWithSDKClientAgainstEndpointEnv(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.Endpoint())
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	table := newTable(t, "")
	out := &syncBuffer{}
	h := start(context.Background(), lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": table}), out, newDynamoClient, nil)
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m1", `{"idempotencyKey":"via-sdk"}`)}}
	for i, want := range []string{OutcomeProcessed, OutcomeDuplicate} {
		resp, err := h(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("invocation %d: %v, %v\n%s", i, resp, err, out.buf.String())
		}
		var got string
		for _, l := range out.lines(t) {
			if l["message"] == "record outcome" {
				got, _ = l["outcome"].(string)
			}
		}
		if got != want {
			t.Fatalf("invocation %d: outcome %q, want %q\n%s", i, got, want, out.buf.String())
		}
		out.reset()
	}
}

func TestStartDeadLetterClientError(t *testing.T) {
	out := &syncBuffer{}
	sqsErr := errors.New("load AWS configuration: no region")
	h := start(context.Background(), lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true", "DEAD_LETTER_QUEUE_URL": dlqURL}), out,
		func(context.Context) (idempotency.DynamoDBAPI, error) { return nil, errors.New("must not be called") },
		func(context.Context) (SQSSendAPI, error) { return nil, sqsErr })
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m", `{"idempotencyKey":"k"}`)}}
	for range 2 {
		if resp, err := h(context.Background(), ev); !errors.Is(err, sqsErr) || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %v, %v; want the SQS client error", resp, err)
		}
	}
	if strings.Contains(out.buf.String(), "effect applied") {
		t.Errorf("a record ran without its dead-letter queue: %s", out.buf.String())
	}
	lines := out.lines(t)
	if len(lines) != 1 || lines[0]["message"] != "consumer not configured: every invocation will fail" || lines[0]["error"] != sqsErr.Error() {
		t.Errorf("start log = %v", lines)
	}
}

func TestStartDeadLettersThroughSQSClient(t *testing.T) {
	out := &syncBuffer{}
	f := &fakeSQS{}
	built := 0
	h := start(context.Background(), lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true", "DEAD_LETTER_QUEUE_URL": dlqURL}), out,
		func(context.Context) (idempotency.DynamoDBAPI, error) { return nil, errors.New("must not be called") },
		func(context.Context) (SQSSendAPI, error) { built++; return f, nil })
	ev := events.SQSEvent{Records: []events.SQSMessage{record("bad", "not json"), record("ok", `{"idempotencyKey":"k"}`)}}
	resp, err := h(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v; want no failures", resp, err)
	}
	sent := f.sent()
	if built != 1 || len(sent) != 1 {
		t.Fatalf("SQS client built %d times, %d messages sent; want 1 and 1", built, len(sent))
	}
	in := sent[0]
	if aws.ToString(in.QueueUrl) != dlqURL || aws.ToString(in.MessageBody) != "not json" ||
		aws.ToString(in.MessageAttributes[AttrSourceMessageID].StringValue) != "bad" ||
		!strings.HasPrefix(aws.ToString(in.MessageAttributes[AttrDeadLetterReason].StringValue), "body_not_json: ") {
		t.Errorf("sent %s to %s: %s", aws.ToString(in.MessageBody), aws.ToString(in.QueueUrl), attrString(in.MessageAttributes))
	}
}

// Lambda sets AWS_LAMBDA_FUNCTION_NAME in every execution environment. The EMF line's Service
// dimension and every log line's service field are that name: constructs/monitoring charts
// the counters by the watched function's name (its TestDashboardShowsEveryWatchedResource),
// and two consumers must not share one series. Outside Lambda the name is "consumer".
func TestStartPublishesUnderTheLambdaFunctionName(t *testing.T) {
	for _, tc := range []struct{ fnName, want string }{{"orders-Consumer-1A2B3C4D", "orders-Consumer-1A2B3C4D"}, {"", "consumer"}} {
		t.Run(tc.want, func(t *testing.T) {
			env := map[string]string{"IDEMPOTENCY_DISABLED": "true"}
			if tc.fnName != "" {
				env["AWS_LAMBDA_FUNCTION_NAME"] = tc.fnName
			}
			out := &syncBuffer{}
			h := start(context.Background(), lookupFrom(env), out,
				func(context.Context) (idempotency.DynamoDBAPI, error) { return nil, errors.New("must not be called") }, nil)
			if _, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("m", `{"idempotencyKey":"k"}`)}}); err != nil {
				t.Fatal(err)
			}
			checkService(t, out.lines(t), tc.want)
		})
	}
}

// checkService fails unless lines hold one EMF line whose only dimension is Service = want,
// and every log line's service field is want.
func checkService(t *testing.T, lines []map[string]any, want string) {
	t.Helper()
	emf := 0
	for _, l := range lines {
		if meta, ok := l["_aws"].(map[string]any); ok {
			emf++
			dims, _ := json.Marshal(meta["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"])
			if l["Service"] != want || string(dims) != `[["Service"]]` {
				t.Errorf("EMF Service = %v, dimensions %s; want Service = %q only", l["Service"], dims, want)
			}
		} else if l["service"] != want {
			t.Errorf("log line service = %v, want %q: %v", l["service"], want, l)
		}
	}
	if emf != 1 || len(lines) < 2 {
		t.Errorf("%d EMF lines among %d, want one EMF line and log lines", emf, len(lines))
	}
}
