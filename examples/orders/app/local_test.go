package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/local"
)

// The orders pipeline end to end on this machine (package local), from this module: its own
// consumer built from functions/orders, the stack's queues and orders table, a stand-in for
// the imported idempotency table. Forty orders are sent three times each (SQS delivers at
// least once) with three bad bodies, and the first ten writes to the orders table are
// refused (as while a new grant propagates): every order row is written once, the bad
// bodies end in the DLQ with their reason, and nothing else does.
func TestOrdersRunLocally(t *testing.T) {
	dir := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(dir),
		Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}}) // the kit builds the function itself
	NewOrdersStack(app, "Orders", &OrdersStackProps{IdempotencyTableName: tableName, AlarmTopicArn: topicArn, Entry: "../functions/orders"})
	app.Synth(nil)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	kit, err := local.Start(ctx, local.Options{Assembly: dir, VisibilityTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()
	env, _ := kit.Env("Orders")
	orders := env["ORDERS_TABLE_NAME"]
	var refused atomic.Int64 // calls come from both environments at once: count them here
	kit.InjectDynamoDB(func(c local.DynamoDBCall) string {
		if c.Table == orders && c.Op == "UpdateItem" && refused.Add(1) <= 10 {
			return "AccessDeniedException"
		}
		return ""
	})
	var bodies []string
	for range 3 {
		for i := range 40 {
			bodies = append(bodies, fmt.Sprintf(`{"idempotencyKey":"order-%d","customer":"c-%d"}`, i, i%7))
		}
	}
	bad := []string{`not json`, `{"customer":"c-1"}`, `{"idempotencyKey":"order-x"}`} // no JSON, no key, no customer
	if err := kit.Send(ctx, "Orders", append(bodies, bad...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}

	rows, err := kit.Scan(ctx, orders)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]float64{}
	for _, r := range rows {
		written[r["orderId"].(string)] = r["writes"].(float64)
	}
	for i := range 40 {
		if id := fmt.Sprintf("order-%d", i); written[id] != 1 {
			t.Errorf("%s written %v times, want once", id, written[id])
		}
	}
	if len(rows) != 40 || kit.Injected() != 10 {
		t.Errorf("%d order rows, want 40; %d writes refused, want 10", len(rows), kit.Injected())
	}
	dead, err := kit.DeadLetters(ctx, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range dead {
		if want := map[string]string{`not json`: "body_not_json: ", `{"customer":"c-1"}`: "value_missing: ",
			`{"idempotencyKey":"order-x"}`: "body_invalid: "}[m.Body]; want == "" || !strings.HasPrefix(m.Reason, want) {
			t.Errorf("dead letter %q: reason %q, want %q...", m.Body, m.Reason, want)
		}
		got = append(got, m.Body)
	}
	if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(bad))) {
		t.Errorf("DLQ holds %q, want the bad bodies %q", got, bad)
	}
	if oc, _ := kit.Outcomes("Orders"); oc["effect_failed"] < 10 {
		t.Errorf("outcomes %v: want the 10 refused writes as failed effects", oc)
	}
}
