package idempotency

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// contenders is how many of the 32 workers try each key. Every worker trying every key is
// 33,000 UpdateItems, about 50 s of DynamoDB Local's CPU on the 2-core build machine, so CI
// runs 8 per key (9,000 calls); `go test -run TestRunConcurrent ./functions/idempotency/
// -args -contenders=32` runs the full race.
var contenders = flag.Int("contenders", 8, "workers (of 32) that try each key in TestRunConcurrentWorkersRunEachKeyOnce; 32 = all")

// 32 workers, each with its own Guard (as 32 Lambda execution environments would have), race
// through the same 1,000 keys in the same order against DynamoDB Local. Exactly one handler
// execution per key may happen; every other attempt must be a duplicate or ErrInProgress.
func TestRunConcurrentWorkersRunEachKeyOnce(t *testing.T) {
	const workers, keys = 32, 1000
	per := *contenders
	if per < 1 || per > workers || workers%per != 0 {
		t.Fatalf("-contenders=%d: must divide %d", per, workers)
	}
	groups := workers / per // worker w tries the keys k with k%groups == w%groups
	e := newEnv(t, "")
	var perKey [keys]atomic.Int32
	var attempts, processed, duplicate, inProgress atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		g := e.guard(t, Config{Now: time.Now, ValidatePayload: true})
		wg.Go(func() {
			<-start
			for k := w % groups; k < keys; k += groups {
				key := fmt.Sprintf("key-%04d", k)
				attempts.Add(1)
				res, err := g.Run(context.Background(), Request{Key: key, Payload: []byte(key)}, func(context.Context) ([]byte, error) {
					perKey[k].Add(1)
					return nil, nil
				})
				switch {
				case err == nil && res.Outcome == OutcomeProcessed:
					processed.Add(1)
				case err == nil && res.Outcome == OutcomeDuplicate:
					duplicate.Add(1)
				case errors.Is(err, ErrInProgress):
					inProgress.Add(1)
				default:
					t.Errorf("worker %d, %s: %+v, %v", w, key, res, err)
				}
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	var executions int64
	for k := range keys {
		n := perKey[k].Load()
		executions += int64(n)
		if n != 1 {
			t.Errorf("key-%04d: handler ran %d times, want exactly 1", k, n)
		}
	}
	calls := e.tr.snapshot()
	t.Logf("%d workers, %d keys, %d workers per key: %d attempts in %s (%.0f Run/s, %d UpdateItem): "+
		"%d handler executions; %d processed, %d duplicate, %d in progress elsewhere",
		workers, keys, per, attempts.Load(), elapsed.Round(time.Millisecond), float64(attempts.Load())/elapsed.Seconds(),
		calls["UpdateItem"], executions, processed.Load(), duplicate.Load(), inProgress.Load())
	if executions != keys || processed.Load() != keys {
		t.Errorf("%d executions, %d processed; want %d each", executions, processed.Load(), keys)
	}
	if got, want := duplicate.Load()+inProgress.Load(), attempts.Load()-keys; got != want {
		t.Errorf("%d duplicates + in progress, want every other attempt (%d)", got, want)
	}
	if want := attempts.Load() + keys; int64(calls["UpdateItem"]) != want || len(calls) != 1 {
		t.Errorf("calls = %v, want %d UpdateItem (one per attempt, one complete per key)", calls, want)
	}

	// Every key ended COMPLETED, with attempt 1 (nobody took a lock over).
	out, err := srv.Client().Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != keys || out.LastEvaluatedKey != nil {
		t.Fatalf("table holds %d records (more: %v), want %d", len(out.Items), out.LastEvaluatedKey != nil, keys)
	}
	for _, item := range out.Items {
		if r, err := decodeRecord(item); err != nil || r.status != StatusCompleted || r.attempt != 1 {
			t.Errorf("record %v: %+v, %v", item["id"], r, err)
		}
	}
}
