package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestInitWithBadConfigFailsEveryInvocation(t *testing.T) {
	var out bytes.Buffer
	called := false
	h := Init(func(Env) (ItemSource, error) { called = true; return nil, nil },
		WithLookup(lookupFrom(map[string]string{"JOB_NAME": "nightly", "PERIOD": "soon"})), WithOutput(&out))
	if called {
		t.Error("item source built despite a bad configuration")
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

// The SQS client is built from the environment Init reads: without a region it cannot be,
// and every invocation fails naming the variable.
func TestInitClientError(t *testing.T) {
	var out bytes.Buffer
	h := Init(nil, WithLookup(lookupFrom(baseEnv(nil))), WithOutput(&out))
	if _, err := h(context.Background(), Event{}); err == nil || !strings.Contains(err.Error(), "AWS_REGION is not set") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), "AWS_REGION is not set") {
		t.Errorf("Init did not log the error: %s", out.String())
	}
}

func TestInitBuildError(t *testing.T) {
	for name, build := range map[string]BuildFunc{
		"error": func(Env) (ItemSource, error) { return nil, errors.New("tenants table: boom") },
		"panic": func(Env) (ItemSource, error) { panic("tenants table: boom") },
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			h := Init(build, WithLookup(lookupFrom(baseEnv(nil))), WithOutput(&out), WithSQS(&fakeSQS{}))
			for range 2 {
				if _, err := h(context.Background(), loadEvent(t)); err == nil ||
					!strings.Contains(err.Error(), "build the item source: ") || !strings.Contains(err.Error(), "tenants table: boom") {
					t.Fatalf("err = %v, want the build error", err)
				}
			}
			if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), "dispatcher not configured") {
				t.Errorf("want one log line at start, got %d: %s", n, out.String())
			}
		})
	}
}

// The Env a build gets: the configuration, the logger and an AWS config built like the
// dispatcher's own client, from the same environment; the source it returns is used.
func TestInitBuildGetsEnv(t *testing.T) {
	var out bytes.Buffer
	env := baseEnv(map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1", "TENANTS": "a,b"})
	var got Env
	var awsCfg aws.Config
	var awsErr error
	fake := &fakeSQS{}
	h := Init(func(e Env) (ItemSource, error) {
		got = e
		awsCfg, awsErr = e.AWSConfig(ServiceDynamoDB)
		return tenants{e.Lookup}, nil
	}, WithLookup(lookupFrom(env)), WithOutput(&out), WithSQS(fake))
	if got.Logger == nil || got.Config.JobName != env["JOB_NAME"] {
		t.Errorf("Env = %+v", got)
	}
	if awsErr != nil || awsCfg.Region != "eu-west-1" || aws.ToString(awsCfg.BaseEndpoint) != "http://127.0.0.1:1" {
		t.Errorf("AWSConfig = %+v, %v", awsCfg, awsErr)
	}
	if sum, err := h(context.Background(), loadEvent(t)); err != nil || sum.Sent != 2 {
		t.Errorf("Handle = %+v, %v; want the build's two items sent", sum, err)
	}
}

// tenants is an ItemSource reading its items from the TENANTS variable.
type tenants struct{ lookup func(string) (string, bool) }

func (s tenants) Items(context.Context, Run) ([]Item, error) {
	v, _ := s.lookup("TENANTS")
	var items []Item
	for _, id := range strings.Split(v, ",") {
		items = append(items, Item{ID: id})
	}
	return items, nil
}

func TestInitWires(t *testing.T) {
	var out bytes.Buffer
	fake := &fakeSQS{}
	h := Init(nil, WithLookup(lookupFrom(baseEnv(nil))), WithOutput(&out), WithSQS(fake))
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
func TestInitPublishesUnderTheLambdaFunctionName(t *testing.T) {
	for _, tc := range []struct{ fnName, want string }{{"jobs-Dispatcher-9Z8Y7X", "jobs-Dispatcher-9Z8Y7X"}, {"", "dispatcher"}} {
		t.Run(tc.want, func(t *testing.T) {
			var out bytes.Buffer
			h := Init(nil, WithLookup(lookupFrom(baseEnv(map[string]string{"AWS_LAMBDA_FUNCTION_NAME": tc.fnName}))),
				WithOutput(&out), WithSQS(&fakeSQS{}))
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
