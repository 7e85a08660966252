package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStartWithBadConfigFailsEveryInvocation(t *testing.T) {
	var out bytes.Buffer
	called := false
	h := start(context.Background(), lookupFrom(map[string]string{"JOB_NAME": "nightly", "PERIOD": "soon"}), &out,
		func(context.Context) (SQSAPI, error) { called = true; return &fakeSQS{}, nil })
	if called {
		t.Error("SQS client built despite a bad configuration")
	}
	for range 2 {
		_, err := h(context.Background(), Event{ScheduledTime: "2025-03-04T05:06:07Z"})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "QUEUE_URL is not set") || !strings.Contains(err.Error(), `PERIOD="soon"`) {
			t.Fatalf("err = %v, want the configuration error naming QUEUE_URL and PERIOD", err)
		}
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &line); err != nil {
		t.Fatalf("want one JSON log line at start, got %q", out.String())
	}
	if line["level"] != "ERROR" || line["message"] != "dispatcher not configured: every invocation will fail" ||
		!strings.Contains(line["error"].(string), "QUEUE_URL") {
		t.Errorf("log line = %v", line)
	}
}

func TestStartClientError(t *testing.T) {
	var out bytes.Buffer
	h := start(context.Background(), lookupFrom(baseEnv(nil)), &out,
		func(context.Context) (SQSAPI, error) { return nil, errors.New("load AWS configuration: no region") })
	if _, err := h(context.Background(), Event{}); err == nil || !strings.Contains(err.Error(), "no region") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), "no region") {
		t.Errorf("start did not log the error: %s", out.String())
	}
}

func TestStartWires(t *testing.T) {
	var out bytes.Buffer
	fake := &fakeSQS{}
	h := start(context.Background(), lookupFrom(baseEnv(nil)), &out,
		func(context.Context) (SQSAPI, error) { return fake, nil })
	sum, err := h(context.Background(), loadEvent(t))
	if err != nil || sum.Sent != 3 || len(fake.calls) != 1 {
		t.Fatalf("sum %+v err %v calls %d", sum, err, len(fake.calls))
	}
	if !strings.Contains(out.String(), `"message":"dispatched"`) || !strings.Contains(out.String(), `"_aws"`) {
		t.Errorf("want the summary log and the EMF line on stdout: %s", out.String())
	}
}

// Lambda sets AWS_LAMBDA_FUNCTION_NAME in every execution environment. The EMF line's Service
// dimension and every log line's service field are that name: constructs/monitoring charts
// the counters by the watched function's name (its TestDashboardShowsEveryWatchedResource),
// and two dispatchers must not share one series. Outside Lambda the name is "dispatcher".
func TestStartPublishesUnderTheLambdaFunctionName(t *testing.T) {
	for _, tc := range []struct{ fnName, want string }{{"jobs-Dispatcher-9Z8Y7X", "jobs-Dispatcher-9Z8Y7X"}, {"", "dispatcher"}} {
		t.Run(tc.want, func(t *testing.T) {
			var out bytes.Buffer
			h := start(context.Background(), lookupFrom(baseEnv(map[string]string{"AWS_LAMBDA_FUNCTION_NAME": tc.fnName})), &out,
				func(context.Context) (SQSAPI, error) { return &fakeSQS{}, nil })
			if _, err := h(context.Background(), loadEvent(t)); err != nil {
				t.Fatal(err)
			}
			emf := 0
			for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
				var l struct { // json prefers the exact key: "Service" (EMF) and "service" (log) stay apart
					Service    string `json:"Service"`
					LogService string `json:"service"`
					AWS        *struct {
						CloudWatchMetrics []struct{ Dimensions [][]string }
					} `json:"_aws"`
				}
				if err := json.Unmarshal(raw, &l); err != nil {
					t.Fatalf("stdout line %q: %v", raw, err)
				}
				switch {
				case l.AWS != nil:
					emf++
					if l.Service != tc.want || fmt.Sprint(l.AWS.CloudWatchMetrics[0].Dimensions) != "[[Service]]" {
						t.Errorf("EMF line %s: want Service = %q, the only dimension", raw, tc.want)
					}
				case l.LogService != tc.want:
					t.Errorf("log line %s: want service %q", raw, tc.want)
				}
			}
			if emf != 1 {
				t.Errorf("%d EMF lines, want 1: %s", emf, out.String())
			}
		})
	}
}
