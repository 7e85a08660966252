// Command refunds is a plain Lambda function written with aws-lambda-go, no library of the
// pipeline's: each refund message becomes a row of the refunds table; a message it cannot
// read is reported failed, so that SQS retries it and then moves it to the DLQ.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type refund struct {
	RefundID string `json:"refundId"`
	Cents    int    `json:"cents"`
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	db, table := dynamodb.NewFromConfig(cfg), os.Getenv("REFUNDS_TABLE")
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			var in refund
			if err := json.Unmarshal([]byte(r.Body), &in); err != nil || in.RefundID == "" {
				fmt.Printf("refund %s unreadable: %v\n", r.MessageId, err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				continue
			}
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"refundId": &types.AttributeValueMemberS{Value: in.RefundID},
				"cents":    &types.AttributeValueMemberN{Value: fmt.Sprint(in.Cents)},
			}})
			if err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	})
}
