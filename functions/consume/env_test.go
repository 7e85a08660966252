package consume

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/batch"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Idempotency: idempotency.Config{TableName: "idem", KeyPrefix: "consumer", PartitionKeyAttr: "id", RecordTTL: 24 * time.Hour,
			LockCap: 15 * time.Minute, ValidatePayload: true},
		KeySource:        msgkey.Source{Kind: msgkey.SourceBody, Name: "idempotencyKey"},
		Batch:            batch.Options{Concurrency: 10, DeadlineMargin: 2 * time.Second},
		MaxBodyBytes:     262144,
		MetricsNamespace: "IdempotentSQS",
		LogLevel:         slog.LevelInfo,
		Service:          "consumer",
	}
	if !equalConfig(cfg, want) {
		t.Errorf("cfg = %+v\nwant %+v", cfg, want)
	}
	empties := map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"}
	for _, v := range []string{"IDEMPOTENCY_KEY_PREFIX", "IDEMPOTENCY_KEY_SOURCE", "IDEMPOTENCY_PARTITION_KEY", "IDEMPOTENCY_SORT_KEY", "IDEMPOTENCY_TENANT_SOURCE",
		"IDEMPOTENCY_RECORD_TTL", "IDEMPOTENCY_LOCK_CAP", "IDEMPOTENCY_VALIDATE_PAYLOAD", "IDEMPOTENCY_CACHE_SIZE", "IDEMPOTENCY_DISABLED",
		"BATCH_CONCURRENCY", "BATCH_DEADLINE_MARGIN", "MAX_BODY_BYTES", "DEAD_LETTER_QUEUE_URL", "METRICS_NAMESPACE", "LOG_LEVEL"} {
		empties[v] = ""
	}
	if cfg, err := LoadConfig(lookupFrom(empties)); err != nil || !equalConfig(cfg, want) {
		t.Errorf("optional variables set to \"\" must mean the defaults: %+v, %v", cfg, err)
	}
}

// equalConfig compares configs field by field (idempotency.Config holds a func, so no ==).
func equalConfig(a, b Config) bool {
	ai, bi := a.Idempotency, b.Idempotency
	if ai.Now != nil || bi.Now != nil {
		return false
	}
	return ai.TableName == bi.TableName && ai.KeyPrefix == bi.KeyPrefix && ai.PartitionKeyAttr == bi.PartitionKeyAttr &&
		ai.SortKeyAttr == bi.SortKeyAttr && ai.RecordTTL == bi.RecordTTL && ai.LockCap == bi.LockCap &&
		ai.ValidatePayload == bi.ValidatePayload && ai.StoreResult == bi.StoreResult && ai.CacheSize == bi.CacheSize &&
		ai.Disabled == bi.Disabled && ai.Retry == bi.Retry && a.KeySource == b.KeySource && a.Tenant == b.Tenant &&
		a.Batch.Concurrency == b.Batch.Concurrency && a.Batch.DeadlineMargin == b.Batch.DeadlineMargin &&
		a.MaxBodyBytes == b.MaxBodyBytes && a.DeadLetterQueueURL == b.DeadLetterQueueURL &&
		a.MetricsNamespace == b.MetricsNamespace && a.LogLevel == b.LogLevel && a.Service == b.Service
}

func TestLoadConfigValues(t *testing.T) {
	cfg, err := LoadConfig(lookupFrom(map[string]string{
		"IDEMPOTENCY_TABLE_NAME": "arn:aws:dynamodb:eu-west-1:123456789012:table/idem", "IDEMPOTENCY_KEY_PREFIX": "orders",
		"IDEMPOTENCY_KEY_SOURCE": "attribute:Key", "IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant",
		"IDEMPOTENCY_RECORD_TTL": "48h", "IDEMPOTENCY_LOCK_CAP": "30s", "IDEMPOTENCY_VALIDATE_PAYLOAD": "FALSE",
		"IDEMPOTENCY_CACHE_SIZE": "500", "BATCH_CONCURRENCY": "4", "BATCH_DEADLINE_MARGIN": "100ms", "MAX_BODY_BYTES": "1048576",
		"METRICS_NAMESPACE": "Orders/Prod", "LOG_LEVEL": "warn",
	}))
	if err != nil {
		t.Fatal(err)
	}
	i := cfg.Idempotency
	if i.TableName != "arn:aws:dynamodb:eu-west-1:123456789012:table/idem" || i.KeyPrefix != "orders" || i.SortKeyAttr != "sk" ||
		i.RecordTTL != 48*time.Hour || i.LockCap != 30*time.Second || i.ValidatePayload || i.CacheSize != 500 ||
		cfg.KeySource.String() != "attribute:Key" || cfg.Tenant.String() != "body:tenant" || cfg.Batch.Concurrency != 4 ||
		cfg.Batch.DeadlineMargin != 100*time.Millisecond || cfg.MaxBodyBytes != 1048576 || cfg.MetricsNamespace != "Orders/Prod" || cfg.LogLevel != slog.LevelWarn {
		t.Errorf("cfg = %+v", cfg)
	}
	cfg, err = LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_DISABLED": "true"}))
	if err != nil || !cfg.Idempotency.Disabled {
		t.Errorf("disabled without a table: %+v, %v", cfg, err)
	}
	cfg, err = LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "t12", "IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "group"}))
	if err != nil || !cfg.Tenant.Group || cfg.Tenant.String() != "group" {
		t.Errorf("group tenant: %+v, %v", cfg.Tenant, err)
	}
}

func TestLoadConfigDeadLetterQueueURL(t *testing.T) {
	for _, u := range []string{
		"https://sqs.us-east-1.amazonaws.com/123456789012/q-dlq",
		"https://sqs.eu-west-1.amazonaws.com/123456789012/q-dlq.fifo",
		"http://127.0.0.1:9324/000000000000/q", // a local SQS-compatible server
	} {
		cfg, err := LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem", "DEAD_LETTER_QUEUE_URL": u}))
		if err != nil || cfg.DeadLetterQueueURL != u {
			t.Errorf("%s: DeadLetterQueueURL %q, err %v", u, cfg.DeadLetterQueueURL, err)
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	const unset = "\x00unset"
	const partitionKeyWant = "the table's partition key attribute name (1-255 bytes of UTF-8, none of " +
		"expiration, in_progress_expiration, status, data, validation, owner, attempt, result_dropped: " +
		"the attributes every idempotency record writes)"
	cases := []struct {
		name string
		env  map[string]string
		msg  string
	}{
		{"table missing", map[string]string{"IDEMPOTENCY_TABLE_NAME": unset},
			"IDEMPOTENCY_TABLE_NAME is not set: want the idempotency table's name (3-255 characters of A-Za-z0-9_.-) or ARN"},
		{"table empty", map[string]string{"IDEMPOTENCY_TABLE_NAME": ""}, `IDEMPOTENCY_TABLE_NAME="": want the idempotency table's name`},
		{"table bad name", map[string]string{"IDEMPOTENCY_TABLE_NAME": "my table"}, `IDEMPOTENCY_TABLE_NAME="my table": want`},
		{"table too short", map[string]string{"IDEMPOTENCY_TABLE_NAME": "ab"}, `IDEMPOTENCY_TABLE_NAME="ab": want`},
		{"prefix with separator", map[string]string{"IDEMPOTENCY_KEY_PREFIX": "a#b"},
			`IDEMPOTENCY_KEY_PREFIX="a#b": want 1-1024 bytes of UTF-8 without "#" (the separator of the record id)`},
		{"prefix too long", map[string]string{"IDEMPOTENCY_KEY_PREFIX": strings.Repeat("p", 1025)}, `want 1-1024 bytes of UTF-8 without "#"`},
		{"prefix not UTF-8", map[string]string{"IDEMPOTENCY_KEY_PREFIX": "a\xffb"}, `want 1-1024 bytes of UTF-8 without "#"`},
		{"key source kind", map[string]string{"IDEMPOTENCY_KEY_SOURCE": "header:Key"},
			`IDEMPOTENCY_KEY_SOURCE="header:Key": want body:<json field> or attribute:<message attribute name> (invalid key source "header:Key": unknown kind "header"`},
		{"key source empty name", map[string]string{"IDEMPOTENCY_KEY_SOURCE": "body:"}, `IDEMPOTENCY_KEY_SOURCE="body:": want body:<json field>`},
		{"key source group", map[string]string{"IDEMPOTENCY_KEY_SOURCE": "group"}, `IDEMPOTENCY_KEY_SOURCE="group": want`},
		{"sort key reserved", map[string]string{"IDEMPOTENCY_SORT_KEY": "expiration", "IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_SORT_KEY="expiration": want the table's sort key attribute name (1-255 bytes, none of id, expiration,`},
		{"sort key is the partition key", map[string]string{"IDEMPOTENCY_SORT_KEY": "id", "IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_SORT_KEY="id": want`},
		{"sort key is the result-dropped mark", map[string]string{"IDEMPOTENCY_SORT_KEY": "result_dropped", "IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_SORT_KEY="result_dropped": want the table's sort key attribute name (1-255 bytes, none of id, expiration, in_progress_expiration, ` +
				`status, data, validation, owner, attempt, result_dropped: the partition key and the attributes every idempotency record writes)`},
		{"sort key not UTF-8", map[string]string{"IDEMPOTENCY_SORT_KEY": "s\xffk", "IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_SORT_KEY="s\xffk": want the table's sort key attribute name (1-255 bytes, none of id,`},
		{"partition key too long", map[string]string{"IDEMPOTENCY_PARTITION_KEY": strings.Repeat("p", 256)},
			`IDEMPOTENCY_PARTITION_KEY="` + strings.Repeat("p", 256) + `": want ` + partitionKeyWant},
		{"partition key not UTF-8", map[string]string{"IDEMPOTENCY_PARTITION_KEY": "p\xffk"}, `IDEMPOTENCY_PARTITION_KEY="p\xffk": want ` + partitionKeyWant},
		{"partition key is the TTL attribute", map[string]string{"IDEMPOTENCY_PARTITION_KEY": "expiration"},
			`IDEMPOTENCY_PARTITION_KEY="expiration": want ` + partitionKeyWant},
		{"partition key is the result-dropped mark", map[string]string{"IDEMPOTENCY_PARTITION_KEY": "result_dropped"},
			`IDEMPOTENCY_PARTITION_KEY="result_dropped": want ` + partitionKeyWant},
		{"sort key is the configured partition key", map[string]string{"IDEMPOTENCY_PARTITION_KEY": "pk", "IDEMPOTENCY_SORT_KEY": "pk", "IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_SORT_KEY="pk": want the table's sort key attribute name (1-255 bytes, none of pk, expiration,`},
		{"sort key without tenant", map[string]string{"IDEMPOTENCY_SORT_KEY": "sk"},
			"IDEMPOTENCY_TENANT_SOURCE is not set: want body:<json field>, attribute:<message attribute name> or group (the MessageGroupId): it is required when IDEMPOTENCY_SORT_KEY is set"},
		{"tenant without sort key", map[string]string{"IDEMPOTENCY_TENANT_SOURCE": "group"},
			`IDEMPOTENCY_TENANT_SOURCE="group": want unset: a tenant is only used with a composite key, and IDEMPOTENCY_SORT_KEY is not set`},
		{"tenant source invalid", map[string]string{"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "tenant"},
			`IDEMPOTENCY_TENANT_SOURCE="tenant": want body:<json field>, attribute:<message attribute name> or group`},
		{"ttl not a duration", map[string]string{"IDEMPOTENCY_RECORD_TTL": "1 day"},
			`IDEMPOTENCY_RECORD_TTL="1 day": want a Go duration of at least 1s, e.g. 24h`},
		{"ttl too short", map[string]string{"IDEMPOTENCY_RECORD_TTL": "500ms"}, `IDEMPOTENCY_RECORD_TTL="500ms": want a Go duration of at least 1s`},
		{"ttl below lock cap", map[string]string{"IDEMPOTENCY_RECORD_TTL": "5m", "IDEMPOTENCY_LOCK_CAP": "10m"},
			`IDEMPOTENCY_RECORD_TTL="5m": want a duration at least IDEMPOTENCY_LOCK_CAP=10m0s: a record must outlive its lock`},
		{"lock cap too long", map[string]string{"IDEMPOTENCY_LOCK_CAP": "16m"},
			`IDEMPOTENCY_LOCK_CAP="16m": want a Go duration from 1s to 15m, normally the function timeout (e.g. 30s)`},
		{"lock cap zero", map[string]string{"IDEMPOTENCY_LOCK_CAP": "0s"}, `IDEMPOTENCY_LOCK_CAP="0s": want a Go duration from 1s to 15m`},
		{"validate payload", map[string]string{"IDEMPOTENCY_VALIDATE_PAYLOAD": "yes"}, `IDEMPOTENCY_VALIDATE_PAYLOAD="yes": want true or false`},
		{"cache size negative", map[string]string{"IDEMPOTENCY_CACHE_SIZE": "-1"}, `IDEMPOTENCY_CACHE_SIZE="-1": want an integer from 0 to 1000000`},
		{"cache size not a number", map[string]string{"IDEMPOTENCY_CACHE_SIZE": "lots"}, `IDEMPOTENCY_CACHE_SIZE="lots": want an integer from 0 to 1000000`},
		{"disabled", map[string]string{"IDEMPOTENCY_DISABLED": "1"}, `IDEMPOTENCY_DISABLED="1": want true or false`},
		{"concurrency zero", map[string]string{"BATCH_CONCURRENCY": "0"}, `BATCH_CONCURRENCY="0": want an integer from 1 to 10000`},
		{"deadline margin", map[string]string{"BATCH_DEADLINE_MARGIN": "-1s"}, `BATCH_DEADLINE_MARGIN="-1s": want a Go duration from 100ms to 15m, e.g. 2s`},
		// Zero used to be accepted and then silently replaced by the 2s default (zero means
		// "default" in batch.Options); honoured, it would let records start that the
		// invocation cannot finish, and answer Lambda only as it ends the invocation.
		{"deadline margin zero", map[string]string{"BATCH_DEADLINE_MARGIN": "0s"},
			`BATCH_DEADLINE_MARGIN="0s": want a Go duration from 100ms to 15m, e.g. 2s (unset for the default 2s; a margin under 100ms leaves Lambda no time for the batch response, and 0 would start records up to the moment Lambda ends the invocation)`},
		{"deadline margin below the minimum", map[string]string{"BATCH_DEADLINE_MARGIN": "99ms"}, `BATCH_DEADLINE_MARGIN="99ms": want a Go duration from 100ms to 15m`},
		{"deadline margin above Lambda's maximum timeout", map[string]string{"BATCH_DEADLINE_MARGIN": "15m1s"}, `BATCH_DEADLINE_MARGIN="15m1s": want a Go duration from 100ms to 15m`},
		{"deadline margin unit", map[string]string{"BATCH_DEADLINE_MARGIN": "2"}, `BATCH_DEADLINE_MARGIN="2": want a Go duration`},
		{"max body zero", map[string]string{"MAX_BODY_BYTES": "0"}, `MAX_BODY_BYTES="0": want an integer from 1 to 1048576`},
		{"max body above SQS", map[string]string{"MAX_BODY_BYTES": "1048577"}, `MAX_BODY_BYTES="1048577": want an integer from 1 to 1048576`},
		{"namespace", map[string]string{"METRICS_NAMESPACE": "AWS/Lambda"}, `METRICS_NAMESPACE="AWS/Lambda": want a CloudWatch namespace`},
		{"log level", map[string]string{"LOG_LEVEL": "TRACE"}, `LOG_LEVEL="TRACE": want DEBUG, INFO, WARN or ERROR`},
		{"dead letter not a URL", map[string]string{"DEAD_LETTER_QUEUE_URL": "q-dlq"},
			`DEAD_LETTER_QUEUE_URL="q-dlq": want an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>`},
		{"dead letter ARN", map[string]string{"DEAD_LETTER_QUEUE_URL": "arn:aws:sqs:us-east-1:123456789012:q-dlq"},
			`DEAD_LETTER_QUEUE_URL="arn:aws:sqs:us-east-1:123456789012:q-dlq": want an SQS queue URL`},
		{"dead letter ftp", map[string]string{"DEAD_LETTER_QUEUE_URL": "ftp://sqs.us-east-1.amazonaws.com/123456789012/q-dlq"},
			`DEAD_LETTER_QUEUE_URL="ftp://sqs.us-east-1.amazonaws.com/123456789012/q-dlq": want an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>`},
		{"dead letter no path", map[string]string{"DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com"},
			`DEAD_LETTER_QUEUE_URL="https://sqs.us-east-1.amazonaws.com": want an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>`},
		{"dead letter no name", map[string]string{"DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/"},
			`DEAD_LETTER_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/": want an SQS queue URL`},
		{"dead letter three segments", map[string]string{"DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/q/dlq"},
			`DEAD_LETTER_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/q/dlq": want an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>`},
		{"dead letter no host", map[string]string{"DEAD_LETTER_QUEUE_URL": "https:///123456789012/q-dlq"},
			`DEAD_LETTER_QUEUE_URL="https:///123456789012/q-dlq": want an SQS queue URL`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"}
			for k, v := range c.env {
				if v == unset {
					delete(env, k)
				} else {
					env[k] = v
				}
			}
			_, err := LoadConfig(lookupFrom(env))
			var ee *EnvError
			if !errors.Is(err, ErrConfig) || !errors.As(err, &ee) {
				t.Fatalf("err = %v, want ErrConfig with an *EnvError", err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q\ndoes not contain %q", err, c.msg)
			}
		})
	}
}

// Every attribute the idempotency record writes, and the partition key, is refused as
// IDEMPOTENCY_SORT_KEY by an *EnvError naming the variable, at start, rather than by the
// idempotency library's generic configuration error.
func TestLoadConfigRefusesRecordAttributesAsSortKey(t *testing.T) {
	for _, name := range append([]string{"id"}, idempotency.ReservedAttrs()...) {
		_, err := LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem", "IDEMPOTENCY_SORT_KEY": name, "IDEMPOTENCY_TENANT_SOURCE": "group"}))
		var ee *EnvError
		if !errors.As(err, &ee) || ee.Var != "IDEMPOTENCY_SORT_KEY" || ee.Value != name {
			t.Errorf("IDEMPOTENCY_SORT_KEY=%s: err = %v, want an *EnvError for IDEMPOTENCY_SORT_KEY", name, err)
		}
	}
}

// Every attribute the idempotency record writes is refused as IDEMPOTENCY_PARTITION_KEY too.
func TestLoadConfigRefusesRecordAttributesAsPartitionKey(t *testing.T) {
	for _, name := range idempotency.ReservedAttrs() {
		_, err := LoadConfig(lookupFrom(map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem", "IDEMPOTENCY_PARTITION_KEY": name}))
		var ee *EnvError
		if !errors.As(err, &ee) || ee.Var != "IDEMPOTENCY_PARTITION_KEY" || ee.Value != name {
			t.Errorf("IDEMPOTENCY_PARTITION_KEY=%s: err = %v, want an *EnvError for IDEMPOTENCY_PARTITION_KEY", name, err)
		}
	}
}

// IDEMPOTENCY_PARTITION_KEY names the table's partition key attribute: an existing table
// keyed on another name than "id" (constructs/table.ImportIdempotencyTable) reaches the
// store. Unset or "" means "id", the Powertools for AWS Lambda layout.
func TestLoadConfigPartitionKey(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "id"},
		{map[string]string{"IDEMPOTENCY_PARTITION_KEY": ""}, "id"},
		{map[string]string{"IDEMPOTENCY_PARTITION_KEY": "pk"}, "pk"},
		{map[string]string{"IDEMPOTENCY_PARTITION_KEY": strings.Repeat("p", 255)}, strings.Repeat("p", 255)},
		// With a composite key, "id" is a valid sort key once the partition key is elsewhere.
		{map[string]string{"IDEMPOTENCY_PARTITION_KEY": "tenant", "IDEMPOTENCY_SORT_KEY": "id", "IDEMPOTENCY_TENANT_SOURCE": "group"}, "tenant"},
	} {
		env := map[string]string{"IDEMPOTENCY_TABLE_NAME": "idem"}
		for k, v := range tt.env {
			env[k] = v
		}
		cfg, err := LoadConfig(lookupFrom(env))
		if err != nil || cfg.Idempotency.PartitionKeyAttr != tt.want {
			t.Errorf("%v: PartitionKeyAttr = %q, %v; want %q", tt.env, cfg.Idempotency.PartitionKeyAttr, err, tt.want)
		}
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	_, err := LoadConfig(lookupFrom(map[string]string{"MAX_BODY_BYTES": "big", "LOG_LEVEL": "loud", "IDEMPOTENCY_SORT_KEY": "sk"}))
	for _, v := range []string{"IDEMPOTENCY_TABLE_NAME", "MAX_BODY_BYTES", "LOG_LEVEL", "IDEMPOTENCY_TENANT_SOURCE"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("error %v does not name %s", err, v)
		}
	}
}
