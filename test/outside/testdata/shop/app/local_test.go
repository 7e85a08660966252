package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/local"
)

// The shop on this machine, as synthesized: 20 orders sent three times and one without a
// customer; 10 refunds and one that is not JSON.
func TestShopLocally(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	kit, err := local.Start(ctx, local.Options{Assembly: "../cdk.out"})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()
	// The refunds table exists in the account: here the test makes it, by the name the
	// parameter's default gives.
	outputs, _ := kit.Outputs()
	refunds := outputs["Shop"]["RefundsTableName"]
	if _, err := kit.DynamoDB().CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String(refunds), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("refundId"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("refundId"), AttributeType: types.ScalarAttributeTypeS}}}); err != nil {
		t.Fatal(err)
	}
	var orders, refundBodies []string
	for i := range 60 {
		orders = append(orders, fmt.Sprintf(`{"idempotencyKey":"o-%d","customer":"c-%d"}`, i%20, i%2))
	}
	for i := range 10 {
		refundBodies = append(refundBodies, fmt.Sprintf(`{"refundId":"r-%d","cents":%d}`, i, 100+i))
	}
	if err := kit.Send(ctx, "Intake", append(orders, `{"idempotencyKey":"o-x"}`)...); err != nil {
		t.Fatal(err)
	}
	if err := kit.Send(ctx, "Refunds", append(refundBodies, `not json`)...); err != nil {
		t.Fatal(err)
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	env, _ := kit.Env("Intake")
	rows, _ := kit.Scan(ctx, env["ORDERS_TABLE_NAME"])
	byCustomer, err := kit.DynamoDB().Query(ctx, &dynamodb.QueryInput{TableName: aws.String(env["ORDERS_TABLE_NAME"]), IndexName: aws.String("byCustomer"),
		KeyConditionExpression: aws.String("customer = :c"), ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "c-1"}}})
	if err != nil || len(rows) != 20 || byCustomer.Count != 10 {
		t.Errorf("%d orders, %v of customer c-1 (%v): want 20 and 10", len(rows), byCustomer, err)
	}
	refunded, _ := kit.Scan(ctx, refunds)
	badOrder, _ := kit.DeadLetters(ctx, "Intake")
	badRefund, _ := kit.DeadLetters(ctx, "Refunds")
	if len(refunded) != 10 || len(badOrder) != 1 || badOrder[0].Reason == "" || len(badRefund) != 1 || badRefund[0].Body != "not json" {
		t.Errorf("%d refunds, dead letters %+v and %+v", len(refunded), badOrder, badRefund)
	}
	if notRun := strings.Join(kit.NotRun(), "\n"); !strings.Contains(notRun, "orders-legacy") {
		t.Errorf("NotRun = %s, want the existing function orders-legacy", notRun)
	}
}
