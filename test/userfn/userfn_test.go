// Package userfn proves that the public API of functions/consume is enough to write a whole
// consumer from outside this module's functions/ tree: testdata/orders is such a main, built
// as bundling builds it and run under the local Lambda Runtime API against DynamoDB Local.
package userfn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var srv *dynamolocal.Server

func TestMain(m *testing.M) { os.Exit(testmain.With(m, dynamolocal.Start, &srv)) }

// Two copies of one message (SQS delivers at least once: two MessageIds, one key), in one
// batch and again in a second invocation: the user's effect runs once.
func TestUserMainRunsTheEffectOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	if err := lambdart.Build(ctx, "./testdata/orders", bin); err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("userfn-%d", time.Now().UnixNano())
	if err := srv.CreateTable(ctx, table, "id", ""); err != nil {
		t.Fatalf("create table: %v\n%s", err, srv.Output())
	}
	var mu sync.Mutex
	var lines []string
	fn, err := lambdart.New(lambdart.Config{
		Binary:  bin,
		Timeout: 30 * time.Second,
		Env: map[string]string{
			"IDEMPOTENCY_TABLE_NAME":    table,
			"AWS_ENDPOINT_URL_DYNAMODB": srv.Endpoint(),
		},
		Output: func(line []byte) { mu.Lock(); lines = append(lines, string(line)); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()

	body := `{"idempotencyKey":"order-42","amount":100}`
	copyOf := func(id string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	}
	invoke := func(records ...events.SQSMessage) (failed []string) {
		t.Helper()
		payload, _ := json.Marshal(events.SQSEvent{Records: records})
		res, err := fn.Invoke(ctx, payload)
		if err != nil || res.FunctionError != nil {
			t.Fatalf("invoke: %v %v", err, res.FunctionError)
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res.Payload, &resp); err != nil {
			t.Fatalf("response %s: %v", res.Payload, err)
		}
		for _, f := range resp.BatchItemFailures {
			failed = append(failed, f.ItemIdentifier)
		}
		return failed
	}
	// Both copies at once: one runs the effect; the other finds the key locked (reported
	// for redelivery) or completed (a duplicate), depending on which comes first.
	failed := invoke(copyOf("copy-1"), copyOf("copy-2"))
	if len(failed) > 1 {
		t.Fatalf("first invocation failed %v: at most the copy that found the key in flight may fail", failed)
	}
	// SQS redelivers what failed, and at-least-once delivery may bring copy-2 yet again.
	redelivered := []events.SQSMessage{copyOf("copy-2")}
	for _, id := range failed {
		if id != "copy-2" {
			redelivered = append(redelivered, copyOf(id))
		}
	}
	if failed := invoke(redelivered...); len(failed) != 0 {
		t.Fatalf("redelivery failed %v, want every copy acknowledged as a duplicate", failed)
	}
	fn.Close() // waits for the process: every line is in
	mu.Lock()
	defer mu.Unlock()
	charged := 0
	for _, l := range lines {
		if l == "charged order order-42" {
			charged++
		}
	}
	if charged != 1 {
		t.Errorf("the effect ran %d times, want once:\n%s", charged, strings.Join(lines, "\n"))
	}
}
