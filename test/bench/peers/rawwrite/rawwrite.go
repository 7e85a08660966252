// Package rawwrite is the peer benchmark's limit: per record, only the two DynamoDB writes an
// idempotent consumer cannot do without, through the SDK client as the consumer builds it. The
// raw loop (a process of its own) and rawfn (the same writes as a Lambda function) share it.
package rawwrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Guarantees says what the limit does and does not do, for the report.
const Guarantees = "none beyond the two writes: conditional acquire (attribute_not_exists) + unconditional complete; " +
	"no lock expiry, no fencing, no payload check, no release, no retries, no logs"

// Writer does the two writes per record on one client whose connection pool keeps a
// connection per concurrent record.
type Writer struct {
	client *dynamodb.Client
	table  string
}

// New returns a Writer for table at endpoint, for up to conc records at once.
func New(endpoint, table string, conc int) *Writer {
	return &Writer{table: table, client: dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = conc
		}),
	})}
}

// Record parses body for its key, acquires it with one conditional UpdateItem (a failed
// condition means a duplicate: effect false, no error), runs the effect (parses the body) and
// completes it with one UpdateItem.
func (w *Writer) Record(ctx context.Context, body string) (effect bool, err error) {
	var msg struct {
		IdempotencyKey string `json:"idempotencyKey"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.IdempotencyKey == "" {
		return false, fmt.Errorf("bad body %q: %v", body, err)
	}
	key := map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "raw#" + msg.IdempotencyKey}}
	now := time.Now()
	_, err = w.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(w.table),
		Key:                      key,
		UpdateExpression:         aws.String("SET #s = :inprogress, #e = :exp"),
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#s": "status", "#e": "expiration", "#id": "id"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": &types.AttributeValueMemberS{Value: "INPROGRESS"},
			":exp":        &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(24*time.Hour).Unix(), 10)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil // duplicate
	}
	if err != nil {
		return false, err
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil { // the business effect
		return false, err
	}
	if _, err := w.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.table),
		Key:                       key,
		UpdateExpression:          aws.String("SET #s = :completed"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":completed": &types.AttributeValueMemberS{Value: "COMPLETED"}},
	}); err != nil {
		return true, err
	}
	return true, nil
}
