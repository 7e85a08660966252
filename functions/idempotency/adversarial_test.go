package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// A result over DynamoDB's 400 KB item limit must not keep the record INPROGRESS after the
// effect ran: then every redelivery after the lock lapses would run the effect again. The
// record ends COMPLETED without `data`, and its duplicates say the result was dropped.
func TestRunOversizeResultCompletesWithoutData(t *testing.T) {
	for _, cacheSize := range []int{0, 8} {
		t.Run(fmt.Sprintf("CacheSize=%d", cacheSize), func(t *testing.T) {
			e := newEnv(t, "")
			g := e.guard(t, Config{StoreResult: true, ValidatePayload: true, CacheSize: cacheSize})
			big := bytes.Repeat([]byte("x"), 410*1024)
			req := Request{Key: "k1", Payload: []byte("p")}
			var calls atomic.Int64

			e.tr.snapshot()
			res, err := g.Run(t.Context(), req, handler(&calls, big, nil))
			if err != nil || res.Outcome != OutcomeProcessed || !bytes.Equal(res.Data, big) || !res.ResultDropped {
				t.Errorf("first Run = %v, ResultDropped %v, %v; want processed with the handler's result, ResultDropped", res.Outcome, res.ResultDropped, err)
			}
			if got := e.tr.snapshot()["UpdateItem"]; got != 2 {
				t.Errorf("first Run sent %d UpdateItem, want 2 (acquire, complete: the size is known up front)", got)
			}
			checkDropped(t, e, id("k1"), len(big))

			// The redelivery after the lock would have lapsed.
			e.clock.Advance(DefaultLockCap + time.Second)
			for range 2 { // from DynamoDB, then (with the cache) from the cache
				res, err = g.Run(t.Context(), req, handler(&calls, big, nil))
				if err != nil || res.Outcome != OutcomeDuplicate || res.Data != nil || !res.ResultDropped {
					t.Errorf("repeat = %v, %d bytes, ResultDropped %v, %v; want a duplicate without data, ResultDropped",
						res.Outcome, len(res.Data), res.ResultDropped, err)
				}
			}
			want := 2
			if cacheSize > 0 {
				want = 0 // the processed run filled the cache
			}
			if got := e.tr.snapshot()["UpdateItem"]; got != want {
				t.Errorf("two duplicates sent %d UpdateItem, want %d", got, want)
			}
			if calls.Load() != 1 {
				t.Errorf("effect ran %d times, want once", calls.Load())
			}
		})
	}
}

// checkDropped asserts the record is COMPLETED without data or lock and marked with the
// dropped result's size.
func checkDropped(t *testing.T, e *env, key map[string]string, size int) {
	t.Helper()
	item := e.item(t, key)
	if r := e.record(t, key); r.status != StatusCompleted || r.data != nil || r.hasLock || !r.dropped {
		t.Errorf("record = status %s, %d bytes of data, lock %v, dropped %v; want COMPLETED without data or lock, dropped",
			r.status, len(r.data), r.hasLock, r.dropped)
	}
	if v, ok := item[AttrResultDropped]; !ok {
		t.Errorf("record has no %s marker: %v", AttrResultDropped, keys(item))
	} else if n, isN := v.(*types.AttributeValueMemberN); !isN || n.Value != fmt.Sprint(size) {
		t.Errorf("%s = %#v, want N %d (the result's size)", AttrResultDropped, v, size)
	}
}

// The up-front estimate stores every result that fits and leaves out every one that does not,
// at its boundary, with one complete either way. The estimate must not undercount: a result
// of resultRoom bytes is accepted by DynamoDB as is.
func TestRunResultAtTheSizeBoundary(t *testing.T) {
	for _, tc := range []struct {
		name, sortKey string
		req           Request
	}{
		{"partition key", "", Request{Key: strings.Repeat("k", 500), Payload: []byte("p")}},
		{"composite", "sk", Request{Tenant: strings.Repeat("t", 500), Key: strings.Repeat("k", 500), Payload: []byte("p")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.sortKey)
			g := e.guard(t, Config{SortKeyAttr: tc.sortKey, StoreResult: true, ValidatePayload: true})
			var calls atomic.Int64
			for _, extra := range []int{0, 1} { // room fits, room + 1 does not
				req := tc.req
				req.Key += fmt.Sprint(extra) // a record each
				k, err := buildKey(&g.cfg, req)
				if err != nil {
					t.Fatal(err)
				}
				room := g.store.(*dynamoStore).resultRoom(k, newOwner())
				if room < 400*1000 || room > maxItemBytes-itemSlack {
					t.Fatalf("resultRoom = %d: implausible", room)
				}
				size := room + extra
				data := bytes.Repeat([]byte("d"), size)
				e.tr.snapshot()
				res, err := g.Run(t.Context(), req, handler(&calls, data, nil))
				dropped := extra > 0
				if err != nil || res.Outcome != OutcomeProcessed || res.ResultDropped != dropped {
					t.Fatalf("%d bytes: Run = %v, ResultDropped %v, %v", size, res.Outcome, res.ResultDropped, err)
				}
				if got := e.tr.snapshot()["UpdateItem"]; got != 2 {
					t.Errorf("%d bytes: %d UpdateItem, want 2", size, got)
				}
				key := map[string]string{"id": "default#" + req.Key}
				if tc.sortKey != "" {
					key = map[string]string{"id": "default#" + req.Tenant, "sk": req.Key}
				}
				if dropped {
					checkDropped(t, e, key, size)
				} else if r := e.record(t, key); r.status != StatusCompleted || len(r.data) != size || r.dropped {
					t.Errorf("%d bytes: record status %s with %d bytes of data, dropped %v; want it stored", size, r.status, len(r.data), r.dropped)
				}
			}
		})
	}
}

// When the estimate cannot know the item is full (another client added a large attribute to
// it), DynamoDB refuses the complete with a ValidationException; complete is sent again
// without the result, so the record still ends COMPLETED: one extra write, only here.
func TestRunResultRefusedByDynamoDBCompletesWithoutData(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{StoreResult: true})
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	// A released record (lock 0) that some other tool annotated with 300 KB.
	e.put(t, map[string]types.AttributeValue{
		"id": s("default#k1"), AttrStatus: s(StatusInProgress), AttrExpiration: n(e.clock.Now().Add(time.Hour).Unix()),
		AttrLockExpiration: n(0), AttrAttempt: n(1), AttrOwner: s("earlier"), "audit": s(strings.Repeat("a", 300*1024)),
	})
	result := bytes.Repeat([]byte("r"), 150*1024) // fits the estimate, not the item
	var calls atomic.Int64
	e.tr.snapshot()
	res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, result, nil))
	if err != nil || res.Outcome != OutcomeProcessed || !res.ResultDropped || res.Attempt != 2 {
		t.Fatalf("Run = %v, attempt %d, ResultDropped %v, %v; want processed attempt 2, ResultDropped", res.Outcome, res.Attempt, res.ResultDropped, err)
	}
	if got := e.tr.snapshot()["UpdateItem"]; got != 3 {
		t.Errorf("%d UpdateItem, want 3 (acquire, refused complete, complete without the result)", got)
	}
	checkDropped(t, e, id("k1"), len(result))
	if _, ok := e.item(t, id("k1"))["audit"]; !ok {
		t.Error("the other client's attribute is gone")
	}
	res, err = g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, result, nil))
	if err != nil || res.Outcome != OutcomeDuplicate || !res.ResultDropped || calls.Load() != 1 {
		t.Errorf("repeat = %v, ResultDropped %v, %v, effect ran %d times; want a duplicate, ResultDropped, one effect",
			res.Outcome, res.ResultDropped, err, calls.Load())
	}
}

// A ValidationException that is not about the result fails the complete without the result
// too; Run returns that error, naming both tries, and the record stays INPROGRESS.
func TestRunCompleteFallbackReportsBothErrors(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{StoreResult: true})
	e.tr.fault = func(op string, n int) (*http.Response, error, bool) {
		if op == "UpdateItem" && n > 1 {
			return dynamoError(400, "ValidationException", "injected"), nil, false
		}
		return nil, nil, false
	}
	var calls atomic.Int64
	_, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, []byte("small"), nil))
	var se *StoreError
	if !errors.As(err, &se) || se.Op != "complete" {
		t.Fatalf("err = %v, want a *StoreError from complete", err)
	}
	if want := "complete without the result, which DynamoDB refused ("; !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "ValidationException") != 2 {
		t.Errorf("message %q lacks %q and both ValidationExceptions", err, want)
	}
	if got := e.tr.snapshot()["UpdateItem"]; got != 3 {
		t.Errorf("%d UpdateItem, want 3", got)
	}
	if r := e.record(t, id("k1")); r.status != StatusInProgress || r.dropped {
		t.Errorf("record = %+v, want INPROGRESS and unmarked", r)
	}
}

// A key whose earlier record dropped its result starts clean when it is acquired again (after
// its TTL): the new result is stored and the mark is gone.
func TestRunReacquireClearsDroppedMark(t *testing.T) {
	e := newEnv(t, "")
	g := e.guard(t, Config{StoreResult: true, RecordTTL: time.Hour})
	var calls atomic.Int64
	if res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, bytes.Repeat([]byte("x"), 410*1024), nil)); err != nil || !res.ResultDropped {
		t.Fatalf("Run = %+v, %v", res.ResultDropped, err)
	}
	e.clock.Advance(time.Hour + time.Second)
	res, err := g.Run(t.Context(), Request{Key: "k1"}, handler(&calls, []byte("small"), nil))
	if err != nil || res.Outcome != OutcomeProcessed || res.ResultDropped {
		t.Fatalf("after the TTL: %v, ResultDropped %v, %v; want processed, stored", res.Outcome, res.ResultDropped, err)
	}
	if r := e.record(t, id("k1")); r.dropped || string(r.data) != "small" {
		t.Errorf("record = %+v, want the new result and no mark", r)
	}
}

// The marker is written by the record, so it cannot be a key attribute of the table.
func TestNewReservesResultDroppedAttribute(t *testing.T) {
	_, err := New(&dynamodb.Client{}, Config{TableName: "t", SortKeyAttr: AttrResultDropped})
	if want := `Config.SortKeyAttr = "result_dropped" is an attribute the idempotency record writes`; !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Errorf("New = %v, want ErrInvalidConfig with %q", err, want)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
