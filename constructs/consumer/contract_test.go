package consumer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/consume"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// deployedEnv is the environment CloudFormation would give c's function: the template's
// variables, with the references it resolves at deploy replaced by plausible values.
func deployedEnv(t *testing.T, tpl assertions.Template, s awscdk.Stack, c consumer.IdempotentConsumer) map[string]string {
	t.Helper()
	res := (*tpl.ToJSON())["Resources"].(map[string]any)[cdktest.LogicalID(s, c.Function())].(map[string]any)
	vars := res["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	deployed := map[string]string{
		"IDEMPOTENCY_TABLE_NAME": "idempotency",
		"DEAD_LETTER_QUEUE_URL":  "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
	}
	env := map[string]string{}
	for k, v := range vars {
		switch v := v.(type) {
		case string:
			env[k] = v
		default:
			lit, ok := deployed[k]
			if !ok {
				t.Fatalf("%s = %s: a reference this test cannot resolve", k, cdktest.JSON(v))
			}
			env[k] = lit
		}
	}
	return env
}

// The environment contract holds from both ends: what the construct sets for a function
// built on functions/consume (the bundled one or yours) is what LoadConfig accepts, and the
// settings it reads back are the props'. A variable the construct renamed or a value the
// function refuses fails here, not on the first message after a deploy.
func TestEnvironmentLoadsInTheFunction(t *testing.T) {
	tests := []struct {
		name                 string
		c                    consumer.IdempotentConsumer
		partitionKey, sort   string
		lockCap, ttl         time.Duration
		deadLetter, validate bool
	}{
		{"defaults", standard, "id", "", 30 * time.Second, 600 * time.Hour, true, true},
		{"fifo composite key", fifo, "id", "key", time.Minute, 840 * time.Hour, true, true},
		{"tuned", tuned, "id", "", 90 * time.Second, 48 * time.Hour, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := deployedEnv(t, template, stack, tt.c)
			cfg, err := consume.LoadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatalf("the function refuses the construct's environment: %v", err)
			}
			idem := cfg.Idempotency
			if idem.TableName != "idempotency" || idem.KeyPrefix != tt.c.KeyPrefix() || idem.PartitionKeyAttr != tt.partitionKey ||
				idem.SortKeyAttr != tt.sort || idem.LockCap != tt.lockCap || idem.RecordTTL != tt.ttl || idem.ValidatePayload != tt.validate || idem.Disabled {
				t.Errorf("idempotency config %+v does not match the props", idem)
			}
			if (cfg.DeadLetterQueueURL != "") != tt.deadLetter {
				t.Errorf("DeadLetterQueueURL = %q, dead-lettering want %v", cfg.DeadLetterQueueURL, tt.deadLetter)
			}
		})
	}
}

// One grammar, two ends: every key and tenant source below gets the same verdict from the
// construct (its KeySource or TenantSource prop, at synth) and from the function
// (functions/consume's LoadConfig, at cold start). The rows include those the two used to
// disagree on: a name with a leading or doubled period and a body field of 200 "é" passed
// synth and then failed every invocation; a body field with a space was refused at synth,
// though the function reads it.
func TestSourcesGetOneVerdict(t *testing.T) {
	long := strings.Repeat("é", 200) // 200 characters, 400 bytes
	sources := []string{
		"body:idempotencyKey", "attribute:Key", "body:order id", "body:" + long, "body:" + strings.Repeat("k", 256),
		"body:" + strings.Repeat("k", 257), "body:é", "body:", "attribute:", "attribute:.key", "attribute:key.",
		"attribute:a..b", "attribute:a.b", "attribute:AWS.TraceHeader", "attribute:amazon.x", "attribute:order id",
		"attribute:" + strings.Repeat("a", 256), "attribute:" + strings.Repeat("a", 257), "attribute:é", "header:Key",
		"idempotencyKey", "body", "group", "Group", " body:key", "body:key ", "body:a:b", "body:\xff",
	}
	// A construct that always fails validation (MemorySize 64), so that none is added to the
	// tree: its verdict on the source is whether one of its problems names the prop.
	refusedAtSynth := func(id string, props consumer.IdempotentConsumerProps, prop string) (bool, string) {
		props.Queue, props.Function.MemorySize = stdSpec, 64
		var problems []string
		func() {
			defer func() {
				verr, ok := validate.AsError(recover())
				if !ok {
					t.Fatalf("%s: want a validation error (MemorySize 64 is invalid), got none or another panic", id)
				}
				problems = verr.Problems
			}()
			consumer.NewIdempotentConsumer(stack, id, &props)
		}()
		for _, p := range problems {
			if strings.HasPrefix(p, prop+":") {
				return true, p
			}
		}
		return false, ""
	}
	refusedAtStart := func(env map[string]string, name string) (bool, string) {
		env["IDEMPOTENCY_TABLE_NAME"] = "idempotency"
		_, err := consume.LoadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		switch {
		case err == nil:
			return false, ""
		case !strings.Contains(err.Error(), name+"="):
			t.Fatalf("LoadConfig: %v, want no error or one naming %s", err, name)
		}
		return true, err.Error()
	}
	verdict := map[bool]string{false: "accepts", true: "refuses"}
	for i, src := range sources {
		synth, why := refusedAtSynth(fmt.Sprintf("KeySource%d", i), consumer.IdempotentConsumerProps{Table: simpleTable, KeySource: src}, "KeySource")
		start, whyStart := refusedAtStart(map[string]string{"IDEMPOTENCY_KEY_SOURCE": src}, "IDEMPOTENCY_KEY_SOURCE")
		if synth != start {
			t.Errorf("key source %.40q: the construct %s it (%s), the function %s it (%s)", src, verdict[synth], why, verdict[start], whyStart)
		}
		tsynth, why := refusedAtSynth(fmt.Sprintf("TenantSource%d", i), consumer.IdempotentConsumerProps{Table: compositeTable, TenantSource: src}, "TenantSource")
		tstart, whyStart := refusedAtStart(map[string]string{"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": src}, "IDEMPOTENCY_TENANT_SOURCE")
		if tsynth != tstart {
			t.Errorf("tenant source %.40q: the construct %s it (%s), the function %s it (%s)", src, verdict[tsynth], why, verdict[tstart], whyStart)
		}
		t.Logf("%-44.44q key: %s; tenant: %s", src, verdict[synth], verdict[tsynth])
	}
	// The key prefix too: the construct took only 1 to 100 of A-Za-z0-9._- (stricter than
	// the function, not one rule), and let a prefix of invalid UTF-8 through.
	for i, prefix := range []string{"orders", "orders v2", "bestellungen-ä", "a#b", strings.Repeat("p", 1024), strings.Repeat("p", 1025), "a\xffb", "#"} {
		synth, why := refusedAtSynth(fmt.Sprintf("KeyPrefix%d", i), consumer.IdempotentConsumerProps{Table: simpleTable, KeyPrefix: prefix}, "KeyPrefix")
		start, whyStart := refusedAtStart(map[string]string{"IDEMPOTENCY_KEY_PREFIX": prefix}, "IDEMPOTENCY_KEY_PREFIX")
		if synth != start {
			t.Errorf("key prefix %.40q: the construct %s it (%s), the function %s it (%s)", prefix, verdict[synth], why, verdict[start], whyStart)
		}
		t.Logf("%-44.44q key prefix: %s", prefix, verdict[synth])
	}
}
