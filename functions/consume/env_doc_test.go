package consume

import (
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/doccheck"
)

// docs/environment.md's consumer environment table is what LoadConfig reads, defaults included.
func TestREADMEEnvironmentTable(t *testing.T) {
	doccheck.CheckEnv(t, "../../docs/environment.md", "Consumer environment", LoadConfig, map[string]string{envTableName: "orders-idempotency"})
}
