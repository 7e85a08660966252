package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// eventSet is the work every contender gets for one batch size: warm-up events (new keys,
// untimed) and then the timed events, in which a fraction of the records repeat the key and
// body of a record of an EARLIER event (warm-up or timed), so each duplicate meets a COMPLETED
// record and none races its original inside one batch.
type eventSet struct {
	Batch      int
	Warmup     []events.SQSEvent
	Timed      []events.SQSEvent
	TimedCount int // records in Timed
	Duplicates int // timed records whose key was already processed
	UniqueKeys int // distinct keys over Warmup and Timed: the effect runs exactly this often
}

// fileBody is what the contenders read: the same JSON for all of them.
type fileBody struct {
	Warmup []events.SQSEvent `json:"warmup"`
	Timed  []events.SQSEvent `json:"timed"`
}

// newEventSet builds warmup+records records in events of batch records. Every dupEvery-th
// timed record (i%dupEvery == dupEvery-1) is a duplicate, so dup = 1/dupEvery exactly when
// records is a multiple of dupEvery. The seed fixes which earlier key each duplicate repeats.
func newEventSet(batch, warmup, records, dupEvery int, seed uint64) (*eventSet, error) {
	if batch < 1 || records < 1 || warmup < 0 || dupEvery < 2 {
		return nil, fmt.Errorf("event set: batch %d, records %d, warmup %d, dupEvery %d", batch, records, warmup, dupEvery)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(batch)))
	set := &eventSet{Batch: batch, TimedCount: records}
	type original struct{ key, body string }
	var (
		seq      int
		eligible []original // processed in an earlier event, not yet repeated
		pending  []original // new in the event being built
	)
	newRecord := func(key, body string) events.SQSMessage {
		seq++
		return events.SQSMessage{
			MessageId:     fmt.Sprintf("00000000-0000-4000-8000-%012d", seq),
			ReceiptHandle: "rh-" + strconv.Itoa(seq),
			Body:          body,
			Attributes: map[string]string{
				"ApproximateReceiveCount":          "1",
				"SentTimestamp":                    "1767225600000",
				"SenderId":                         "AIDAEXAMPLE",
				"ApproximateFirstReceiveTimestamp": "1767225600001",
			},
			MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource:       "aws:sqs",
			EventSourceARN:    "arn:aws:sqs:us-east-1:000000000000:peer-bench",
			AWSRegion:         "us-east-1",
		}
	}
	fresh := func(prefix string, n int) events.SQSMessage {
		key := fmt.Sprintf("%s-%07d", prefix, n)
		body := fmt.Sprintf(`{"idempotencyKey":%q,"orderId":%d,"amount":%d.%02d,"currency":"EUR","note":"peer benchmark record"}`,
			key, n, 10+n%990, n%100)
		pending = append(pending, original{key, body})
		set.UniqueKeys++
		return newRecord(key, body)
	}
	build := func(prefix string, total int, dups bool) ([]events.SQSEvent, error) {
		var out []events.SQSEvent
		for start := 0; start < total; start += batch {
			ev := events.SQSEvent{}
			for i := start; i < min(start+batch, total); i++ {
				if dups && i%dupEvery == dupEvery-1 {
					if len(eligible) == 0 {
						return nil, fmt.Errorf("event set: no earlier key for duplicate %d: use a warm-up of at least one batch", i)
					}
					j := rng.IntN(len(eligible))
					o := eligible[j]
					eligible[j] = eligible[len(eligible)-1]
					eligible = eligible[:len(eligible)-1]
					ev.Records = append(ev.Records, newRecord(o.key, o.body))
					set.Duplicates++
					continue
				}
				ev.Records = append(ev.Records, fresh(prefix, i))
			}
			eligible = append(eligible, pending...)
			pending = pending[:0]
			out = append(out, ev)
		}
		return out, nil
	}
	var err error
	if set.Warmup, err = build("warm", warmup, false); err != nil {
		return nil, err
	}
	if set.Timed, err = build("key", records, true); err != nil {
		return nil, err
	}
	return set, nil
}

// write saves the set as the contenders' input file.
func (s *eventSet) write(path string) error {
	b, err := json.Marshal(fileBody{Warmup: s.Warmup, Timed: s.Timed})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// eventsBatch is the bodies of one event's records, for the raw-write loop.
type eventsBatch []string

func bodies(evs []events.SQSEvent) []eventsBatch {
	out := make([]eventsBatch, len(evs))
	for i, ev := range evs {
		for _, r := range ev.Records {
			out[i] = append(out[i], r.Body)
		}
	}
	return out
}

func countRecords(evs []events.SQSEvent) int {
	n := 0
	for _, ev := range evs {
		n += len(ev.Records)
	}
	return n
}
