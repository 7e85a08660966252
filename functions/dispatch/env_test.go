package dispatch

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func lookupFrom(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func baseEnv(over map[string]string) map[string]string {
	env := map[string]string{
		"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo",
		"JOB_NAME":  "nightly",
	}
	for k, v := range over {
		env[k] = v
	}
	return env
}

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(lookupFrom(baseEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		QueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo", Fifo: true, JobName: "nightly",
		DefaultGroupID: "nightly", SendMaxAttempts: 5, MetricsNamespace: "IdempotentSQS",
		LogLevel: slog.LevelInfo, Service: "dispatcher",
	}
	if cfg != want {
		t.Errorf("cfg = %+v\nwant %+v", cfg, want)
	}
	// An optional variable set to "" counts as unset.
	empty := baseEnv(map[string]string{"PERIOD": "", "DEFAULT_MESSAGE_GROUP_ID": "", "SEND_MAX_ATTEMPTS": "",
		"METRICS_NAMESPACE": "", "LOG_LEVEL": ""})
	if cfg2, err := LoadConfig(lookupFrom(empty)); err != nil || cfg2 != want {
		t.Errorf("with empty optionals: %+v, %v", cfg2, err)
	}
}

func TestLoadConfigValues(t *testing.T) {
	cfg, err := LoadConfig(lookupFrom(baseEnv(map[string]string{
		"QUEUE_URL": "http://localhost:9324/000000000000/jobs", "PERIOD": "1m0s", "DEFAULT_MESSAGE_GROUP_ID": "all",
		"SEND_MAX_ATTEMPTS": "10", "METRICS_NAMESPACE": "My/App", "LOG_LEVEL": "debug",
	})))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fifo || cfg.DefaultGroupID != "all" || cfg.SendMaxAttempts != 10 ||
		cfg.MetricsNamespace != "My/App" || cfg.LogLevel != slog.LevelDebug {
		t.Errorf("cfg = %+v", cfg)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		msg  string
	}{
		{"queue url missing", map[string]string{"QUEUE_URL": "\x00unset"}, "QUEUE_URL is not set: want an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>"},
		{"queue url empty", map[string]string{"QUEUE_URL": ""}, `QUEUE_URL="": want an SQS queue URL`},
		{"queue url not a URL", map[string]string{"QUEUE_URL": "jobs.fifo"}, `QUEUE_URL="jobs.fifo": want an SQS queue URL`},
		// The consumer's rule for its DLQ's URL, now the dispatcher's too: an account and a name.
		{"queue url without the account", map[string]string{"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/jobs"}, `QUEUE_URL="https://sqs.eu-west-1.amazonaws.com/jobs": want an SQS queue URL`},
		{"queue url with more path", map[string]string{"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs/x"}, `QUEUE_URL="https://sqs.eu-west-1.amazonaws.com/123456789012/jobs/x": want an SQS queue URL`},
		{"queue url no path", map[string]string{"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/"}, `QUEUE_URL="https://sqs.eu-west-1.amazonaws.com/": want`},
		{"queue url arn", map[string]string{"QUEUE_URL": "arn:aws:sqs:eu-west-1:123456789012:jobs"}, `QUEUE_URL="arn:aws:sqs:eu-west-1:123456789012:jobs": want`},
		{"job missing", map[string]string{"JOB_NAME": "\x00unset"}, "JOB_NAME is not set: want 1-128 bytes of printable UTF-8 without surrounding spaces"},
		{"job spaces", map[string]string{"JOB_NAME": " nightly"}, `JOB_NAME=" nightly": want 1-128 bytes`},
		{"job control char", map[string]string{"JOB_NAME": "a\tb"}, `JOB_NAME="a\tb": want`},
		{"job too long", map[string]string{"JOB_NAME": strings.Repeat("j", 129)}, "JOB_NAME=\"jjjj"},
		{"period longer than the occurrence", map[string]string{"PERIOD": "24h"}, `PERIOD="24h": want it unset: PERIOD is no longer supported ` +
			`(keys are derived from each scheduled occurrence; a longer period gave distinct runs one key and the consumer dropped all but ` +
			`the first as duplicates); remove the variable`},
		{"period as the old construct wrote it", map[string]string{"PERIOD": "1h0m0s"}, `PERIOD="1h0m0s": want it unset: PERIOD is no longer supported`},
		{"period shorter than a minute", map[string]string{"PERIOD": "30s"}, `PERIOD="30s": want it unset`},
		{"period not a duration", map[string]string{"PERIOD": "hourly"}, `PERIOD="hourly": want it unset`},
		{"group invalid", map[string]string{"DEFAULT_MESSAGE_GROUP_ID": "a b"}, `DEFAULT_MESSAGE_GROUP_ID="a b": want a valid SQS MessageGroupId`},
		{"job not a group id", map[string]string{"JOB_NAME": "nächtlich"},
			`DEFAULT_MESSAGE_GROUP_ID is not set: want a valid SQS MessageGroupId: it defaults to JOB_NAME "nächtlich", which is not one`},
		{"attempts not a number", map[string]string{"SEND_MAX_ATTEMPTS": "five"}, `SEND_MAX_ATTEMPTS="five": want an integer from 1 to 10`},
		{"attempts zero", map[string]string{"SEND_MAX_ATTEMPTS": "0"}, `SEND_MAX_ATTEMPTS="0": want an integer from 1 to 10`},
		{"attempts too many", map[string]string{"SEND_MAX_ATTEMPTS": "11"}, `SEND_MAX_ATTEMPTS="11": want`},
		{"namespace reserved", map[string]string{"METRICS_NAMESPACE": "AWS/SQS"}, `METRICS_NAMESPACE="AWS/SQS": want a CloudWatch namespace`},
		{"namespace bad char", map[string]string{"METRICS_NAMESPACE": "a*b"}, `METRICS_NAMESPACE="a*b": want`},
		{"log level", map[string]string{"LOG_LEVEL": "verbose"}, `LOG_LEVEL="verbose": want DEBUG, INFO, WARN or ERROR`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := baseEnv(c.env)
			for k, v := range env {
				if v == "\x00unset" {
					delete(env, k)
				}
			}
			_, err := LoadConfig(lookupFrom(env))
			var ee *EnvError
			if !errors.Is(err, ErrConfig) || !errors.As(err, &ee) {
				t.Fatalf("err = %v, want ErrConfig with an *EnvError", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q\ndoes not contain %q", err, c.msg)
			}
		})
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	_, err := LoadConfig(lookupFrom(map[string]string{"PERIOD": "x", "LOG_LEVEL": "y"}))
	for _, v := range []string{"QUEUE_URL", "JOB_NAME", "PERIOD", "LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error %v does not name %s", err, v)
		}
	}
}

// PERIOD meaning one minute is what the dispatcher does now; a function deployed by the
// previous construct (which always wrote PERIOD, "1m0s" by default) keeps starting.
func TestLoadConfigAcceptsPeriodOfOneMinute(t *testing.T) {
	for _, v := range []string{"1m", "1m0s", "60s", ""} {
		if _, err := LoadConfig(lookupFrom(baseEnv(map[string]string{"PERIOD": v}))); err != nil {
			t.Errorf("PERIOD=%q: %v", v, err)
		}
	}
}

// A job name that is a valid group id is not required of standard queues.
func TestLoadConfigStandardQueueNeedsNoGroup(t *testing.T) {
	cfg, err := LoadConfig(lookupFrom(baseEnv(map[string]string{
		"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", "JOB_NAME": "nächtlich"})))
	if err != nil || cfg.Fifo || cfg.DefaultGroupID != "" {
		t.Fatalf("cfg %+v err %v", cfg, err)
	}
}
