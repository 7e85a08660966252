package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/batch"
)

// A consumer Lambda builds the Processor once and returns Report.Response() from its
// handler; with ReportBatchItemFailures, SQS redelivers only the records named in it.
func Example() {
	p, err := batch.New(batch.Options{Concurrency: 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err) // cold start: bad configuration fails the init, never a record
	}
	handle := func(ctx context.Context, msg events.SQSMessage) error {
		if strings.Contains(msg.Body, "bad") {
			return errors.New("bad input")
		}
		return nil
	}
	lambdaHandler := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return p.Process(ctx, ev, handle).Response(), nil
	}

	arn := "arn:aws:sqs:eu-west-1:123456789012:orders.fifo"
	msg := func(id, group, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: arn,
			Attributes: map[string]string{"MessageGroupId": group}}
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		msg("1", "tenant-a", "ok"),
		msg("2", "tenant-a", "bad"),
		msg("3", "tenant-b", "ok"),
		msg("4", "tenant-a", "ok"), // after a failure in tenant-a: not run, redelivered in order
	}}
	resp, _ := lambdaHandler(context.Background(), ev)
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"batchItemFailures":[{"itemIdentifier":"2"},{"itemIdentifier":"4"}]}
}

func ExampleReport_Count() {
	p, _ := batch.New(batch.Options{Logger: slog.New(slog.DiscardHandler)})
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a"}, {MessageId: "b"}}}
	rep := p.Process(context.Background(), ev, func(ctx context.Context, m events.SQSMessage) error {
		if m.MessageId == "b" {
			return errors.New("downstream unavailable")
		}
		return nil
	})
	for _, s := range []batch.Status{batch.StatusSucceeded, batch.StatusFailed} {
		fmt.Println(s, rep.Count(s))
	}
	// Output:
	// succeeded 1
	// failed 1
}
