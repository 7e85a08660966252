package consume

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/batch"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/internal/envconf"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Environment variables: package contract holds their names, for constructs/consumer too.
const (
	envTableName        = contract.EnvTableName
	envKeyPrefix        = contract.EnvKeyPrefix
	envKeySource        = contract.EnvKeySource
	envPartitionKey     = contract.EnvPartitionKey
	envSortKey          = contract.EnvSortKey
	envTenantSource     = contract.EnvTenantSource
	envRecordTTL        = contract.EnvRecordTTL
	envLockCap          = contract.EnvLockCap
	envValidatePayload  = contract.EnvValidatePayload
	envCacheSize        = contract.EnvCacheSize
	envDisabled         = contract.EnvDisabled
	envBatchConcurrency = contract.EnvBatchConcurrency
	envDeadlineMargin   = contract.EnvDeadlineMargin
	envMaxBodyBytes     = contract.EnvMaxBodyBytes
	envDeadLetterQueue  = contract.EnvDeadLetterQueue
	envMetricsNamespace = contract.EnvMetricsNamespace
	envLogLevel         = contract.EnvLogLevel
)

// Defaults and bounds.
const (
	defaultKeyPrefix        = "consumer"
	defaultKeySource        = contract.DefaultKeySource
	defaultRecordTTL        = 24 * time.Hour
	defaultLockCap          = 15 * time.Minute
	defaultMaxBodyBytes     = 256 * 1024
	maxMaxBodyBytes         = 1024 * 1024 // the SQS message size limit
	defaultMetricsNamespace = "IdempotentSQS"
	// serviceName is Config.Service outside Lambda.
	serviceName = "consumer"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid consumer configuration")

// EnvError names one environment variable whose value is unusable, and the accepted form
// (the dispatcher's is the same type).
type EnvError = envconf.Error

// TenantSource says where the tenant (the partition of a composite-key table) comes from.
type TenantSource struct {
	Group  bool          // the FIFO MessageGroupId
	Source msgkey.Source // otherwise a body field or message attribute; zero when unused
}

// Enabled reports whether a tenant is extracted at all.
func (t TenantSource) Enabled() bool { return t.Group || t.Source.Kind != 0 }

// String is the IDEMPOTENCY_TENANT_SOURCE value t stands for ("" when unused).
func (t TenantSource) String() string {
	switch {
	case t.Group:
		return "group"
	case t.Source.Kind != 0:
		return t.Source.String()
	}
	return ""
}

// Config is the consumer's configuration, read from the environment once per cold start.
type Config struct {
	Idempotency  idempotency.Config
	KeySource    msgkey.Source
	Tenant       TenantSource
	Batch        batch.Options // Logger is set by NewHandler
	MaxBodyBytes int
	// DeadLetterQueueURL, when set, is where records that can never succeed (bad input, a key
	// reused for other content) are moved at once; see DeadLetter. Empty: they are reported
	// as failures until the queue's redrive policy moves them.
	DeadLetterQueueURL string
	MetricsNamespace   string
	LogLevel           slog.Level
	// Service is the EMF Service dimension and the logs' service field: the Lambda function
	// name (AWS_LAMBDA_FUNCTION_NAME, see telemetry.ServiceFromEnv), "consumer" outside Lambda.
	Service string
}

var tableNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// LoadConfig reads and validates every variable, reporting all problems at once (each an
// *EnvError joined under ErrConfig). An optional variable set to "" counts as unset.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	env := envconf.New(lookup)
	bad := env.Bad
	duration, integer, boolean := env.Duration, env.Int, env.Bool

	cfg := Config{MaxBodyBytes: defaultMaxBodyBytes, Service: telemetry.ServiceFromEnv(lookup, serviceName)}
	idem := &cfg.Idempotency
	idem.Disabled = boolean(envDisabled, false)

	const tableWant = "the idempotency table's name (3-255 characters of A-Za-z0-9_.-) or ARN"
	if v, ok := lookup(envTableName); !ok || v == "" {
		if !idem.Disabled { // a local run without a table is what IDEMPOTENCY_DISABLED is for
			bad(envTableName, v, ok, tableWant)
		}
	} else if !tableNameRE.MatchString(v) && !(strings.HasPrefix(v, "arn:") && strings.Contains(v, ":table/")) {
		bad(envTableName, v, true, tableWant)
	} else {
		idem.TableName = v
	}

	readKeys(env, &cfg)

	idem.LockCap = duration(envLockCap, defaultLockCap, idempotency.MinDuration, idempotency.MaxLockCap,
		"a Go duration from 1s to 15m, normally the function timeout (e.g. 30s)")
	idem.RecordTTL = duration(envRecordTTL, defaultRecordTTL, idempotency.MinDuration, 1<<63-1,
		"a Go duration of at least 1s, e.g. 24h")
	if idem.RecordTTL < idem.LockCap {
		v, _ := lookup(envRecordTTL)
		bad(envRecordTTL, v, true, fmt.Sprintf("a duration at least %s=%s: a record must outlive its lock", envLockCap, idem.LockCap))
	}
	idem.ValidatePayload = boolean(envValidatePayload, true)
	idem.CacheSize = integer(envCacheSize, 0, 0, contract.MaxCacheSize)

	cfg.Batch.Concurrency = integer(envBatchConcurrency, batch.DefaultConcurrency, 1, contract.MaxBatchConcurrency)
	// 0 is refused, not passed on: batch.Options reads 0 as "the default", so "0s" used to
	// become 2s without a word, and a margin of 0 honoured would start records the invocation
	// cannot finish and answer only as Lambda ends it (see batch.MinDeadlineMargin).
	cfg.Batch.DeadlineMargin = duration(envDeadlineMargin, batch.DefaultDeadlineMargin, batch.MinDeadlineMargin, batch.MaxDeadlineMargin,
		fmt.Sprintf("a Go duration from %s to 15m, e.g. %s (unset for the default %s; a margin under %s leaves Lambda no time for the batch response, "+
			"and 0 would start records up to the moment Lambda ends the invocation)",
			batch.MinDeadlineMargin, batch.DefaultDeadlineMargin, batch.DefaultDeadlineMargin, batch.MinDeadlineMargin))
	cfg.MaxBodyBytes = integer(envMaxBodyBytes, defaultMaxBodyBytes, 1, maxMaxBodyBytes)
	cfg.DeadLetterQueueURL = env.QueueURL(envDeadLetterQueue, false)
	cfg.MetricsNamespace = env.MetricsNamespace(envMetricsNamespace, defaultMetricsNamespace)
	cfg.LogLevel = env.LogLevel(envLogLevel)
	return cfg, env.Err(ErrConfig)
}

// readKeys reads where a message's key is and how its record is keyed: the key prefix and
// the key source, then (readKeyAttrs) the table's key attributes and the tenant source, each
// by package contract's rules.
func readKeys(env *envconf.Reader, cfg *Config) {
	bad, optional := env.Bad, env.Optional
	idem := &cfg.Idempotency
	idem.KeyPrefix = defaultKeyPrefix
	if v, ok := optional(envKeyPrefix); ok {
		if err := contract.CheckKeyPrefix(v); err != nil {
			bad(envKeyPrefix, v, true, fmt.Sprintf(`1-%d bytes of UTF-8 without "#" (the separator of the record id)`, contract.MaxKeyPrefixBytes))
		} else {
			idem.KeyPrefix = v
		}
	}

	cfg.KeySource, _ = msgkey.ParseSource(defaultKeySource)
	if v, ok := optional(envKeySource); ok {
		if src, err := msgkey.ParseSource(v); err != nil {
			bad(envKeySource, v, true, `body:<json field> or attribute:<message attribute name> (`+err.Error()+`)`)
		} else {
			cfg.KeySource = src
		}
	}

	readKeyAttrs(env, cfg)
}

// readKeyAttrs reads the table's key attribute names and, with a sort key, where the tenant
// is. The record's own attributes, invalid UTF-8 and a sort key equal to the partition key
// would be refused by idempotency.New too, but without naming the variable.
func readKeyAttrs(env *envconf.Reader, cfg *Config) {
	bad, optional := env.Bad, env.Optional
	idem := &cfg.Idempotency
	idem.PartitionKeyAttr = idempotency.DefaultPartitionKeyAttr
	if v, ok := optional(envPartitionKey); ok {
		if err := contract.CheckPartitionKey(v); err != nil {
			bad(envPartitionKey, v, true, fmt.Sprintf("the table's partition key attribute name (1-%d bytes of UTF-8, none of %s: "+
				"the attributes every idempotency record writes)", contract.MaxKeyAttrBytes, strings.Join(idempotency.ReservedAttrs(), ", ")))
		} else {
			idem.PartitionKeyAttr = v
		}
	}
	sortKey, hasSortKey := optional(envSortKey)
	if hasSortKey {
		if err := contract.CheckSortKey(sortKey, idem.PartitionKeyAttr); err != nil {
			reserved := append([]string{idem.PartitionKeyAttr}, idempotency.ReservedAttrs()...)
			bad(envSortKey, sortKey, true, fmt.Sprintf("the table's sort key attribute name (1-%d bytes, none of %s: "+
				"the partition key and the attributes every idempotency record writes)", contract.MaxKeyAttrBytes, strings.Join(reserved, ", ")))
		} else {
			idem.SortKeyAttr = sortKey
		}
	}
	const tenantWant = "body:<json field>, attribute:<message attribute name> or group (the MessageGroupId)"
	tenant, hasTenant := optional(envTenantSource)
	switch {
	case hasSortKey && !hasTenant:
		bad(envTenantSource, tenant, false, tenantWant+": it is required when "+envSortKey+" is set")
	case hasTenant && !hasSortKey:
		bad(envTenantSource, tenant, true, "unset: a tenant is only used with a composite key, and "+envSortKey+" is not set")
	case hasTenant:
		if kind, _, err := contract.ParseTenantSource(tenant); err != nil {
			bad(envTenantSource, tenant, true, tenantWant+" ("+err.Error()+")")
		} else if kind == contract.TenantGroup {
			cfg.Tenant = TenantSource{Group: true}
		} else {
			src, _ := msgkey.ParseSource(tenant) // the same grammar: it parses
			cfg.Tenant = TenantSource{Source: src}
		}
	}
}
