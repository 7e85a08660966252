package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/dispatch"
)

// recordSQS accepts every entry and keeps the bodies.
type recordSQS struct{ bodies []string }

func (r *recordSQS) SendMessageBatch(_ context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out := &sqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		r.bodies = append(r.bodies, aws.ToString(e.MessageBody))
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// main's wiring: the items of the schedule's input (source) become one message each.
// (Package dispatch tests the rest.)
func TestMainSendsTheEventItems(t *testing.T) {
	env := map[string]string{"QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", "JOB_NAME": "nightly"}
	var out bytes.Buffer
	api := &recordSQS{}
	h := dispatch.Init(func(dispatch.Env) (dispatch.ItemSource, error) { return source, nil },
		dispatch.WithLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok }),
		dispatch.WithOutput(&out), dispatch.WithSQS(api))
	sum, err := h(context.Background(), dispatch.Event{ScheduledTime: "2026-11-23T10:00:30Z", Items: []dispatch.Item{{ID: "a"}}})
	want := `{"idempotencyKey":"nightly#2026-11-23T10:00:00Z#a","job":"nightly","period":"2026-11-23T10:00:00Z","itemId":"a"}`
	if err != nil || sum.Sent != 1 || len(api.bodies) != 1 || api.bodies[0] != want {
		t.Fatalf("Handle = %+v, %v; sent %q, want %s\n%s", sum, err, api.bodies, want, out.String())
	}
}
