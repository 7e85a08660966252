package consume

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// BenchmarkHandleBatch is our side of the peer comparison (test/bench/peers) in-process, so
// that a CPU profile shows where the consumer's time goes:
//
//	go test -run '^$' -bench HandleBatch -benchtime 40x -cpuprofile /tmp/consumer.prof ./functions/consume
//	go tool pprof -top -nodecount 40 /tmp/consumer.prof
//
// Each iteration is one invocation of the real Handler (LoadConfig, NewHandler, Handle, the
// Guard on DynamoDB Local, SDK retries off as Init builds it) with an event of batch records, one in
// ten of them repeating the key and body of a record completed in an earlier iteration, all
// records of the batch at once (BATCH_CONCURRENCY = batch size, as in the peer comparison).
// The effect only JSON-parses the body; logs are formatted at INFO (the default) and
// discarded. It fails on any batch item failure or on an effect count other than once per key.
//
// pool=main is the HTTP client the function builds (Init's dynamoHTTPClient: an idle
// connection kept per record in flight); pool=sdk is the SDK's default (10 idle connections
// per host), which the function used before the peer comparison's connection counts showed that above BATCH_CONCURRENCY=10
// it closes and redials a connection for almost every call.
func BenchmarkHandleBatch(b *testing.B) {
	for _, size := range []int{10, 100} {
		for _, pool := range []string{"sdk", "main"} {
			b.Run(fmt.Sprintf("batch=%d/pool=%s", size, pool), func(b *testing.B) { benchHandleBatch(b, size, pool == "main") })
		}
	}
}

func benchHandleBatch(b *testing.B, size int, mainPool bool) {
	table := fmt.Sprintf("consumer-bench-%d", tableSeq.Add(1))
	if err := srv.CreateTable(context.Background(), table, "id", ""); err != nil {
		b.Fatalf("create table: %v\n%s", err, srv.Output())
	}
	cfg, err := LoadConfig(lookupFrom(map[string]string{
		"IDEMPOTENCY_TABLE_NAME": table,
		"IDEMPOTENCY_LOCK_CAP":   "30s",
		"BATCH_CONCURRENCY":      fmt.Sprint(size),
	}))
	if err != nil {
		b.Fatal(err)
	}
	var effects atomic.Int64
	effect := func(_ context.Context, msg Message) ([]byte, error) {
		var v any
		if err := json.Unmarshal([]byte(msg.Body), &v); err != nil {
			return nil, err
		}
		effects.Add(1)
		return nil, nil
	}
	opts := []func(*dynamodb.Options){idempotency.WithoutSDKRetries}
	if mainPool {
		opts = append(opts, func(o *dynamodb.Options) { o.HTTPClient = dynamoHTTPClient() })
	}
	h, err := NewHandler(cfg, srv.Client(opts...), effect,
		telemetry.NewLogger(io.Discard, slog.LevelInfo), io.Discard)
	if err != nil {
		b.Fatal(err)
	}

	seq, unique := 0, 0
	var done []string // bodies of completed records, each repeated at most once
	next := func() events.SQSEvent {
		var ev events.SQSEvent
		var fresh []string
		for i := range size {
			seq++
			body := ""
			if i%10 == 9 && len(done) > 0 {
				body, done = done[len(done)-1], done[:len(done)-1]
			} else {
				body = fmt.Sprintf(`{"idempotencyKey":"key-%07d","orderId":%d,"amount":%d.%02d,"currency":"EUR","note":"peer benchmark record"}`,
					seq, seq, 10+seq%990, seq%100)
				fresh = append(fresh, body)
				unique++
			}
			ev.Records = append(ev.Records, record(fmt.Sprintf("m-%07d", seq), body))
		}
		done = append(done, fresh...)
		return ev
	}

	b.ResetTimer()
	records := 0
	for b.Loop() {
		b.StopTimer()
		ev := next()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b.StartTimer()
		resp, err := h.Handle(ctx, ev)
		b.StopTimer()
		cancel()
		if err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("Handle: %v, %d batch item failures", err, len(resp.BatchItemFailures))
		}
		records += len(ev.Records)
		b.StartTimer()
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	if got := effects.Load(); got != int64(unique) {
		b.Fatalf("the effect ran %d times for %d keys", got, unique)
	}
}
