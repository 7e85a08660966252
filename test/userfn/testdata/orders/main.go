// Command orders is a consumer as a user writes it: the business effect and one call.
package main

import (
	"context"
	"fmt"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

func main() { consume.Start(charge) }

// charge runs at most once to completion per idempotency key, however often SQS delivers it.
func charge(ctx context.Context, msg consume.Message) ([]byte, error) {
	fmt.Println("charged order", msg.Key)
	return nil, nil
}
