// Command dispatcher is the Lambda function EventBridge Scheduler invokes: it turns one
// scheduled run into one SQS message per work item, each carrying an idempotency key derived
// from the job, the run's scheduled occurrence (the schedule's scheduled time in UTC to the
// minute, never the clock) and the item id, so that a repeated or retried invocation for one
// occurrence is recognized downstream and two occurrences never share a key.
//
// main only wires: it reads the environment once (see env.go for the variables), builds the
// SQS client once from the Lambda environment (internal/awsenv; AWS_ENDPOINT_URL_SQS points it
// at a local server), and hands each invocation to Handler. With an invalid environment every
// invocation fails with the error naming the variable, which is logged once at start.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/internal/awsenv"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func main() {
	lambda.Start(start(context.Background(), os.LookupEnv, os.Stdout, newSQSClient))
}

// newSQSClient builds the client from the Lambda environment only (awsenv: region, the
// execution role's credentials, AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL for local runs);
// config.LoadDefaultConfig would link credential sources a Lambda never uses.
func newSQSClient(context.Context) (SQSAPI, error) {
	awsCfg, err := awsenv.Load(os.LookupEnv, awsenv.SQS)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return sqs.NewFromConfig(awsCfg), nil
}

// start builds the invocation handler from the environment. A configuration that cannot work
// does not exit the process (Lambda would only retry the cold start and report an opaque
// Runtime.ExitError): it yields a handler that fails every invocation with the reason.
func start(ctx context.Context, lookup func(string) (string, bool), stdout io.Writer,
	newClient func(context.Context) (SQSAPI, error)) func(context.Context, Event) (Summary, error) {
	cfg, err := LoadConfig(lookup)
	level := cfg.LogLevel // INFO when LOG_LEVEL itself is the problem
	log := telemetry.NewLogger(stdout, level).With("service", cfg.Service)
	if err == nil {
		var client SQSAPI
		if client, err = newClient(ctx); err == nil {
			return NewHandler(cfg, client, EventItems{}, log, stdout).Handle
		}
	}
	log.Error("dispatcher not configured: every invocation will fail", "error", err.Error())
	return func(context.Context, Event) (Summary, error) { return Summary{}, err }
}
