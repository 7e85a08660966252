package main

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/policy"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
)

// The policy `pipelinectl policy` prints allows every call the commands make, on the
// resource it is made on: the commands run through proxies that record each call's
// operation and queue or table, and each is checked against the generated document.
func TestOperatorPolicyCoversEveryCall(t *testing.T) {
	p := newPipe(t, false)
	fillDLQ(t, p, "", "m1", "m2", "bad-1")
	g, err := idempotency.New(ddbSrv.Client(), idempotency.Config{TableName: p.table, KeyPrefix: p.name, LockCap: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(t.Context(), idempotency.Request{Key: "k"}, func(ctx context.Context) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}

	type call struct{ op, target string }
	var mu sync.Mutex
	var calls []call
	observe := func(c ddbproxy.Call, body []byte) {
		var req struct{ QueueUrl, QueueName, SourceArn, TableName string }
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{c.Op, req.QueueUrl + req.QueueName + req.SourceArn + req.TableName})
	}
	sqsProxy, err := ddbproxy.New(sqsSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer sqsProxy.Close()
	ddbProxy, err := ddbproxy.New(ddbSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer ddbProxy.Close()
	for _, px := range []*ddbproxy.Proxy{sqsProxy, ddbProxy} {
		px.Rewrite = func(c ddbproxy.Call, body []byte) []byte { observe(c, body); return body }
	}
	t.Setenv("AWS_ENDPOINT_URL_SQS", sqsProxy.URL)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddbProxy.URL)

	for _, c := range []struct {
		args []string
		exit int
	}{
		{p.args("dlq", "inspect"), cli.ExitOK},
		{p.args("dlq", "redrive"), cli.ExitOK},
		{p.args("dlq", "redrive", "--yes"), cli.ExitLeft},                    // receive, send, delete: bad input stays
		{p.args("dlq", "redrive", "--yes", "--include-invalid"), cli.ExitOK}, // the move task
		{p.args("record", "get", "k"), cli.ExitOK},
	} {
		ctlWant(t, c.exit, c.args...)
	}
	// A release (GetItem, then the conditional UpdateItem): of a live lock, forced, from
	// inside the attempt that holds it.
	if _, err := g.Run(t.Context(), idempotency.Request{Key: "held"}, func(ctx context.Context) ([]byte, error) {
		mustCtl(t, p.args("record", "release", "held", "--force")...)
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}

	var doc policy.Document
	if err := json.Unmarshal([]byte(mustCtl(t, p.args("policy")...)), &doc); err != nil {
		t.Fatal(err)
	}
	queueArn := func(u string) string { a, _ := policy.ARNOfQueueURL(u, "us-east-1"); return a }
	allowed := func(action, resource string) bool {
		for _, st := range doc.Statement {
			if slices.Contains(st.Action, action) && slices.Contains(st.Resource, resource) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, c := range calls {
		service, resource := "sqs", c.target
		switch {
		case strings.HasPrefix(c.target, "http"):
			resource = queueArn(c.target)
		case strings.HasPrefix(c.target, "arn:"):
		case c.op == "GetQueueUrl":
			resource = "arn:aws:sqs:us-east-1:123456789012:" + c.target
		default: // a table
			service, resource = "dynamodb", "arn:aws:dynamodb:us-east-1:123456789012:table/"+c.target
		}
		// SQS's batch calls are authorized by the action of the call they batch
		// (ChangeMessageVisibilityBatch by sqs:ChangeMessageVisibility).
		action := service + ":" + strings.TrimSuffix(c.op, "Batch")
		seen[action] = true
		if !allowed(action, resource) {
			t.Errorf("%s on %s is made by a command but not allowed by the policy", action, resource)
		}
	}
	t.Logf("%d calls, %d actions, all allowed: %v", len(calls), len(seen), slices.Sorted(maps.Keys(seen)))
	for _, want := range []string{"sqs:ReceiveMessage", "sqs:SendMessage", "sqs:DeleteMessage", "sqs:StartMessageMoveTask", "dynamodb:GetItem", "dynamodb:DescribeTable", "dynamodb:UpdateItem"} {
		if !seen[want] {
			t.Errorf("the commands never called %s: the test does not exercise what the policy grants", want)
		}
	}
	if code, out, _ := ctl(t, append(p.args("policy"), "--access", "read")...); code != cli.ExitOK || strings.Contains(out, "sqs:SendMessage") || strings.Contains(out, "dynamodb:UpdateItem") {
		t.Errorf("--access read: exit %d, grants writes:\n%s", code, out)
	}
	if code, _, errOut := ctl(t, append(p.args("policy"), "--access", "all")...); code != cli.ExitUsage || !strings.Contains(errOut, "--access all: use read (status, inspect, record get) or operate (also redrive, record release, backfill and verify)") {
		t.Errorf("--access all: exit %d, %q", code, errOut)
	}
}
