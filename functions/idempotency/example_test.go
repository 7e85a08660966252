package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// A consumer builds the client and the Guard once at cold start, and maps Run's outcome to
// "acknowledge" (nil) or "report as a batch item failure" (an error).
func Example() {
	client := dynamodb.New(dynamodb.Options{Region: "eu-west-1"}, idempotency.WithoutSDKRetries)
	// In a Lambda: dynamodb.NewFromConfig(awsCfg, idempotency.WithoutSDKRetries)
	guard, err := idempotency.New(client, idempotency.Config{
		TableName:       "idempotency",
		KeyPrefix:       "consumer",
		LockCap:         30 * time.Second, // the function timeout
		ValidatePayload: true,
	})
	if err != nil {
		fmt.Println(err) // invalid configuration: fail the cold start
		return
	}
	handle := func(ctx context.Context, key string, body []byte) error {
		res, err := guard.Run(ctx, idempotency.Request{Key: key, Payload: body},
			func(ctx context.Context) ([]byte, error) {
				return nil, nil // the side effect, once per key
			})
		switch {
		case err == nil:
			slog.InfoContext(ctx, "record done", "key", key, "outcome", res.Outcome, "attempt", res.Attempt, "tookOver", res.TookOver)
			return nil
		case errors.Is(err, idempotency.ErrInProgress):
			return err // another worker has it: SQS delivers it again after the visibility timeout
		case errors.Is(err, idempotency.ErrPayloadMismatch), errors.Is(err, idempotency.ErrInvalidRequest):
			return err // bad input: after maxReceiveCount it lands in the DLQ
		default:
			return err // *HandlerError, ErrLockLost, *StoreError: retry through SQS
		}
	}
	_ = handle
}

// With Disabled the handler runs every time, with no table: for local runs only.
func ExampleConfig_disabled() {
	guard, err := idempotency.New(nil, idempotency.Config{Disabled: true})
	if err != nil {
		panic(err)
	}
	for range 2 {
		res, err := guard.Run(context.Background(), idempotency.Request{Key: "k"},
			func(context.Context) ([]byte, error) { return []byte("done"), nil })
		fmt.Println(res.Outcome, string(res.Data), err)
	}
	// Output:
	// processed done <nil>
	// processed done <nil>
}

// New reports every problem of a Config at once, each naming the field and the fix.
func ExampleNew_invalid() {
	_, err := idempotency.New(nil, idempotency.Config{TableName: "t", CacheSize: -1})
	fmt.Println(errors.Is(err, idempotency.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// invalid idempotency config: DynamoDBAPI is nil: pass a *dynamodb.Client (built with idempotency.WithoutSDKRetries), or set Config.Disabled
	// Config.CacheSize = -1: must be >= 1 to cache COMPLETED records, or 0 to turn the cache off
}
