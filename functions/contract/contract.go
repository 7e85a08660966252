// Package contract is what the constructs and the functions agree on: the environment
// variables a construct sets and a function reads, the grammar and bounds of their values,
// the defaults both sides assume, and the stack outputs pipelinectl reads.
//
// Both sides call the same code: constructs/consumer checks KeySource with ParseSource, and
// functions/consume reads IDEMPOTENCY_KEY_SOURCE with it (through msgkey.ParseSource), so a
// prop that synthesizes is a variable the function accepts at cold start, and the reverse.
// The package imports only the standard library and package layout (which imports nothing):
// a CDK app links no AWS SDK for it, and a Lambda binary no CDK.
package contract

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idempotent-sqs/pipeline/functions/idempotency/layout"
)

// What the consumer adds to a record it dead-letters (when the record leaves room: SQS allows
// 10 message attributes), which pipelinectl's dlq commands, the local kit and the rehearsal
// read: why, in words, and the source message's id (a standard DLQ can hold two copies of one
// record; readers deduplicate on it).
const (
	AttrDeadLetterReason = "DeadLetterReason"
	AttrSourceMessageID  = "SourceMessageId"
	// MaxReasonBytes bounds the reason in DeadLetterReason; a longer one is cut there.
	MaxReasonBytes = 1024
)

// A probe is a message that proves a pipeline works without running its business effect:
// pipelinectl verify sends two, the dispatcher sends one when an event asks ({"probe": ID}),
// and constructs/heartbeat's schedule one every few minutes. The consumer knows it by its
// AttrProbe attribute (the probe id) and takes it through the idempotency record of
// ProbeKeyPrefix+id (tenant ProbeTenant where the table has one) with a no-op; keys with that
// prefix are reserved for probes.
const (
	AttrProbe      = "PipelineProbe"
	ProbeKeyPrefix = "pipelinectl-probe-"
	ProbeTenant    = ProbeKeyPrefix + "tenant"
	// ProbeGroup is the FIFO message group of the probes verify and the dispatcher send
	// (the heartbeat's have one of their own, constructs/heartbeat.FifoGroup).
	ProbeGroup = "pipelinectl-probe"
)

// ProbeBody is a probe's body: its id and who sent it. It is written out, not marshalled,
// so a Scheduler placeholder in id (<aws.scheduler.scheduled-time>) stays as it is; ids
// and senders hold no quote (an id is what msgkey.ValidProbeID accepts).
func ProbeBody(id, sentBy string) string {
	return `{"pipelineProbe":"` + id + `","sentBy":"` + sentBy + `"}`
}

// The consumer's environment: constructs/consumer sets every variable, functions/consume
// reads them once per cold start (an optional variable set to "" counts as unset).
const (
	EnvTableName        = "IDEMPOTENCY_TABLE_NAME"
	EnvKeyPrefix        = "IDEMPOTENCY_KEY_PREFIX"
	EnvKeySource        = "IDEMPOTENCY_KEY_SOURCE"
	EnvPartitionKey     = "IDEMPOTENCY_PARTITION_KEY"
	EnvSortKey          = "IDEMPOTENCY_SORT_KEY"
	EnvTenantSource     = "IDEMPOTENCY_TENANT_SOURCE"
	EnvRecordTTL        = "IDEMPOTENCY_RECORD_TTL"
	EnvLockCap          = "IDEMPOTENCY_LOCK_CAP"
	EnvValidatePayload  = "IDEMPOTENCY_VALIDATE_PAYLOAD"
	EnvCacheSize        = "IDEMPOTENCY_CACHE_SIZE"
	EnvDisabled         = "IDEMPOTENCY_DISABLED"
	EnvBatchConcurrency = "BATCH_CONCURRENCY"
	EnvDeadlineMargin   = "BATCH_DEADLINE_MARGIN"
	EnvMaxBodyBytes     = "MAX_BODY_BYTES"
	EnvDeadLetterQueue  = "DEAD_LETTER_QUEUE_URL"
)

// The dispatcher's environment: constructs/dispatcher sets it, functions/dispatch reads it.
const (
	EnvQueueURL        = "QUEUE_URL"
	EnvJobName         = "JOB_NAME"
	EnvDefaultGroupID  = "DEFAULT_MESSAGE_GROUP_ID"
	EnvSendMaxAttempts = "SEND_MAX_ATTEMPTS"
)

// Variables both functions read.
const (
	EnvMetricsNamespace = "METRICS_NAMESPACE"
	EnvLogLevel         = "LOG_LEVEL"
)

// Defaults and bounds both sides hold a value to.
const (
	// DefaultConsumerTimeout is the consumer function's timeout unless configured, which the
	// queue's visibility timeout is derived from (constructs/consumer's DefaultTimeout and
	// constructs/queue's DefaultConsumerTimeout are this one).
	DefaultConsumerTimeout = 30 * time.Second
	// VisibilityFactor is how many consumer timeouts a source queue's visibility timeout
	// covers at least (AWS's guidance for SQS event sources), so a batch is not delivered
	// again while an attempt may still run (constructs/queue and constructs/consumer check it
	// with this one).
	VisibilityFactor = 6
	// DefaultKeySource is where a message carries its idempotency key unless configured.
	DefaultKeySource = "body:idempotencyKey"
	// TenantGroup is the tenant source that takes a message's MessageGroupId.
	TenantGroup = "group"
	// MaxSourceNameBytes bounds a source's name: SQS allows message attribute names of up to
	// 256 characters (all ASCII), and a body field gets the same bound in bytes, so that a
	// configuration typo cannot smuggle in a huge string.
	MaxSourceNameBytes = 256
	// MaxKeyAttrBytes is DynamoDB's limit on the name of a key attribute.
	MaxKeyAttrBytes = 255
	// MaxKeyPrefixBytes keeps "<prefix>#<key>" within DynamoDB's 2048-byte partition key
	// for any key msgkey accepts (512 bytes).
	MaxKeyPrefixBytes = 1024
	// MaxCacheSize bounds IDEMPOTENCY_CACHE_SIZE, the completed records kept in memory per
	// execution environment.
	MaxCacheSize = 1_000_000
	// MaxBatchConcurrency bounds BATCH_CONCURRENCY: the largest SQS event source batch, so
	// a larger bound could never be used.
	MaxBatchConcurrency = 10_000
	// DefaultSendMaxAttempts and MaxSendMaxAttempts are SEND_MAX_ATTEMPTS's default and
	// bound: how often the dispatcher tries one SendMessageBatch entry.
	DefaultSendMaxAttempts = 5
	MaxSendMaxAttempts     = 10
)

// Source kinds, the part of a source before its first ':'.
const (
	SourceBody      = "body"
	SourceAttribute = "attribute"
)

// ErrSource is wrapped by every error ParseSource and ParseTenantSource return.
var ErrSource = errors.New("invalid key source")

// sourceForms is what a key source may look like, for error messages.
const sourceForms = `want "body:<json field>" or "attribute:<message attribute name>"`

// ParseSource splits a key source, "body:<json field>" or "attribute:<message attribute
// name>", into its kind (SourceBody or SourceAttribute) and name, taken exactly as given
// (no trimming). The name is checked by CheckSourceName. The error wraps ErrSource and
// quotes s.
func ParseSource(s string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w %q: %s", ErrSource, s, sourceForms)
	case kind != SourceBody && kind != SourceAttribute:
		return "", "", fmt.Errorf("%w %q: unknown kind %q, %s", ErrSource, s, kind, sourceForms)
	}
	if err := CheckSourceName(kind, name); err != nil {
		return "", "", fmt.Errorf("%w %q: %w", ErrSource, s, err)
	}
	return kind, name, nil
}

// ParseTenantSource is ParseSource that also accepts TenantGroup (kind and name then both
// TenantGroup): where a composite-key table's tenant comes from.
func ParseTenantSource(s string) (kind, name string, err error) {
	if s == TenantGroup {
		return TenantGroup, TenantGroup, nil
	}
	if _, _, ok := strings.Cut(s, ":"); !ok {
		return "", "", fmt.Errorf(`%w %q: want "body:<json field>", "attribute:<message attribute name>" or %q (the MessageGroupId)`, ErrSource, s, TenantGroup)
	}
	return ParseSource(s)
}

// CheckSourceName says why name cannot be a source's name of kind, or nil. Attribute names
// follow the SQS rules (1-256 characters of A-Za-z0-9 _ - ., no leading, trailing or doubled
// period, no "AWS." or "Amazon." prefix), since any other name can never be present on a
// message. A body field's name may be any non-empty string of valid UTF-8 up to 256 bytes,
// spaces included: it is matched exactly against the JSON object's member names.
func CheckSourceName(kind, name string) error {
	if err := checkName(kind+" name", name, MaxSourceNameBytes, ""); err != nil || kind != SourceAttribute {
		return err
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("attribute name has %q at byte %d: SQS allows only A-Za-z0-9, '_', '-' and '.'", r, i)
		}
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasPrefix(name, ".") || strings.HasSuffix(name, "."):
		return errors.New("attribute name starts or ends with '.', which SQS does not allow")
	case strings.Contains(name, ".."):
		return errors.New("attribute name contains '..', which SQS does not allow")
	case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
		return errors.New(`attribute names starting with "AWS." or "Amazon." are reserved by SQS`)
	}
	return nil
}

// CheckKeyPrefix says why p cannot be IDEMPOTENCY_KEY_PREFIX, the namespace before '#' in
// every record id, or nil.
func CheckKeyPrefix(p string) error {
	if err := checkName("key prefix", p, MaxKeyPrefixBytes, ""); err != nil {
		return err
	}
	if strings.Contains(p, "#") {
		return errors.New(`key prefix contains "#", the separator of the record id`)
	}
	return nil
}

// CheckPartitionKey says why name cannot be the idempotency table's partition key
// attribute (IDEMPOTENCY_PARTITION_KEY), or nil: 1-255 bytes of UTF-8, none of the
// attributes every record writes.
func CheckPartitionKey(name string) error {
	return checkKeyAttr("partition key", name, layout.ReservedAttrs())
}

// CheckSortKey says why name cannot be the idempotency table's sort key attribute
// (IDEMPOTENCY_SORT_KEY) beside partition key pk, or nil: as CheckPartitionKey, and not pk.
func CheckSortKey(name, pk string) error {
	return checkKeyAttr("sort key", name, append([]string{pk}, layout.ReservedAttrs()...))
}

func checkKeyAttr(what, name string, refused []string) error {
	if err := checkName(what+" attribute name", name, MaxKeyAttrBytes, "DynamoDB's "); err != nil {
		return err
	}
	if slices.Contains(refused, name) {
		return fmt.Errorf("%s attribute %q is one of %s: the key attributes need names of their own, or every write would change the record's key",
			what, name, strings.Join(refused, ", "))
	}
	return nil
}

// checkName says why name is not 1 to max bytes of valid UTF-8 (whose: whose bound it is,
// e.g. "DynamoDB's "), naming it as what, or nil.
func checkName(what, name string, max int, whose string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty %s", what)
	case len(name) > max:
		return fmt.Errorf("%s is %d bytes, longer than %s%d", what, len(name), whose, max)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	return nil
}
