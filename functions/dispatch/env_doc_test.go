package dispatch

import (
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/doccheck"
)

// docs/environment.md's dispatcher environment table is what LoadConfig reads, defaults included.
func TestREADMEEnvironmentTable(t *testing.T) {
	doccheck.CheckEnv(t, "../../docs/environment.md", "Dispatcher environment", LoadConfig, map[string]string{
		envQueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/orders", envJobName: "nightly",
	})
}
