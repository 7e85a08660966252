// Command consumer is the Lambda function behind an SQS event source (standard or FIFO queue,
// ReportBatchItemFailures on): for every record it extracts the idempotency key, runs the
// business Effect at most once per key through an idempotency.Guard on DynamoDB, and reports
// the records that must be delivered again.
//
// main only wires: it reads the environment once (see env.go for the variables and their
// defaults), builds the DynamoDB client once from the Lambda environment (SDK retries off: the
// Guard retries transient errors itself; AWS_ENDPOINT_URL_DYNAMODB points it at DynamoDB Local
// for local runs), and
// hands each invocation to Handler. With an invalid environment every invocation fails with
// the error naming the variable, which is also logged once at start. To plug in real business
// logic, pass your Effect to NewHandler instead of LogEffect.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/consumer/limits"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/internal/awsenv"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

func main() {
	lambda.Start(start(context.Background(), os.LookupEnv, os.Stdout, newDynamoClient, newSQSClient))
}

// The clients are built from the Lambda environment only (awsenv: region, the execution
// role's credentials, AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL for local runs);
// config.LoadDefaultConfig would link credential sources a Lambda never uses (about 1.8 MiB).

// newSQSClient builds the client that moves records to the dead-letter queue; it is only
// built when DEAD_LETTER_QUEUE_URL is set.
func newSQSClient(context.Context) (SQSSendAPI, error) {
	awsCfg, err := awsenv.Load(os.LookupEnv, awsenv.SQS)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return sqs.NewFromConfig(awsCfg), nil
}

// newDynamoClient builds the store's client: SDK retries off (the Guard retries transient
// errors itself), and up to one idle connection kept per record in flight (the pool grows only
// to the peak concurrency; the cap is the largest BATCH_CONCURRENCY). The SDK's
// default keeps 10 per host, so with BATCH_CONCURRENCY above 10 it closed and redialled the
// rest after every batch: a TCP handshake per call on both sides (measured with the peer
// benchmark: 2,167 connections for 2,200 records at batch 100, 105 with this pool).
func newDynamoClient(context.Context) (idempotency.DynamoDBAPI, error) {
	awsCfg, err := awsenv.Load(os.LookupEnv, awsenv.DynamoDB)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	awsCfg.HTTPClient = dynamoHTTPClient()
	return dynamodb.NewFromConfig(awsCfg, idempotency.WithoutSDKRetries), nil
}

// dynamoHTTPClient is the store client's HTTP client (see newDynamoClient).
func dynamoHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 0 // no total cap: the client talks to one host
		t.MaxIdleConnsPerHost = limits.MaxBatchConcurrency
	})
}

type lambdaHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// start builds the invocation handler from the environment. A configuration that cannot work
// does not exit the process (Lambda would only retry the cold start and report an opaque
// Runtime.ExitError): it yields a handler that fails every invocation with the reason, so the
// batch is retried and, if nobody fixes the configuration, lands in the DLQ.
func start(ctx context.Context, lookup func(string) (string, bool), stdout io.Writer,
	newClient func(context.Context) (idempotency.DynamoDBAPI, error),
	newSQS func(context.Context) (SQSSendAPI, error)) lambdaHandler {
	cfg, err := LoadConfig(lookup)
	log := telemetry.NewLogger(stdout, cfg.LogLevel).With("service", cfg.Service) // INFO if LOG_LEVEL is the problem
	if err == nil {
		var api idempotency.DynamoDBAPI
		if !cfg.Idempotency.Disabled {
			api, err = newClient(ctx)
		}
		if err == nil {
			var h *Handler
			if h, err = NewHandler(cfg, api, nil, log, stdout); err == nil && cfg.DeadLetterQueueURL != "" {
				var sq SQSSendAPI
				if sq, err = newSQS(ctx); err == nil {
					h.WithDeadLetter(SQSDeadLetter{API: sq, URL: cfg.DeadLetterQueueURL})
				}
			}
			if err == nil {
				if cfg.Idempotency.Disabled {
					log.Warn("idempotency disabled: every delivery runs the effect")
				}
				return h.Handle
			}
		}
	}
	log.Error("consumer not configured: every invocation will fail", "error", err.Error())
	return func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, err
	}
}
