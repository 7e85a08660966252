//go:build e2e

// Package examples runs the worked examples' own functions end to end: the consumer of
// examples/orders (a separate Go module with its own effect), built as bundling builds it
// and configured from the example's synthesized template, on ElasticMQ + DynamoDB Local.
// `make e2e` synthesizes the example (with GOFLAGS=-trimpath) into EXAMPLES_ORDERS_ASSEMBLY.
package examples

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/local"
)

const (
	orders   = 40
	copies   = 3 // every order is sent this often: SQS delivers at least once
	envCount = 3
	// failedWrites is how many writes to the orders table fail (see the test).
	failedWrites = 10
	// visibility replaces the template's 180 s (6 x the 30 s function timeout) on the local
	// queue, so a failed record comes back in seconds: the timing changes, not the semantics.
	visibility = 4 * time.Second
)

// Orders sent three times each, the first ten writes to the orders table failing (the effect
// fails, the key is released and SQS redelivers the record): every order row is written
// exactly once, and nothing is left in a queue.
func TestOrdersExampleWritesEachRowOnce(t *testing.T) {
	asm := os.Getenv("EXAMPLES_ORDERS_ASSEMBLY")
	if asm == "" {
		t.Fatal("EXAMPLES_ORDERS_ASSEMBLY is not set: run `make e2e`, which synthesizes examples/orders")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	sqsSrv, err := sqslocal.StartContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sqsSrv.Close()
	ddbSrv, err := dynamolocal.StartContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ddbSrv.Stop()
	sq, db := sqsSrv.Client(), ddbSrv.Client()

	tmpl, err := local.LoadAssembly(asm)
	if err != nil {
		t.Fatal(err)
	}
	d, err := local.Deploy(ctx, sq, db, tmpl, "ex")
	if err != nil {
		t.Fatal(err)
	}
	pipelines, err := tmpl.Pipelines()
	if err != nil || len(pipelines) != 1 {
		t.Fatalf("want the one orders pipeline, got %v (%v)", pipelines, err)
	}
	p := pipelines[0]
	env, err := d.Env(p.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	// The idempotency table exists before the stack (Powertools' layout: id, TTL on
	// expiration); the template only names it.
	if err := ddbSrv.CreateTable(ctx, env["IDEMPOTENCY_TABLE_NAME"], env["IDEMPOTENCY_PARTITION_KEY"], ""); err != nil {
		t.Fatalf("create the existing idempotency table: %v", err)
	}
	ordersTable := env["ORDERS_TABLE_NAME"]
	if _, err := sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(d.QueueURL[p.Queue]),
		Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility.Seconds()))}}); err != nil {
		t.Fatal(err)
	}

	// The first failedWrites writes to the orders table are refused with an error the SDK
	// does not retry (as while a new IAM grant propagates): the effect fails, its key is
	// released, and SQS redelivers the record after the visibility timeout.
	proxy, err := ddbproxy.New(ddbSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var refused atomic.Int64
	proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if c.Table == ordersTable && c.Op == "UpdateItem" && refused.Add(1) <= failedWrites {
			return ddbproxy.Fault{Status: 400, Type: "AccessDeniedException"}
		}
		return ddbproxy.Fault{}
	}

	bin := buildOrders(ctx, t)
	env["AWS_ENDPOINT_URL_DYNAMODB"] = proxy.URL
	env["AWS_ENDPOINT_URL_SQS"] = sqsSrv.Endpoint()
	fn := tmpl.Functions[p.Consumer]
	var envs []local.Invoker
	for i := range envCount {
		e, err := lambdart.New(lambdart.Config{
			Binary: bin, Env: env, FunctionName: fmt.Sprintf("orders-%d", i),
			Timeout: time.Duration(fn.Timeout) * time.Second, MemoryMB: fn.MemoryMB, Region: sqslocal.Region,
			Output: func([]byte) {},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		envs = append(envs, local.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
			res, err := e.Invoke(ctx, payload)
			if err == nil && res.FunctionError != nil {
				err = res.FunctionError
			}
			return res.Payload, err
		}))
	}

	queueURL := d.QueueURL[p.Queue]
	// Copies are byte for byte the same message (a different body under the same key would
	// be a payload mismatch, dead-lettered as bad input).
	for range copies {
		for i := range orders {
			body := fmt.Sprintf(`{"idempotencyKey":"order-%d","customer":"c-%d"}`, i, i%7)
			if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	pollCtx, stop := context.WithCancel(ctx)
	poller := &local.Poller{SQS: sq, QueueURL: queueURL, QueueARN: d.QueueARN[p.Queue], Region: sqslocal.Region, Mapping: p.Mapping, Envs: envs}
	done := make(chan error, 1)
	go func() { done <- poller.Run(pollCtx) }()
	// Drained: nothing visible or in flight (a failed record is in flight until its
	// visibility timeout ends). Bounded by the copies' redeliveries with a wide margin.
	deadline := time.Now().Add(2*time.Minute + copies*visibility)
	for !drained(ctx, t, sq, queueURL) {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("queue not drained after %v (invocations %d, failed records %d)",
				time.Since(start).Round(time.Second), poller.Stats.Invocations.Load(), poller.Stats.ReportedFailed.Load())
		}
		time.Sleep(500 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fmt.Printf("FIGURE examples/orders: %d orders x %d copies drained in %v, %d invocations, %d records reported failed, %d writes refused\n",
		orders, copies, time.Since(start).Round(100*time.Millisecond), poller.Stats.Invocations.Load(),
		poller.Stats.ReportedFailed.Load(), proxy.Injected.Load())

	if proxy.Injected.Load() != failedWrites || poller.Stats.ReportedFailed.Load() < failedWrites {
		t.Fatalf("%d writes refused, %d records reported failed; want %d of each: the test proved nothing about redeliveries",
			proxy.Injected.Load(), poller.Stats.ReportedFailed.Load(), failedWrites)
	}
	writes := scanWrites(ctx, t, db, ordersTable)
	for i := range orders {
		id := fmt.Sprintf("order-%d", i)
		if writes[id] != 1 {
			t.Errorf("%s written %d times, want exactly once", id, writes[id])
		}
		delete(writes, id)
	}
	if len(writes) > 0 {
		t.Errorf("unexpected order rows: %v", writes)
	}
	if n := visible(ctx, t, sq, d.QueueURL[p.DLQ]); n != 0 {
		t.Errorf("%d messages in the DLQ, want 0: every order is good input", n)
	}
}

// buildOrders compiles the example's function as bundling does, in the example's own module.
func buildOrders(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	args := append([]string{"build"}, lambdart.BuildFlags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", bin, "./orders/functions/orders")...)
	cmd.Dir = filepath.Join("..", "..", "examples")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build examples/orders/functions/orders: %v\n%s", err, out)
	}
	return bin
}

func drained(ctx context.Context, t *testing.T, sq *sqs.Client, url string) bool {
	t.Helper()
	out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
}

func visible(ctx context.Context, t *testing.T, sq *sqs.Client, url string) int {
	t.Helper()
	out, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	return n
}

// scanWrites returns each order row's write count.
func scanWrites(ctx context.Context, t *testing.T, db *dynamodb.Client, table string) map[string]int {
	t.Helper()
	writes := map[string]int{}
	pages := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			id, _ := item["orderId"].(*dbtypes.AttributeValueMemberS)
			n, _ := item["writes"].(*dbtypes.AttributeValueMemberN)
			if id == nil || n == nil {
				t.Fatalf("order row without orderId or writes: %v", item)
			}
			writes[id.Value], _ = strconv.Atoi(n.Value)
		}
	}
	return writes
}
