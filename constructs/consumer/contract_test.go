package consumer_test

import (
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
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
