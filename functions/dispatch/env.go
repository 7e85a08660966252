package dispatch

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/internal/envconf"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Environment variables: package contract holds their names, for constructs/dispatcher too.
const (
	envQueueURL         = contract.EnvQueueURL
	envJobName          = contract.EnvJobName
	envPeriod           = "PERIOD" // no longer supported: rejected unless it means 1m (see LoadConfig)
	envDefaultGroupID   = contract.EnvDefaultGroupID
	envSendMaxAttempts  = contract.EnvSendMaxAttempts
	envMetricsNamespace = contract.EnvMetricsNamespace
	envLogLevel         = contract.EnvLogLevel
)

// Defaults and bounds of the configuration.
const (
	defaultSendMaxAttempts  = contract.DefaultSendMaxAttempts
	maxSendMaxAttempts      = contract.MaxSendMaxAttempts // constructs/dispatcher validates against it too
	defaultMetricsNamespace = "IdempotentSQS"
	maxJobNameBytes         = 128
	// serviceName is Config.Service outside Lambda.
	serviceName = "dispatcher"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid dispatcher configuration")

// EnvError names one environment variable whose value is unusable, and the accepted form
// (the consumer's is the same type).
type EnvError = envconf.Error

// Config is the dispatcher's configuration, read from the environment once per cold start.
type Config struct {
	QueueURL         string
	Fifo             bool // QUEUE_URL ends in ".fifo"
	JobName          string
	DefaultGroupID   string // FIFO group for items without one
	SendMaxAttempts  int
	MetricsNamespace string
	LogLevel         slog.Level
	// Service is the EMF Service dimension and the logs' service field: the Lambda function
	// name (AWS_LAMBDA_FUNCTION_NAME, see telemetry.ServiceFromEnv), "dispatcher" outside Lambda.
	Service string
}

// LoadConfig reads and validates every variable, reporting all problems at once (each an
// *EnvError joined under ErrConfig). An optional variable set to the empty string counts as
// unset, so a construct can always set every variable.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	env := envconf.New(lookup)
	bad, optional := env.Bad, env.Optional
	cfg := Config{Service: telemetry.ServiceFromEnv(lookup, serviceName)}

	cfg.QueueURL = env.QueueURL(envQueueURL, true)
	cfg.Fifo = strings.HasSuffix(cfg.QueueURL, ".fifo")

	jobWant := fmt.Sprintf("1-%d bytes of printable UTF-8 without surrounding spaces", maxJobNameBytes)
	if v, ok := env.Required(envJobName, jobWant); ok && validJobName(v) {
		cfg.JobName = v
	} else if ok {
		bad(envJobName, v, true, jobWant)
	}

	// PERIOD used to set the unit the scheduled time was truncated to for the keys. Keys now
	// derive from the scheduled occurrence itself (see occurrence), which is what PERIOD=1m
	// did, so 1m (the old construct wrote "1m0s") still starts; any other value would have
	// merged distinct runs, and silently ignoring it would change the keys under a deployment
	// that chose it, so it fails the configuration instead.
	const periodWant = "it unset: PERIOD is no longer supported (keys are derived from each scheduled occurrence; " +
		"a longer period gave distinct runs one key and the consumer dropped all but the first as duplicates); remove the variable"
	if v, ok := optional(envPeriod); ok {
		if d, err := time.ParseDuration(v); err != nil || d != time.Minute {
			bad(envPeriod, v, true, periodWant)
		}
	}

	if v, ok := optional(envDefaultGroupID); ok {
		if err := msgkey.ValidateGroupID(v); err != nil {
			bad(envDefaultGroupID, v, true, "a valid SQS MessageGroupId (1-128 ASCII letters, digits or punctuation)")
		} else {
			cfg.DefaultGroupID = v
		}
	} else if cfg.Fifo && cfg.JobName != "" {
		// The job name doubles as the FIFO group: check it by the group's rules here, at
		// start, rather than failing every send later.
		if err := msgkey.ValidateGroupID(cfg.JobName); err != nil {
			bad(envDefaultGroupID, "", false, fmt.Sprintf(
				"a valid SQS MessageGroupId: it defaults to JOB_NAME %q, which is not one (%v)", cfg.JobName, err))
		} else {
			cfg.DefaultGroupID = cfg.JobName
		}
	}

	cfg.SendMaxAttempts = env.Int(envSendMaxAttempts, defaultSendMaxAttempts, 1, maxSendMaxAttempts)
	cfg.MetricsNamespace = env.MetricsNamespace(envMetricsNamespace, defaultMetricsNamespace)
	cfg.LogLevel = env.LogLevel(envLogLevel)
	return cfg, env.Err(ErrConfig)
}

func validJobName(s string) bool {
	if len(s) > maxJobNameBytes || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
