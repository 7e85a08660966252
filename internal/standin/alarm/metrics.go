package alarm

import (
	"encoding/json"
	"sync"
	"time"
)

// The metrics a run produces, recorded into a Series under the names CloudWatch would
// publish them by: the functions' Embedded Metric Format lines (RecordEMF), and the age of
// the oldest message of each queue (AgeTracker), which SQS servers do not report. The world
// (alarms_e2e_test.go) adds Lambda's invocation metrics, DynamoDB's error and throttle counts
// and the queues' sampled depths.

// RecordEMF records the metrics of one Embedded Metric Format line (as CloudWatch Logs
// extracts them: every metric of every directive, with each dimension set, at the line's
// timestamp) and reports whether the line was EMF. resource maps a dimension value to the
// name alarms use for it (a function name to its logical id); nil keeps values as they are.
func RecordEMF(s *Series, line []byte, resource func(dim, value string) string) bool {
	var root map[string]json.RawMessage
	if json.Unmarshal(line, &root) != nil || root["_aws"] == nil {
		return false
	}
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name string }
		}
	}
	if json.Unmarshal(root["_aws"], &meta) != nil {
		return false
	}
	at := time.UnixMilli(meta.Timestamp)
	for _, d := range meta.CloudWatchMetrics {
		for _, set := range d.Dimensions {
			var kv []string
			for _, dim := range set {
				var v string
				_ = json.Unmarshal(root[dim], &v)
				if resource != nil {
					v = resource(dim, v)
				}
				kv = append(kv, dim, v)
			}
			for _, m := range d.Metrics {
				var one float64
				var many []float64
				id := NewMetricID(d.Namespace, m.Name, kv...)
				if json.Unmarshal(root[m.Name], &one) == nil {
					s.Add(id, at, one)
				} else if json.Unmarshal(root[m.Name], &many) == nil {
					for _, v := range many {
						s.Add(id, at, v)
					}
				}
			}
		}
	}
	return true
}

// AgeTracker follows the messages of each queue that the harness sent or a poller received,
// to give ApproximateAgeOfOldestMessage, which no local SQS server reports. As SQS does, it
// leaves out a message received three times or more (SQS moves it to the back of the queue
// and reports the next oldest). Safe for concurrent use.
type AgeTracker struct {
	mu   sync.Mutex
	live map[string]map[string]tracked // queue -> message id -> message
}

type tracked struct {
	sent     time.Time
	receives int
}

// NewAgeTracker returns an empty AgeTracker.
func NewAgeTracker() *AgeTracker { return &AgeTracker{live: map[string]map[string]tracked{}} }

func (a *AgeTracker) queue(q string) map[string]tracked {
	m := a.live[q]
	if m == nil {
		m = map[string]tracked{}
		a.live[q] = m
	}
	return m
}

// Sent records a message sent to queue at sent.
func (a *AgeTracker) Sent(queue, id string, sent time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.queue(queue)[id]; !ok {
		a.queue(queue)[id] = tracked{sent: sent}
	}
}

// Received records a receive of a message: its SentTimestamp and ApproximateReceiveCount.
func (a *AgeTracker) Received(queue, id string, sent time.Time, receiveCount int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue(queue)[id] = tracked{sent: sent, receives: receiveCount}
}

// Deleted forgets a message.
func (a *AgeTracker) Deleted(queue, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.queue(queue), id)
}

// Empty forgets every message of a queue the server reports empty (messages a redrive
// policy moved away leave no other trace).
func (a *AgeTracker) Empty(queue string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.live, queue)
}

// Oldest is the age at now of the oldest message of queue received fewer than three times,
// and whether there is one.
func (a *AgeTracker) Oldest(queue string, now time.Time) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var oldest time.Time
	for _, m := range a.live[queue] {
		if m.receives < 3 && (oldest.IsZero() || m.sent.Before(oldest)) {
			oldest = m.sent
		}
	}
	if oldest.IsZero() {
		return 0, false
	}
	return now.Sub(oldest), true
}
