package idempotency

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	api := &dynamodb.Client{}
	valid := func(mod func(*Config)) Config {
		c := Config{TableName: "t"}
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		api  DynamoDBAPI
		cfg  Config
		want string
	}{
		{"nil api", nil, valid(func(*Config) {}),
			"DynamoDBAPI is nil: pass a *dynamodb.Client (built with idempotency.WithoutSDKRetries), or set Config.Disabled"},
		{"nil client pointer", (*dynamodb.Client)(nil), valid(func(*Config) {}),
			"DynamoDBAPI is nil"},
		{"empty table", api, valid(func(c *Config) { c.TableName = " " }),
			"Config.TableName is empty: set it to the idempotency table's name (IDEMPOTENCY_TABLE_NAME), or set Config.Disabled"},
		{"prefix with separator", api, valid(func(c *Config) { c.KeyPrefix = "a#b" }),
			`Config.KeyPrefix = "a#b" contains "#", the separator of the record id: use a prefix without it`},
		{"partition key is a record attribute", api, valid(func(c *Config) { c.PartitionKeyAttr = "status" }),
			`Config.PartitionKeyAttr = "status" is an attribute the idempotency record writes: the table's key attributes need other names (the default partition key is "id")`},
		{"sort key is a record attribute", api, valid(func(c *Config) { c.SortKeyAttr = "expiration" }),
			`Config.SortKeyAttr = "expiration" is an attribute the idempotency record writes`},
		{"sort key equals partition key", api, valid(func(c *Config) { c.SortKeyAttr = "id" }),
			`Config.SortKeyAttr = "id" is the same as Config.PartitionKeyAttr: use the table's sort key attribute, or leave it empty for a partition-key-only table`},
		{"lock cap negative", api, valid(func(c *Config) { c.LockCap = -time.Second }),
			"Config.LockCap = -1s: must be between 1s and 15m0s (the maximum Lambda timeout); set it to the function timeout, or 0 for the default 15m0s"},
		{"lock cap too long", api, valid(func(c *Config) { c.LockCap = 16 * time.Minute }),
			"Config.LockCap = 16m0s: must be between 1s and 15m0s"},
		{"lock cap too short", api, valid(func(c *Config) { c.LockCap = time.Millisecond }),
			"Config.LockCap = 1ms: must be between 1s and 15m0s"},
		{"ttl too short", api, valid(func(c *Config) { c.RecordTTL = 500 * time.Millisecond }),
			"Config.RecordTTL = 500ms: must be at least 1s (expiration holds whole seconds), or 0 for the default 24h0m0s"},
		{"ttl shorter than lock", api, valid(func(c *Config) { c.RecordTTL = 10 * time.Minute }),
			"Config.RecordTTL = 10m0s is shorter than Config.LockCap = 15m0s: a record would expire while its lock is held; raise RecordTTL or lower LockCap"},
		{"negative cache", api, valid(func(c *Config) { c.CacheSize = -1 }),
			"Config.CacheSize = -1: must be >= 1 to cache COMPLETED records, or 0 to turn the cache off"},
		{"retry attempts negative", api, valid(func(c *Config) { c.Retry.MaxAttempts = -1 }),
			"Config.Retry.MaxAttempts = -1: must be between 1 (no retries) and 20, or 0 for the default 5"},
		{"retry attempts too many", api, valid(func(c *Config) { c.Retry.MaxAttempts = 21 }),
			"Config.Retry.MaxAttempts = 21: must be between 1 (no retries) and 20"},
		{"retry base negative", api, valid(func(c *Config) { c.Retry.BaseDelay = -time.Millisecond; c.Retry.MaxDelay = time.Second }),
			"Config.Retry.BaseDelay = -1ms: must be positive, or 0 for the default 25ms"},
		{"retry max below base", api, valid(func(c *Config) { c.Retry.BaseDelay = time.Second; c.Retry.MaxDelay = time.Millisecond }),
			"Config.Retry.MaxDelay = 1ms is below Config.Retry.BaseDelay = 1s: raise MaxDelay, or 0 for the default 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New(tc.api, tc.cfg)
			if g != nil || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", g, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %s\nlacks\n  %s", err, tc.want)
			}
		})
	}
}

func TestNewReportsEveryProblemAtOnce(t *testing.T) {
	_, err := New(nil, Config{CacheSize: -1, LockCap: -1})
	for _, want := range []string{"DynamoDBAPI is nil", "Config.TableName is empty", "Config.CacheSize = -1", "Config.LockCap = -1ns"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	g, err := New(&dynamodb.Client{}, Config{TableName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Config()
	want := Config{
		TableName: "t", KeyPrefix: DefaultKeyPrefix, PartitionKeyAttr: DefaultPartitionKeyAttr,
		RecordTTL: DefaultRecordTTL, LockCap: DefaultLockCap,
		Retry: RetryPolicy{MaxAttempts: DefaultRetryMaxAttempts, BaseDelay: DefaultRetryBaseDelay, MaxDelay: DefaultRetryMaxDelay},
	}
	c.Now = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Config() = %+v\nwant       %+v", c, want)
	}
	if g.cache != nil {
		t.Error("cache built with CacheSize 0")
	}
	// A BaseDelay above the default MaxDelay raises the MaxDelay default with it.
	g, err = New(&dynamodb.Client{}, Config{TableName: "t", Retry: RetryPolicy{BaseDelay: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Config().Retry.MaxDelay; got != 2*time.Second {
		t.Errorf("MaxDelay = %s, want 2s", got)
	}
}

func TestNewDisabledNeedsNoTable(t *testing.T) {
	if _, err := New(nil, Config{Disabled: true}); err != nil {
		t.Errorf("New(nil, Disabled) = %v", err)
	}
}

func TestWithoutSDKRetries(t *testing.T) {
	var o dynamodb.Options
	WithoutSDKRetries(&o)
	if o.RetryMaxAttempts != 1 {
		t.Errorf("RetryMaxAttempts = %d, want 1", o.RetryMaxAttempts)
	}
}
