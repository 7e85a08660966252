package idempotency

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

// srv is DynamoDB Local, started once for the package. A start failure fails the run.
var srv *dynamolocal.Server

func TestMain(m *testing.M) { os.Exit(testmain.With(m, dynamolocal.Start, &srv)) }

var tableSeq atomic.Int64

// newTable creates a fresh table (partition key "id", and sortKey when not empty) so tests
// never see each other's records.
func newTable(tb testing.TB, sortKey string) string {
	tb.Helper()
	name := fmt.Sprintf("idem-%d", tableSeq.Add(1))
	if err := srv.CreateTable(context.Background(), name, "id", sortKey); err != nil {
		tb.Fatal(err)
	}
	return name
}

// transport is the HTTP client of a test's DynamoDB client: it counts requests by operation
// (X-Amz-Target), so call counts include everything the SDK sent, and lets a test inject
// faults in front of (or behind) the real server.
type transport struct {
	inner  *http.Client
	mu     sync.Mutex
	counts map[string]int
	// fault, when set, sees each request (op, 1-based index of that op) first. It returns a
	// response or an error to send instead of the server's; forward=true makes the request
	// reach the server first (an ambiguous failure: the write happened, the reply is lost).
	fault func(op string, n int) (resp *http.Response, err error, forward bool)
}

func newTransport() *transport {
	return &transport{
		inner:  &http.Client{Transport: &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 128}},
		counts: map[string]int{},
	}
}

func (t *transport) Do(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	t.mu.Lock()
	t.counts[op]++
	n := t.counts[op]
	fault := t.fault
	t.mu.Unlock()
	if fault != nil {
		if resp, err, forward := fault(op, n); resp != nil || err != nil {
			if forward {
				if r, ferr := t.inner.Do(req); ferr == nil {
					_, _ = io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
			}
			if resp != nil {
				resp.Request = req
			}
			return resp, err
		}
	}
	return t.inner.Do(req)
}

// snapshot returns the counts so far and resets them.
func (t *transport) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts
	t.counts = map[string]int{}
	return c
}

// dynamoError is the HTTP response DynamoDB sends for an error of the given type, so the SDK
// deserializes it into its real error type.
func dynamoError(status int, code, msg string) *http.Response {
	body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
	return &http.Response{
		Status:     http.StatusText(status),
		StatusCode: status,
		Header: http.Header{
			"Content-Type":     {"application/x-amz-json-1.0"},
			"X-Amzn-Requestid": {"test"},
		},
		Body:          io.NopCloser(bytes.NewBufferString(body)),
		ContentLength: int64(len(body)),
	}
}

// env is one test's table, client, transport and clock.
type env struct {
	table  string
	client *dynamodb.Client
	tr     *transport
	clock  *clock
}

func newEnv(tb testing.TB, sortKey string) *env {
	tb.Helper()
	tr := newTransport()
	return &env{
		table:  newTable(tb, sortKey),
		client: srv.Client(WithoutSDKRetries, func(o *dynamodb.Options) { o.HTTPClient = tr }),
		tr:     tr,
		clock:  newClock(),
	}
}

// guard builds a Guard on the env's table and clock; cfg's zero fields take the defaults.
func (e *env) guard(tb testing.TB, cfg Config) *Guard {
	tb.Helper()
	cfg.TableName = e.table
	if cfg.Now == nil {
		cfg.Now = e.clock.Now
	}
	g, err := New(e.client, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	// Retries in these tests should not wait on the wall clock.
	if st, ok := g.store.(*dynamoStore); ok {
		st.retry.sleep = func(context.Context, time.Duration) error { return nil }
	}
	return g
}

// item reads a record straight from the table (tests only; the Guard never reads).
func (e *env) item(tb testing.TB, key map[string]string) map[string]types.AttributeValue {
	tb.Helper()
	k := map[string]types.AttributeValue{}
	for n, v := range key {
		k[n] = &types.AttributeValueMemberS{Value: v}
	}
	out, err := srv.Client().GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table), Key: k, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out.Item
}

func (e *env) record(tb testing.TB, key map[string]string) *record {
	tb.Helper()
	r, err := decodeRecord(e.item(tb, key))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// put writes an item straight into the table, to stage states the Guard would not leave.
func (e *env) put(tb testing.TB, item map[string]types.AttributeValue) {
	tb.Helper()
	if _, err := srv.Client().PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(e.table), Item: item,
	}); err != nil {
		tb.Fatal(err)
	}
}

// clock is a controllable Config.Now. It starts at the real time, truncated to the second, so
// records it stamps are not expired in real time (DynamoDB Local's own TTL sweeper must not
// delete them behind a test's back).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// handler returns a Run func that counts its calls and returns result, err.
func handler(calls *atomic.Int64, result []byte, err error) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		calls.Add(1)
		return result, err
	}
}
