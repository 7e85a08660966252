package consume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func TestInitWithBadConfigFailsEveryInvocation(t *testing.T) {
	out := &syncBuffer{}
	called := false
	h := Init(func(Env) (Effect, error) { called = true; return nil, nil },
		WithLookup(lookupFrom(map[string]string{"MAX_BODY_BYTES": "-5"})), WithOutput(out))
	if called {
		t.Error("effect built despite a bad configuration")
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

// The DynamoDB client is built from the environment Init reads: without a region it cannot be,
// and every invocation fails naming the variable.
func TestInitClientError(t *testing.T) {
	out := &syncBuffer{}
	h := Init(nil, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"})), WithOutput(out))
	if _, err := h(context.Background(), events.SQSEvent{}); err == nil ||
		!strings.Contains(err.Error(), "load AWS configuration") || !strings.Contains(err.Error(), "AWS_REGION is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestInitBuildError(t *testing.T) {
	for name, build := range map[string]BuildFunc{
		"error": func(Env) (Effect, error) { return nil, errors.New("ledger table: boom") },
		"panic": func(Env) (Effect, error) { panic("ledger table: boom") },
	} {
		t.Run(name, func(t *testing.T) {
			out := &syncBuffer{}
			h := Init(build, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true"})), WithOutput(out))
			ev := events.SQSEvent{Records: []events.SQSMessage{record("m", `{"idempotencyKey":"k"}`)}}
			for range 2 {
				if resp, err := h(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "build the effect: ") ||
					!strings.Contains(err.Error(), "ledger table: boom") || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("Handle = %v, %v; want the build error", resp, err)
				}
			}
			lines := out.lines(t)
			if len(lines) != 1 || lines[0]["message"] != "consumer not configured: every invocation will fail" ||
				!strings.Contains(lines[0]["error"].(string), "boom") {
				t.Errorf("start log = %v", lines)
			}
		})
	}
}

// The Env a build gets: the configuration, the logger and an AWS config built like the
// consumer's own clients, from the same environment.
func TestInitBuildGetsEnv(t *testing.T) {
	out := &syncBuffer{}
	env := map[string]string{"IDEMPOTENCY_DISABLED": "true", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a",
		"AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1", "LEDGER_TABLE": "ledger"}
	var got Env
	var awsCfg aws.Config
	var awsErr error
	Init(func(e Env) (Effect, error) {
		got = e
		awsCfg, awsErr = e.AWSConfig(ServiceDynamoDB)
		return nil, nil
	}, WithLookup(lookupFrom(env)), WithOutput(out))
	if table, _ := got.Lookup("LEDGER_TABLE"); table != "ledger" || got.Logger == nil || !got.Config.Idempotency.Disabled {
		t.Errorf("Env = %+v", got)
	}
	if awsErr != nil || awsCfg.Region != "eu-west-1" || aws.ToString(awsCfg.BaseEndpoint) != "http://127.0.0.1:1" {
		t.Errorf("AWSConfig = %+v, %v", awsCfg, awsErr)
	}
	if _, err := (Env{Lookup: lookupFrom(nil)}).AWSConfig(ServiceSQS); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Errorf("AWSConfig without a region: %v", err)
	}
}

// No AWS variables: building a DynamoDB client would fail.
func TestInitDisabledNeedsNoClient(t *testing.T) {
	out := &syncBuffer{}
	h := Init(nil, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true"})), WithOutput(out))
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
func TestInitWithSDKClientAgainstEndpointEnv(t *testing.T) {
	table := newTable(t, "")
	out := &syncBuffer{}
	h := Init(nil, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": table,
		"AWS_ENDPOINT_URL_DYNAMODB": srv.Endpoint(), "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local",
		"AWS_SECRET_ACCESS_KEY": "local"})), WithOutput(out))
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m1", `{"idempotencyKey":"via-sdk"}`)}}
	for i, want := range []string{telemetry.OutcomeProcessed, telemetry.OutcomeDuplicate} {
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

func TestInitDeadLetterClientError(t *testing.T) {
	out := &syncBuffer{}
	h := Init(nil, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true", "DEAD_LETTER_QUEUE_URL": dlqURL})), WithOutput(out))
	ev := events.SQSEvent{Records: []events.SQSMessage{record("m", `{"idempotencyKey":"k"}`)}}
	var sqsErr error
	for range 2 {
		resp, err := h(context.Background(), ev)
		if err == nil || !strings.Contains(err.Error(), "load AWS configuration") || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %v, %v; want the SQS client error", resp, err)
		}
		sqsErr = err
	}
	if strings.Contains(out.buf.String(), "effect applied") {
		t.Errorf("a record ran without its dead-letter queue: %s", out.buf.String())
	}
	lines := out.lines(t)
	if len(lines) != 1 || lines[0]["message"] != "consumer not configured: every invocation will fail" || lines[0]["error"] != sqsErr.Error() {
		t.Errorf("start log = %v", lines)
	}
}

func TestInitDeadLettersThroughSQSClient(t *testing.T) {
	out := &syncBuffer{}
	f := &fakeSQS{}
	h := Init(nil, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true", "DEAD_LETTER_QUEUE_URL": dlqURL})),
		WithOutput(out), WithSQS(f))
	ev := events.SQSEvent{Records: []events.SQSMessage{record("bad", "not json"), record("ok", `{"idempotencyKey":"k"}`)}}
	resp, err := h(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v; want no failures", resp, err)
	}
	sent := f.sent()
	if len(sent) != 1 {
		t.Fatalf("%d messages sent; want 1", len(sent))
	}
	in := sent[0]
	if aws.ToString(in.QueueUrl) != dlqURL || aws.ToString(in.MessageBody) != "not json" ||
		aws.ToString(in.MessageAttributes[contract.AttrSourceMessageID].StringValue) != "bad" ||
		!strings.HasPrefix(aws.ToString(in.MessageAttributes[contract.AttrDeadLetterReason].StringValue), "body_not_json: ") {
		t.Errorf("sent %s to %s: %s", aws.ToString(in.MessageBody), aws.ToString(in.QueueUrl), attrString(in.MessageAttributes))
	}
}

// Lambda sets AWS_LAMBDA_FUNCTION_NAME in every execution environment. The EMF line's Service
// dimension and every log line's service field are that name: constructs/monitoring charts
// the counters by the watched function's name (its TestDashboardShowsEveryWatchedResource),
// and two consumers must not share one series. Outside Lambda the name is "consumer".
func TestInitPublishesUnderTheLambdaFunctionName(t *testing.T) {
	for _, tc := range []struct{ fnName, want string }{{"orders-Consumer-1A2B3C4D", "orders-Consumer-1A2B3C4D"}, {"", "consumer"}} {
		t.Run(tc.want, func(t *testing.T) {
			env := map[string]string{"IDEMPOTENCY_DISABLED": "true"}
			if tc.fnName != "" {
				env["AWS_LAMBDA_FUNCTION_NAME"] = tc.fnName
			}
			out := &syncBuffer{}
			h := Init(nil, WithLookup(lookupFrom(env)), WithOutput(out))
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

// WithDynamoDB replaces the client Init would build: no AWS variables are needed.
func TestInitWithDynamoDB(t *testing.T) {
	table := newTable(t, "")
	out := &syncBuffer{}
	effects := 0
	h := Init(func(Env) (Effect, error) {
		return func(context.Context, Message) ([]byte, error) { effects++; return nil, nil }, nil
	}, WithLookup(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": table})), WithOutput(out), WithDynamoDB(srv.Client()))
	for i := range 2 {
		ev := events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprint("m", i), `{"idempotencyKey":"k"}`)}}
		if resp, err := h(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("invocation %d: %v, %v\n%s", i, resp, err, out.buf.String())
		}
	}
	if effects != 1 {
		t.Errorf("effect ran %d times, want once", effects)
	}
}

// The idempotency store's client keeps its own connection pool and still sends through
// internal/sdkhttp, as every SDK client here does: an answer of DynamoDB's (a record's old
// image on a duplicate) is not cut off by a connection the function closed itself.
func TestDynamoClientSendsThroughSDKHTTP(t *testing.T) {
	if got := reflect.TypeOf(dynamoHTTPClient()).PkgPath(); got != "github.com/idempotent-sqs/pipeline/internal/sdkhttp" {
		t.Errorf("the idempotency store's HTTP client is of package %s, want internal/sdkhttp's", got)
	}
}
