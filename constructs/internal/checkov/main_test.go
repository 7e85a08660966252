package checkov_test

import (
	"os"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

func TestMain(m *testing.M) { os.Exit(jsiitest.Run(m)) }
