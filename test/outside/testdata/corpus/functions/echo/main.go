// Command echo is the corpus's function, a plain aws-lambda-go handler as teams write one:
// it logs each record it is given, writes it to the table SEEN_TABLE names (when set), and
// reports a record whose body starts with "fail" as failed, so that SQS retries it and then
// moves it to the queue's DLQ. With REQUIRED_TABLE set it checks at init that the table
// exists and panics when it does not. A record "whoami" makes it ask STS who it is, and log the
// answer or the error: a call to a service of AWS that the app reaches from a function.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	db, table := dynamodb.NewFromConfig(cfg), os.Getenv("SEEN_TABLE")
	if required := os.Getenv("REQUIRED_TABLE"); required != "" { // as functions check their tables at init
		if _, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(required)}); err != nil {
			panic("Table not available: " + required)
		}
	}
	id := sts.NewFromConfig(cfg)
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			line, _ := json.Marshal(map[string]string{"seen": r.Body, "source": r.EventSourceARN})
			fmt.Println(string(line))
			if r.Body == "whoami" {
				out, err := id.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
				line, _ = json.Marshal(map[string]any{"whoami": fmt.Sprint(out != nil && out.Account != nil), "error": fmt.Sprint(err)})
				fmt.Println(string(line))
			}
			if strings.HasPrefix(r.Body, "fail") {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				continue
			}
			if table == "" {
				continue
			}
			if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: r.Body}}}); err != nil {
				return resp, fmt.Errorf("table %s: %w", table, err)
			}
		}
		return resp, nil
	})
}
