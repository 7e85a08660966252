// Command rawfn is the peer benchmark's limit as a Lambda function: the raw-write loop's two
// writes per record (package rawwrite), records of a batch at once, behind aws-lambda-go and
// the Runtime API exactly as the consumer is. It is what a Go Lambda function without any of
// the consumer's guarantees costs, event decoding and Runtime API included; the benchmark runs
// it like ours (test/bench/peers, contender rawfn).
//
// It reads AWS_ENDPOINT_URL_DYNAMODB, IDEMPOTENCY_TABLE_NAME and BATCH_CONCURRENCY, fits the
// Go runtime to the memory size as the consumer does, and prints one line per invocation,
// {"rawEffects":N}, the effects it ran, which the benchmark counts.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
	"github.com/idempotent-sqs/pipeline/test/bench/peers/rawwrite"
)

func main() {
	runtimefit.Apply(os.LookupEnv)
	conc, err := strconv.Atoi(os.Getenv("BATCH_CONCURRENCY"))
	if err != nil || conc < 1 {
		conc = 10
	}
	w := rawwrite.New(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("IDEMPOTENCY_TABLE_NAME"), conc)
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		var mu sync.Mutex
		var effects atomic.Int64
		var wg sync.WaitGroup
		for _, rec := range ev.Records {
			wg.Go(func() {
				effect, err := w.Record(ctx, rec.Body)
				if effect {
					effects.Add(1)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "record %s: %v\n", rec.MessageId, err)
					mu.Lock()
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		fmt.Printf("{\"rawEffects\":%d}\n", effects.Load())
		return resp, nil
	})
}
