// Package coldstart is the one cold start of the consume and dispatch packages: fit the Go
// runtime to the function's memory (Start), read the configuration, make the logger, build
// the clients and the user's part, and return the handler, or a handler that fails every
// invocation with the reason (Init). Each package supplies only its own configuration and
// wiring.
package coldstart

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idempotent-sqs/pipeline/functions/internal/awsenv"
	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// IO is where a function reads its environment and writes its log and EMF lines.
type IO struct {
	Lookup func(string) (string, bool)
	Out    io.Writer
}

// Lambda is the IO of a Lambda function: os.LookupEnv and os.Stdout.
func Lambda() IO { return IO{Lookup: os.LookupEnv, Out: os.Stdout} }

// AWSConfig is awsenv.Load with an error that says what failed.
func AWSConfig(lookup func(string) (string, bool), service string) (aws.Config, error) {
	cfg, err := awsenv.Load(lookup, service)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}

// Build calls build and returns what it built; an error or a panic comes back as an error
// "build the <what>: ...", so a broken build fails the invocations with its reason instead
// of crashing every cold start.
func Build[T any](what string, build func() (T, error)) (built T, err error) {
	var zero T
	defer func() {
		if p := recover(); p != nil {
			built, err = zero, fmt.Errorf("build the %s: panic: %v", what, p)
		}
	}()
	if built, err = build(); err != nil {
		return zero, fmt.Errorf("build the %s: %w", what, err)
	}
	return built, nil
}

// LogFit logs at DEBUG what runtimefit.Apply did at start; fit nil (Init without Start)
// logs nothing.
func LogFit(log *slog.Logger, fit *runtimefit.Fit) {
	if fit == nil {
		return
	}
	attrs := []any{"memoryMB", fit.MemoryMB, "gomaxprocs", fit.Procs, "gogc", fit.GOGC, "memoryLimitBytes", fit.MemoryLimit}
	if len(fit.Skipped) > 0 {
		attrs = append(attrs, "skipped", fit.Skipped)
	}
	log.Debug("Go runtime fitted to the function's size", attrs...)
}

// Options is what both packages' Option functions set: where a function reads and writes,
// and what Start did to the Go runtime (nil under Init alone).
type Options struct {
	IO
	Fit *runtimefit.Fit
}

// Apply returns o with each option applied, in order: a package's options struct (which
// embeds Options, its defaults Lambda's) and its Option functions.
func Apply[O any, F ~func(*O)](o O, opts []F) O {
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Start fits the Go runtime to the function's memory size (runtimefit.Apply, from the real
// environment whatever Options.Lookup says: the settings are the process's) and runs the
// handler init returns as a Lambda function; it does not return.
func Start[H any](init func(fit *runtimefit.Fit) H) {
	fit := runtimefit.Apply(os.LookupEnv)
	lambda.Start(init(&fit))
}

// Function is one package's part of a cold start: its name in the log line that says the
// function is not configured, how it reads its configuration and its log level and service
// from it, how it wires the handler of a valid one, and the handler that fails every
// invocation with an error.
type Function[C, H any] struct {
	Name    string
	Load    func(lookup func(string) (string, bool)) (C, error)
	Logging func(C) (level slog.Level, service string)
	Wire    func(C, *slog.Logger) (H, error)
	Failing func(error) H
}

// Init is a cold start: it reads the configuration, makes the logger (INFO when the log
// level is what is wrong), logs what Start did, and wires the handler. A configuration or a
// wiring that cannot work does not exit the process (Lambda would only retry the cold start
// and report an opaque Runtime.ExitError): the reason is logged once and every invocation
// fails with it.
func Init[C, H any](o Options, f Function[C, H]) H {
	cfg, err := f.Load(o.Lookup)
	level, service := f.Logging(cfg)
	log := telemetry.NewLogger(o.Out, level).With("service", service)
	LogFit(log, o.Fit)
	if err == nil {
		var h H
		if h, err = f.Wire(cfg, log); err == nil {
			return h
		}
	}
	log.Error(f.Name+" not configured: every invocation will fail", "error", err.Error())
	return f.Failing(err)
}
