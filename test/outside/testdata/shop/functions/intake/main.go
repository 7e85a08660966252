// Command intake is the shop's order consumer: each order, decoded and validated, becomes
// one row of the orders table.
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// Order is the message body.
type Order struct {
	IdempotencyKey string `json:"idempotencyKey"`
	Customer       string `json:"customer"`
}

// Validate refuses an order without a customer: it goes to the DLQ at once.
func (o Order) Validate() error {
	if o.Customer == "" {
		return errors.New("customer is required")
	}
	return nil
}

func main() { consume.StartWith(build) }

func build(env consume.Env) (consume.Effect, error) {
	cfg, err := env.AWSConfig(consume.ServiceDynamoDB)
	table, ok := env.Lookup("ORDERS_TABLE_NAME")
	if err != nil || !ok {
		return nil, fmt.Errorf("ORDERS_TABLE_NAME set: %v; AWS config: %v", ok, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	return consume.JSON(func(ctx context.Context, msg consume.Message, o Order) ([]byte, error) {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"orderId":   &types.AttributeValueMemberS{Value: msg.Key},
			"customer":  &types.AttributeValueMemberS{Value: o.Customer},
			"expiresAt": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(90*24*time.Hour).Unix(), 10)},
		}})
		return nil, err
	}), nil
}
