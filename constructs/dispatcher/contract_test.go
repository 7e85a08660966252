package dispatcher_test

import (
	"testing"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/functions/dispatch"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// The environment contract holds from both ends: what the construct sets for a function
// built on functions/dispatch (the bundled one or yours) is what LoadConfig accepts, and the
// settings it reads back are the props'.
func TestEnvironmentLoadsInTheFunction(t *testing.T) {
	tests := []struct {
		name, queueURL, job, group string
		attempts                   int
	}{
		{"defaults", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", "Hourly", "", 5},
		{"fifo, tuned", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo", "tenant-sync", "shared", 8},
		{"own function", "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", "Encrypted", "", 5},
	}
	for i, d := range []dispatcher.ScheduledDispatcher{hourly, tenants, encrypted} {
		tt := tests[i]
		t.Run(tt.name, func(t *testing.T) {
			res := (*template.ToJSON())["Resources"].(map[string]any)[cdktest.LogicalID(stack, d.Function())].(map[string]any)
			vars := res["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
			env := map[string]string{}
			for k, v := range vars {
				if s, ok := v.(string); ok {
					env[k] = s
				} else if k == "QUEUE_URL" { // a reference CloudFormation resolves at deploy
					env[k] = tt.queueURL
				} else {
					t.Fatalf("%s = %s: a reference this test cannot resolve", k, cdktest.JSON(v))
				}
			}
			cfg, err := dispatch.LoadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatalf("the function refuses the construct's environment: %v", err)
			}
			if cfg.QueueURL != tt.queueURL || cfg.JobName != tt.job || cfg.DefaultGroupID != tt.group || cfg.SendMaxAttempts != tt.attempts {
				t.Errorf("config %+v does not match the props", cfg)
			}
		})
	}
}
