// Command oursfn is the consumer as the peer benchmark runs it: the library path
// (consume.Start, the main a user writes) with the effect every peer runs, parsing the
// message body as JSON, instead of the deployed default's "effect applied" log line. Every
// guarantee is the consumer's own; only the business effect is the benchmark's. The benchmark
// counts its effects from the "record outcome" lines with outcome "processed", one per effect
// that ran and completed.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

func main() {
	consume.Start(func(_ context.Context, msg consume.Message) ([]byte, error) {
		var v any
		if err := json.Unmarshal([]byte(msg.Body), &v); err != nil {
			return nil, fmt.Errorf("body: %w: %w", consume.ErrInvalidInput, err)
		}
		return nil, nil
	})
}
