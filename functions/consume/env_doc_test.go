package consume

import (
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/doccheck"
)

// README.md's consumer environment table is what LoadConfig reads, defaults included.
func TestREADMEEnvironmentTable(t *testing.T) {
	doccheck.CheckEnv(t, "../../README.md", "Consumer environment", LoadConfig, map[string]string{envTableName: "orders-idempotency"})
}
