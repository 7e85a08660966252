// Package coldstart holds what the consume and dispatch packages do alike once per cold
// start: read the environment and write to stdout unless told otherwise, build an AWS
// configuration from the Lambda environment, and call the user's build function without
// letting its error or panic crash the process.
package coldstart

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idempotent-sqs/pipeline/functions/internal/awsenv"
	"github.com/idempotent-sqs/pipeline/functions/runtimefit"
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
