package dispatch_test

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/dispatch"
)

// The main of a dispatcher whose work items come from a store of its own: the source is
// built once per cold start, its client from the same environment as the function's own.
func ExampleStartWith() {
	dispatch.StartWith(func(env dispatch.Env) (dispatch.ItemSource, error) {
		awsCfg, err := env.AWSConfig(dispatch.ServiceDynamoDB)
		if err != nil {
			return nil, err // every invocation fails with it, logged once
		}
		_ = awsCfg // ... dynamodb.NewFromConfig(awsCfg), read a snapshot keyed by run.Occurrence ...
		return dispatch.EventItems{}, nil
	})
}

// printSQS stands in for SQS: it prints what would be sent.
type printSQS struct{}

func (printSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		fmt.Println(aws.ToString(e.MessageAttributes["IdempotencyKey"].StringValue))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// Init is what Start runs at a cold start; a test drives the handler it returns.
func ExampleInit() {
	env := map[string]string{"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", "JOB_NAME": "nightly"}
	handle := dispatch.Init(nil, dispatch.WithSQS(printSQS{}), dispatch.WithOutput(io.Discard),
		dispatch.WithLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))

	sum, err := handle(context.Background(), dispatch.Event{ScheduledTime: "2026-11-23T10:00:00Z",
		Items: []dispatch.Item{{ID: "tenant-1"}, {ID: "tenant-2"}}})
	fmt.Println(sum.Sent, "sent", err)
	// Output:
	// nightly#2026-11-23T10:00:00Z#tenant-1
	// nightly#2026-11-23T10:00:00Z#tenant-2
	// 2 sent <nil>
}
