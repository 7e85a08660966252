package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Regression tests for defects found by adversarial testing, each against DynamoDB Local.

// Two requests of the composite layout whose (partition, sort) pair joins into the same
// string with a NUL separator, {tenant "a\x00b", key "c"} and {tenant "a", key "b\x00c"}, are
// two DynamoDB items and must stay two cache entries: otherwise the second is answered from
// the first's entry, as a duplicate whose effect never runs, or (with payload validation) as a
// payload mismatch that ends in the DLQ.
func TestCacheKeepsCompositeKeysApart(t *testing.T) {
	for _, validate := range []bool{false, true} {
		t.Run(fmt.Sprintf("ValidatePayload=%v", validate), func(t *testing.T) {
			e := newEnv(t, "sk")
			g := e.guard(t, Config{SortKeyAttr: "sk", CacheSize: 16, ValidatePayload: validate})
			reqs := []Request{
				{Tenant: "a\x00b", Key: "c", Payload: []byte("first")},
				{Tenant: "a", Key: "b\x00c", Payload: []byte("second")},
			}
			var calls atomic.Int64
			for _, req := range reqs {
				res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
				if err != nil || res.Outcome != OutcomeProcessed {
					t.Fatalf("%s: Run = %+v, %v; want processed (its own record)", describeKey(req.Key, req.Tenant), res, err)
				}
			}
			if calls.Load() != 2 {
				t.Errorf("handler ran %d times, want 2 (one effect per record)", calls.Load())
			}
			for _, req := range reqs {
				if r := e.record(t, map[string]string{"id": "default#" + req.Tenant, "sk": req.Key}); r == nil || r.status != StatusCompleted {
					t.Errorf("%s: record = %+v, want COMPLETED", describeKey(req.Key, req.Tenant), r)
				}
			}
			// Each is still its own duplicate, answered by its own cache entry.
			e.tr.snapshot()
			for _, req := range reqs {
				if res, err := g.Run(t.Context(), req, handler(&calls, nil, nil)); err != nil || res.Outcome != OutcomeDuplicate {
					t.Errorf("%s again: Run = %+v, %v; want duplicate", describeKey(req.Key, req.Tenant), res, err)
				}
			}
			if got := e.tr.snapshot(); len(got) != 0 {
				t.Errorf("repeats made DynamoDB calls %v, want none (cache hits)", got)
			}
		})
	}
}

// itemCount scans the env's table (tests only) for how many items it holds.
func (e *env) itemCount(tb testing.TB) int32 {
	tb.Helper()
	out, err := srv.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		tb.Fatal(err)
	}
	return out.Count
}

// The SDK's JSON encoder turns bytes that are not UTF-8 into U+FFFD, so key "\xff" and then
// key "\xfe" would name one item and the second would be a false duplicate. Run rejects both
// as bad input, names the field, and writes nothing.
func TestRunRejectsInvalidUTF8Keys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sortKey string
		reqs    []Request
		want    string
	}{
		{"key", "", []Request{{Key: "\xff"}, {Key: "\xfe"}},
			"Request.Key is not valid UTF-8 (byte 0x"},
		{"key after valid bytes", "", []Request{{Key: "order-\xff"}, {Key: "order-\xfe"}},
			"Request.Key is not valid UTF-8 (byte 0x"},
		{"sort key", "sk", []Request{{Tenant: "t", Key: "\xff"}, {Tenant: "t", Key: "\xfe"}},
			"Request.Key is not valid UTF-8 (byte 0x"},
		{"tenant", "sk", []Request{{Tenant: "\xff", Key: "k"}, {Tenant: "\xfe", Key: "k"}},
			"Request.Tenant is not valid UTF-8 (byte 0x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.sortKey)
			g := e.guard(t, Config{SortKeyAttr: tc.sortKey, ValidatePayload: true})
			var calls atomic.Int64
			for _, req := range tc.reqs {
				res, err := g.Run(t.Context(), req, handler(&calls, nil, nil))
				if !errors.Is(err, ErrInvalidRequest) {
					t.Errorf("%s: Run = %+v, %v; want ErrInvalidRequest", describeKey(req.Key, req.Tenant), res, err)
					continue
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "U+FFFD") {
					t.Errorf("message %q lacks %q and the reason (U+FFFD)", err, tc.want)
				}
			}
			if calls.Load() != 0 {
				t.Errorf("handler ran %d times for invalid keys", calls.Load())
			}
			if got := e.tr.snapshot(); len(got) != 0 {
				t.Errorf("invalid keys made DynamoDB calls: %v", got)
			}
			if n := e.itemCount(t); n != 0 {
				t.Errorf("table holds %d items after invalid keys, want 0", n)
			}
		})
	}
}

// The key prefix and the key attribute names become part of every DynamoDB key: New rejects
// them when they are not UTF-8, since two prefixes "\xff" and "\xfe" would share every record.
func TestNewRejectsInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"key prefix", func(c *Config) { c.KeyPrefix = "team-\xff" },
			`Config.KeyPrefix = "team-\xff" is not valid UTF-8 (byte 0xff at offset 5)`},
		{"partition key attribute", func(c *Config) { c.PartitionKeyAttr = "\xfeid" },
			`Config.PartitionKeyAttr = "\xfeid" is not valid UTF-8 (byte 0xfe at offset 0)`},
		{"sort key attribute", func(c *Config) { c.SortKeyAttr = "sk\xc3" },
			`Config.SortKeyAttr = "sk\xc3" is not valid UTF-8 (byte 0xc3 at offset 2)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{TableName: "t"}
			tc.mod(&cfg)
			g, err := New(&dynamodb.Client{}, cfg)
			if g != nil || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", g, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "U+FFFD") {
				t.Errorf("error\n  %s\nlacks\n  %s (and the reason, U+FFFD)", err, tc.want)
			}
		})
	}
	// What the check prevents, on DynamoDB Local: two consumers with different prefixes.
	e := newEnv(t, "")
	var calls atomic.Int64
	for _, prefix := range []string{"\xff", "\xfe"} {
		g, err := New(e.client, Config{TableName: e.table, KeyPrefix: prefix})
		if err == nil {
			res, rerr := g.Run(t.Context(), Request{Key: "k"}, handler(&calls, nil, nil))
			t.Errorf("New accepted KeyPrefix %q; its Run = %+v, %v", prefix, res, rerr)
		}
	}
	if n := e.itemCount(t); n != 0 {
		t.Errorf("table holds %d items, want 0", n)
	}
}
