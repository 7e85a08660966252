// Command shipping is the consumer function of the package's own-function example: a whole
// Lambda function built on functions/consume, which the construct deploys through Entry.
package main

import (
	"context"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

func main() { consume.Start(ship) }

// ship runs at most once to completion per idempotency key.
func ship(ctx context.Context, msg consume.Message) ([]byte, error) {
	// ... ship the order in msg.Body, keyed by msg.Key ...
	return nil, nil
}
