package dispatch

import (
	"context"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/internal/coldstart"
	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
)

// Service ids for Env.AWSConfig: the suffix of the AWS_ENDPOINT_URL_<SERVICE> variable that
// points a client at a local server. Any other SDK service id works the same way (for
// example "S3", "EventBridge").
const (
	ServiceDynamoDB = "DYNAMODB"
	ServiceSQS      = "SQS"
)

// Env is what a BuildFunc gets, once per cold start: the dispatcher's configuration, its
// logger and the environment it was read from.
type Env struct {
	// Config is the configuration LoadConfig read; it is valid.
	Config Config
	// Logger writes the function's JSON log lines (level LOG_LEVEL, the service field set).
	Logger *slog.Logger
	// Lookup reads the environment (os.LookupEnv unless WithLookup replaced it); use it for
	// the source's own variables so a test can set them the same way.
	Lookup func(string) (string, bool)
}

// AWSConfig returns the aws.Config for a client of service (ServiceDynamoDB, ServiceSQS or
// another SDK service id), built exactly as the dispatcher builds its SQS client: the region
// and the execution role's credentials from the Lambda environment, and
// AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL for local runs. No shared config file,
// profile or IMDS is read, which keeps the binary small. An error names the missing variable.
func (e Env) AWSConfig(service string) (aws.Config, error) {
	return coldstart.AWSConfig(e.Lookup, service)
}

// BuildFunc builds the ItemSource once per cold start. An error (or a panic) does not exit
// the process: every invocation then fails with it, as with a configuration error, and it is
// logged once at start.
type BuildFunc func(env Env) (ItemSource, error)

// LambdaFunc is the function Start hands to lambda.Start.
type LambdaFunc = func(context.Context, Event) (Summary, error)

// Option changes where Init reads from and writes to; the defaults are the Lambda ones.
type Option func(*options)

type options struct {
	coldstart.Options
	sqs SQSAPI
}

// WithLookup reads the environment through lookup instead of os.LookupEnv (for tests).
func WithLookup(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.Lookup = lookup }
}

// WithOutput writes the log and EMF lines to w instead of os.Stdout (for tests).
func WithOutput(w io.Writer) Option { return func(o *options) { o.Out = w } }

// WithSQS sends through api instead of a client built from the environment (for tests, or a
// client of your own).
func WithSQS(api SQSAPI) Option { return func(o *options) { o.sqs = api } }

// Start runs the dispatcher with source as a Lambda function; it does not return. source
// nil means EventItems.
func Start(source ItemSource, opts ...Option) {
	StartWith(func(Env) (ItemSource, error) { return source, nil }, opts...)
}

// StartWith runs the dispatcher as a Lambda function with the ItemSource build returns; it
// does not return. It first fits the Go runtime to the function's memory size (package
// runtimefit). build runs once per cold start, after the configuration is read, so the source
// can create its clients (Env.AWSConfig) and read its own variables (Env.Lookup).
func StartWith(build BuildFunc, opts ...Option) {
	coldstart.Start(func(fit *runtimefit.Fit) LambdaFunc {
		return Init(build, append(opts, func(o *options) { o.Fit = fit })...)
	})
}

// Init does the dispatcher's cold start, as Start does, and returns the invocation handler
// instead of running it: it reads the environment (see LoadConfig), builds the SQS client
// from the Lambda environment, calls build (nil, or a nil ItemSource, means EventItems), and
// wires a Handler. Use it in tests, or to run the handler under a main loop of your own.
//
// A configuration that cannot work does not exit the process, which Lambda would only start
// again and report as an opaque Runtime.ExitError: Init logs the reason once and returns a
// handler that fails every invocation with it.
func Init(build BuildFunc, opts ...Option) LambdaFunc {
	o := coldstart.Apply(options{Options: coldstart.Options{IO: coldstart.Lambda()}}, opts)
	return coldstart.Init(o.Options, coldstart.Function[Config, LambdaFunc]{
		Name:    "dispatcher",
		Load:    LoadConfig,
		Logging: func(c Config) (slog.Level, string) { return c.LogLevel, c.Service },
		Wire:    func(cfg Config, log *slog.Logger) (LambdaFunc, error) { return wire(cfg, log, o, build) },
		Failing: func(err error) LambdaFunc {
			return func(context.Context, Event) (Summary, error) { return Summary{}, err }
		},
	})
}

// wire builds the client, the item source and the Handler of a valid configuration, and
// returns its Handle.
func wire(cfg Config, log *slog.Logger, o options, build BuildFunc) (LambdaFunc, error) {
	env := Env{Config: cfg, Logger: log, Lookup: o.Lookup}
	api := o.sqs
	if api == nil {
		awsCfg, err := env.AWSConfig(ServiceSQS)
		if err != nil {
			return nil, err
		}
		api = sqs.NewFromConfig(awsCfg)
	}
	var source ItemSource // nil: EventItems (NewHandler)
	if build != nil {
		var err error
		if source, err = coldstart.Build("item source", func() (ItemSource, error) { return build(env) }); err != nil {
			return nil, err
		}
	}
	return NewHandler(cfg, api, source, log, o.Out).Handle, nil
}
