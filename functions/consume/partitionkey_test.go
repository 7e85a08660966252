package consume

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// A table keyed on another attribute than "id" works end to end on DynamoDB Local: the
// effect runs once for a key delivered twice, and the record is stored under the configured
// partition key (the "id" attribute is never written).
func TestPartitionKeyOnDynamoDBLocal(t *testing.T) {
	for _, sortKey := range []string{"", "sk"} {
		t.Run("sort key "+fmt.Sprintf("%q", sortKey), func(t *testing.T) {
			ctx := context.Background()
			table := fmt.Sprintf("consumer-pk-test-%d", tableSeq.Add(1))
			if err := srv.CreateTable(ctx, table, "pk", sortKey); err != nil {
				t.Fatalf("create table: %v\n%s", err, srv.Output())
			}
			env := map[string]string{"IDEMPOTENCY_TABLE_NAME": table, "IDEMPOTENCY_PARTITION_KEY": "pk"}
			if sortKey != "" {
				env["IDEMPOTENCY_SORT_KEY"], env["IDEMPOTENCY_TENANT_SOURCE"] = sortKey, "body:tenant"
			}
			out := &syncBuffer{}
			effects := 0
			h := Init(func(Env) (Effect, error) {
				return func(context.Context, Message) ([]byte, error) { effects++; return nil, nil }, nil
			}, WithLookup(lookupFrom(env)), WithOutput(out), WithDynamoDB(srv.Client()))
			for i := range 2 {
				ev := events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprint("m", i), `{"idempotencyKey":"k","tenant":"t1"}`)}}
				if resp, err := h(ctx, ev); err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("invocation %d: %v, %v\n%s", i, resp, err, out.buf.String())
				}
			}
			if effects != 1 {
				t.Errorf("effect ran %d times, want once", effects)
			}
			scan, err := srv.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
			if err != nil {
				t.Fatal(err)
			}
			if len(scan.Items) != 1 {
				t.Fatalf("%d items in the table, want 1 record", len(scan.Items))
			}
			item := scan.Items[0]
			if _, ok := item["pk"]; !ok {
				t.Errorf("the record has no pk attribute: %v", item)
			}
			if _, ok := item["id"]; ok {
				t.Errorf("the record has an id attribute on a table keyed on pk: %v", item)
			}
			if _, ok := item[idempotency.AttrExpiration]; !ok {
				t.Errorf("the record has no %s attribute (the TTL the table must be configured on): %v", idempotency.AttrExpiration, item)
			}
		})
	}
}
