// Command orders is the example's consumer: it writes each order (the message body, decoded
// and validated) to the orders table, at most once to completion per idempotency key.
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// Order is the message body. The idempotency key is read from it by the consumer
// (IDEMPOTENCY_KEY_SOURCE, default body:idempotencyKey) before the effect runs.
type Order struct {
	IdempotencyKey string `json:"idempotencyKey"`
	Customer       string `json:"customer"`
}

// Validate refuses an order without a customer: it goes to the DLQ at once, as bad input
// (body_invalid), and the effect never runs for it.
func (o Order) Validate() error {
	if o.Customer == "" {
		return errors.New("customer is required")
	}
	return nil
}

func main() { consume.StartWith(build) }

// build runs once per cold start and returns the effect.
func build(env consume.Env) (consume.Effect, error) {
	cfg, err := env.AWSConfig(consume.ServiceDynamoDB)
	table, ok := env.Lookup("ORDERS_TABLE_NAME")
	if err != nil || !ok {
		return nil, fmt.Errorf("ORDERS_TABLE_NAME set: %v; AWS config: %v", ok, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	return consume.JSON(func(ctx context.Context, msg consume.Message, o Order) ([]byte, error) {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{ // writes counts every write
			TableName: aws.String(table), UpdateExpression: aws.String("SET customer = :c ADD writes :one"),
			Key: map[string]ddb.AttributeValue{"orderId": &ddb.AttributeValueMemberS{Value: msg.Key}},
			ExpressionAttributeValues: map[string]ddb.AttributeValue{
				":c": &ddb.AttributeValueMemberS{Value: o.Customer}, ":one": &ddb.AttributeValueMemberN{Value: "1"}},
		})
		return nil, err
	}), nil
}
