// Command orders is the example's consumer: it writes each order (the message body) to the
// orders table, at most once to completion per idempotency key.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

func main() { consume.StartWith(build) }

// build runs once per cold start and returns the effect.
func build(env consume.Env) (consume.Effect, error) {
	cfg, err := env.AWSConfig(consume.ServiceDynamoDB)
	table, ok := env.Lookup("ORDERS_TABLE_NAME")
	if err != nil || !ok {
		return nil, fmt.Errorf("ORDERS_TABLE_NAME set: %v; AWS config: %v", ok, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	return func(ctx context.Context, msg consume.Message) ([]byte, error) {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{ // writes counts every write
			TableName: aws.String(table), UpdateExpression: aws.String("SET body = :b ADD writes :one"),
			Key: map[string]ddb.AttributeValue{"orderId": &ddb.AttributeValueMemberS{Value: msg.Key}},
			ExpressionAttributeValues: map[string]ddb.AttributeValue{
				":b": &ddb.AttributeValueMemberS{Value: msg.Body}, ":one": &ddb.AttributeValueMemberN{Value: "1"}},
		})
		return nil, err
	}, nil
}
