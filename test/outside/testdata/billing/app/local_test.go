package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/local"
)

// 100 invoices, each sent three times, and three bad messages, on this machine.
func TestInvoicesOnceLocally(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	kit, err := local.Start(ctx, local.Options{Assembly: "../cdk.out"})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()
	var bodies []string
	for i := range 300 {
		bodies = append(bodies, fmt.Sprintf(`{"idempotencyKey":"inv-%d","cents":%d}`, i%100, 100+i%100))
	}
	bodies = append(bodies, `not json`, `{"idempotencyKey":"inv-x","cents":0}`, `{"cents":5}`)
	if err := kit.Send(ctx, "Invoicing", bodies...); err != nil {
		t.Fatal(err)
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	env, _ := kit.Env("Invoicing")
	rows, _ := kit.Scan(ctx, env["INVOICES_TABLE_NAME"])
	dead, _ := kit.DeadLetters(ctx, "Invoicing")
	if oc, _ := kit.Outcomes("Invoicing"); len(rows) != 100 || oc["processed"] != 100 || len(dead) != 3 || dead[0].Reason == "" {
		t.Fatalf("%d invoices, outcomes %v, dead letters %+v", len(rows), oc, dead)
	}
	if _, err := kit.WaitForAlarm(ctx, "DeadLetterMessages"); err != nil {
		t.Fatal(err)
	}
}
