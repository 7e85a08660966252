package consume_test

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// The main of a consumer whose effect writes to a DynamoDB table of its own: the client is
// built once per cold start, from the same environment as the function's own clients.
func ExampleStartWith() {
	consume.StartWith(func(env consume.Env) (consume.Effect, error) {
		awsCfg, err := env.AWSConfig(consume.ServiceDynamoDB)
		if err != nil {
			return nil, err // every invocation fails with it, logged once
		}
		ledger := dynamodb.NewFromConfig(awsCfg)
		table, ok := env.Lookup("LEDGER_TABLE")
		if !ok {
			return nil, fmt.Errorf("LEDGER_TABLE is not set")
		}
		return func(ctx context.Context, msg consume.Message) ([]byte, error) {
			_, _ = ledger, table // ... ledger.PutItem(ctx, ...) for msg.Key ...
			return nil, nil
		}, nil
	})
}

// Init is what Start runs at a cold start; a test drives the handler it returns. Here the
// idempotency table is off, so no AWS environment is needed.
func ExampleInit() {
	env := map[string]string{"IDEMPOTENCY_DISABLED": "true"}
	handle := consume.Init(func(consume.Env) (consume.Effect, error) {
		return func(ctx context.Context, msg consume.Message) ([]byte, error) {
			fmt.Println("charged", msg.Key)
			return nil, nil
		}, nil
	}, consume.WithLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }), consume.WithOutput(io.Discard))

	resp, err := handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: `{"idempotencyKey":"order-42"}`},
	}})
	fmt.Println(len(resp.BatchItemFailures), "failures", err)
	// Output:
	// charged order-42
	// 0 failures <nil>
}
