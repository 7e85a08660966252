package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
