package poller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
)

// batch is one invocation the poller made: when, its records and its payload's size.
type batch struct {
	at      time.Time
	records []events.SQSMessage
	bytes   int
}

// recorder is a function that takes every record: it keeps what it was invoked with.
type recorder struct {
	mu      sync.Mutex
	batches []batch
}

func (r *recorder) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.batches = append(r.batches, batch{at: time.Now(), records: ev.Records, bytes: len(payload)})
	r.mu.Unlock()
	return []byte(`{"batchItemFailures":[]}`), nil
}

func (r *recorder) got() []batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]batch(nil), r.batches...)
}

// The poller gathers a batch as Lambda's event source mapping does, on a real SQS server
// (ElasticMQ): with a batching window it waits the window out from the first record unless
// the batch fills first, and it keeps every invocation's event under Lambda's 6 MB payload.
func TestPollerBatchesAsLambda(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	srv, err := sqslocal.StartKind(ctx, sqslocal.ElasticMQ)
	if err != nil {
		t.Fatal(err) // an emulator that cannot start fails the test
	}
	defer srv.Stop()
	sq := srv.Client()
	poll := func(t *testing.T, name string, m standin.Mapping, bodies ...string) []batch {
		t.Helper()
		url, arn, err := srv.CreateQueue(ctx, name, map[string]string{"MaximumMessageSize": "1048576", "VisibilityTimeout": "120"})
		if err != nil {
			t.Fatal(err)
		}
		for start := 0; start < len(bodies); start++ { // one at a time: ten 1 MiB bodies pass SendMessageBatch's 1 MiB total
			if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(bodies[start])}); err != nil {
				t.Fatal(err)
			}
		}
		rec := &recorder{}
		m.ReportFailures = true
		p := &poller.Poller{SQS: sq, QueueURL: url, QueueARN: arn, Region: sqslocal.Region, Mapping: m, Envs: []poller.Invoker{rec}}
		pctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(pctx) }()
		for n := 0; n < len(bodies) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
			n = 0
			for _, b := range rec.got() {
				n += len(b.records)
			}
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return rec.got()
	}

	t.Run("window", func(t *testing.T) {
		got := poll(t, "window", standin.Mapping{BatchSize: 10, WindowSeconds: 5}, `{"idempotencyKey":"one"}`)
		if len(got) != 1 || len(got[0].records) != 1 {
			t.Fatalf("batches %+v, want one of one record", got)
		}
		ms, _ := strconv.ParseInt(got[0].records[0].Attributes["ApproximateFirstReceiveTimestamp"], 10, 64)
		waited := got[0].at.Sub(time.UnixMilli(ms))
		fmt.Printf("FIGURE poller: one record, 5 s batching window: invoked %v after its receive\n", waited.Round(10*time.Millisecond))
		if waited < 5*time.Second-50*time.Millisecond { // the server's timestamp is in whole milliseconds
			t.Errorf("invoked %v after the receive, want the 5 s window waited out", waited)
		}
	})
	t.Run("full batch", func(t *testing.T) {
		var bodies []string
		for i := range 10 {
			bodies = append(bodies, fmt.Sprintf(`{"idempotencyKey":"k-%d"}`, i))
		}
		got := poll(t, "full", standin.Mapping{BatchSize: 10, WindowSeconds: 20}, bodies...)
		if len(got) != 1 || len(got[0].records) != 10 {
			t.Fatalf("%d batches, want one of all ten", len(got))
		}
		ms, _ := strconv.ParseInt(got[0].records[0].Attributes["ApproximateFirstReceiveTimestamp"], 10, 64)
		fmt.Printf("FIGURE poller: ten records, batch size 10, 20 s window: one invocation %v after the first receive\n", got[0].at.Sub(time.UnixMilli(ms)).Round(10*time.Millisecond))
	})
	t.Run("6 MB payload", func(t *testing.T) {
		var bodies []string
		for i := range 10 {
			bodies = append(bodies, fmt.Sprintf("%02d", i)+strings.Repeat("x", 1048000-2)) // SQS's largest body, near enough
		}
		got := poll(t, "large", standin.Mapping{BatchSize: 10, WindowSeconds: 2}, bodies...)
		seen := map[string]bool{}
		var sizes []string
		for _, b := range got {
			if b.bytes > poller.MaxPayload {
				t.Errorf("an invocation of %d records and %d bytes: over Lambda's %d", len(b.records), b.bytes, poller.MaxPayload)
			}
			for _, r := range b.records {
				if seen[r.Body[:2]] {
					t.Errorf("record %s delivered twice", r.Body[:2])
				}
				seen[r.Body[:2]] = true
			}
			sizes = append(sizes, fmt.Sprintf("%d records in %d bytes", len(b.records), b.bytes))
		}
		fmt.Printf("FIGURE poller: ten 1 MiB bodies, batch size 10: %s\n", strings.Join(sizes, ", "))
		if len(seen) != 10 || len(got) < 2 {
			t.Errorf("%d bodies in %d invocations, want all ten in at least two", len(seen), len(got))
		}
	})
	t.Run("FIFO takes no window", func(t *testing.T) {
		url, arn, err := srv.CreateQueue(ctx, "fifo.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("f"), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		p := &poller.Poller{SQS: sq, QueueURL: url, QueueARN: arn, Fifo: true, Mapping: standin.Mapping{BatchSize: 10, WindowSeconds: 30}, Envs: []poller.Invoker{rec}}
		pctx, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		start := time.Now()
		go p.Run(pctx)
		for len(rec.got()) == 0 && pctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if len(rec.got()) != 1 {
			t.Fatalf("no invocation in 10 s with a 30 s window on a FIFO queue: the window was applied")
		}
		fmt.Printf("FIGURE poller: a FIFO record with a 30 s window in the template: invoked %v after the poller started\n", time.Since(start).Round(10*time.Millisecond))
	})
}
