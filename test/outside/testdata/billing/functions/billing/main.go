// Command billing is the billing team's consumer: each invoice message, decoded and
// validated, becomes one row of the invoices table.
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// Invoice is the message body.
type Invoice struct {
	IdempotencyKey string `json:"idempotencyKey"`
	Cents          int    `json:"cents"`
}

// Validate refuses invoices that can never be billed: they go to the DLQ at once.
func (i Invoice) Validate() error {
	if i.Cents <= 0 {
		return errors.New("cents must be positive")
	}
	return nil
}

func main() { consume.StartWith(build) }

func build(env consume.Env) (consume.Effect, error) {
	cfg, err := env.AWSConfig(consume.ServiceDynamoDB)
	table, ok := env.Lookup("INVOICES_TABLE_NAME")
	if err != nil || !ok {
		return nil, fmt.Errorf("INVOICES_TABLE_NAME set: %v; AWS config: %v", ok, err)
	}
	db := dynamodb.NewFromConfig(cfg)
	return consume.JSON(func(ctx context.Context, msg consume.Message, inv Invoice) ([]byte, error) {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"invoiceId": &types.AttributeValueMemberS{Value: msg.Key},
			"cents":     &types.AttributeValueMemberN{Value: fmt.Sprint(inv.Cents)},
		}})
		return nil, err
	}), nil
}
