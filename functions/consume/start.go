package consume

import (
	"context"
	"io"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/internal/coldstart"
	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// Service ids for Env.AWSConfig: the suffix of the AWS_ENDPOINT_URL_<SERVICE> variable that
// points a client at a local server. Any other SDK service id works the same way (for
// example "S3", "SNS", "EventBridge").
const (
	ServiceDynamoDB = "DYNAMODB"
	ServiceSQS      = "SQS"
)

// Env is what a BuildFunc gets, once per cold start: the consumer's configuration, its
// logger and the environment it was read from.
type Env struct {
	// Config is the configuration LoadConfig read; it is valid.
	Config Config
	// Logger writes the function's JSON log lines (level LOG_LEVEL, the service field set).
	Logger *slog.Logger
	// Lookup reads the environment (os.LookupEnv unless WithLookup replaced it); use it for
	// the effect's own variables so a test can set them the same way.
	Lookup func(string) (string, bool)
}

// AWSConfig returns the aws.Config for a client of service (ServiceDynamoDB, ServiceSQS or
// another SDK service id), built exactly as the consumer builds its own clients: the region
// and the execution role's credentials from the Lambda environment, and
// AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL for local runs. No shared config file,
// profile or IMDS is read, which keeps the binary small. An error names the missing variable.
func (e Env) AWSConfig(service string) (aws.Config, error) {
	return coldstart.AWSConfig(e.Lookup, service)
}

// BuildFunc builds the Effect once per cold start. An error (or a panic) does not exit the
// process: every invocation then fails with it, as with a configuration error, and it is
// logged once at start.
type BuildFunc func(env Env) (Effect, error)

// LambdaFunc is the function Start hands to lambda.Start.
type LambdaFunc = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Option changes where Init reads from and writes to; the defaults are the Lambda ones.
type Option func(*options)

type options struct {
	coldstart.Options
	dynamo idempotency.DynamoDBAPI
	sqs    SQSSendAPI
}

// WithLookup reads the environment through lookup instead of os.LookupEnv (for tests).
func WithLookup(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.Lookup = lookup }
}

// WithOutput writes the log and EMF lines to w instead of os.Stdout (for tests).
func WithOutput(w io.Writer) Option { return func(o *options) { o.Out = w } }

// WithDynamoDB uses api for the idempotency table instead of a client built from the
// environment (for tests, or a client of your own).
func WithDynamoDB(api idempotency.DynamoDBAPI) Option { return func(o *options) { o.dynamo = api } }

// WithSQS uses api for the dead-letter queue instead of a client built from the environment.
func WithSQS(api SQSSendAPI) Option { return func(o *options) { o.sqs = api } }

// Start runs the consumer with effect as a Lambda function; it does not return. effect nil
// means LogEffect.
func Start(effect Effect, opts ...Option) {
	StartWith(func(Env) (Effect, error) { return effect, nil }, opts...)
}

// StartWith runs the consumer as a Lambda function with the Effect build returns; it does
// not return. It first fits the Go runtime to the function's memory size (package runtimefit).
// build runs once per cold start, after the configuration is read, so the effect can create
// its clients (Env.AWSConfig) and read its own variables (Env.Lookup).
func StartWith(build BuildFunc, opts ...Option) {
	coldstart.Start(func(fit *runtimefit.Fit) LambdaFunc {
		return Init(build, append(opts, func(o *options) { o.Fit = fit })...)
	})
}

// Init does the consumer's cold start, as Start does, and returns the invocation handler
// instead of running it: it reads the environment (see LoadConfig), builds the DynamoDB
// client (unless IDEMPOTENCY_DISABLED) and the dead-letter queue's SQS client (when
// DEAD_LETTER_QUEUE_URL is set) from the Lambda environment, calls build (nil, or an Effect
// nil, means LogEffect), and wires a Handler. Use it in tests, or to run the handler under a
// main loop of your own.
//
// A configuration that cannot work does not exit the process (Lambda would only retry the
// cold start and report an opaque Runtime.ExitError): Init logs the reason once and returns a
// handler that fails every invocation with it, so the batch is retried and, if nobody fixes
// the configuration, lands in the DLQ.
func Init(build BuildFunc, opts ...Option) LambdaFunc {
	o := coldstart.Apply(options{Options: coldstart.Options{IO: coldstart.Lambda()}}, opts)
	return coldstart.Init(o.Options, coldstart.Function[Config, LambdaFunc]{
		Name:    "consumer",
		Load:    LoadConfig,
		Logging: func(c Config) (slog.Level, string) { return c.LogLevel, c.Service },
		Wire:    func(cfg Config, log *slog.Logger) (LambdaFunc, error) { return wire(cfg, log, o, build) },
		Failing: func(err error) LambdaFunc {
			return func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				return events.SQSEventResponse{}, err
			}
		},
	})
}

// wire builds the clients, the effect and the Handler of a valid configuration, and returns
// its Handle.
func wire(cfg Config, log *slog.Logger, o options, build BuildFunc) (LambdaFunc, error) {
	env := Env{Config: cfg, Logger: log, Lookup: o.Lookup}
	api := o.dynamo
	if api == nil && !cfg.Idempotency.Disabled {
		awsCfg, err := env.AWSConfig(ServiceDynamoDB)
		if err != nil {
			return nil, err
		}
		awsCfg.HTTPClient = dynamoHTTPClient()
		api = dynamodb.NewFromConfig(awsCfg, idempotency.WithoutSDKRetries)
	}
	sq := o.sqs
	if sq == nil && cfg.DeadLetterQueueURL != "" {
		awsCfg, err := env.AWSConfig(ServiceSQS)
		if err != nil {
			return nil, err
		}
		sq = sqs.NewFromConfig(awsCfg)
	}
	var effect Effect // nil: LogEffect (NewHandler)
	if build != nil {
		var err error
		if effect, err = coldstart.Build("effect", func() (Effect, error) { return build(env) }); err != nil {
			return nil, err
		}
	}
	h, err := NewHandler(cfg, api, effect, log, o.Out)
	if err != nil {
		return nil, err
	}
	if cfg.DeadLetterQueueURL != "" {
		h.WithDeadLetter(SQSDeadLetter{API: sq, URL: cfg.DeadLetterQueueURL})
	}
	if cfg.Idempotency.Disabled {
		log.Warn("idempotency disabled: every delivery runs the effect")
	}
	return h.Handle, nil
}

// dynamoHTTPClient is the idempotency store client's HTTP client: SDK retries are off (the
// Guard retries transient errors itself), and up to one idle connection is kept per record in
// flight (the pool grows only to the peak concurrency; the cap is the largest
// BATCH_CONCURRENCY). The SDK's default keeps 10 per host, so with BATCH_CONCURRENCY above 10
// it closed and redialled the rest after every batch: a TCP handshake per call on both sides
// (measured with the peer benchmark: 2,167 connections for 2,200 records at batch 100, 105
// with this pool). Like every client here it sends through internal/sdkhttp, so that an
// answer is not cut off by a connection the function closed itself.
func dynamoHTTPClient() aws.HTTPClient {
	return sdkhttp.Wrap(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 0 // no total cap: the client talks to one host
		t.MaxIdleConnsPerHost = contract.MaxBatchConcurrency
	}))
}
