package dispatch

import (
	"context"
	"encoding/json"
	"time"
)

// Event is the input EventBridge Scheduler sends (built by constructs/dispatcher):
//
//	{"scheduledTime":"<aws.scheduler.scheduled-time>","executionId":"<aws.scheduler.execution-id>",
//	 "job":"<job>","items":[{"id":"a","group":"tenant-1","payload":{...}}]}
type Event struct {
	ScheduledTime string `json:"scheduledTime"`
	ExecutionID   string `json:"executionId"`
	Job           string `json:"job"`
	Items         []Item `json:"items"`
	// Probe, when set, asks for one probe message (msgkey.AttrProbe) instead of the items:
	// `pipelinectl verify` proves with it that the dispatcher can send to its queue.
	Probe string `json:"probe,omitempty"`
}

// Item is one unit of work: one message per item and scheduled occurrence.
type Item struct {
	ID      string          `json:"id"`              // unique within a run; part of the key
	Group   string          `json:"group,omitempty"` // FIFO MessageGroupId (fair-queue tenant on standard queues)
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Run describes one dispatch: what an ItemSource may use to decide the work items.
type Run struct {
	Job           string
	ScheduledTime time.Time
	// Occurrence is ScheduledTime in UTC truncated to the minute: it identifies the schedule
	// occurrence, and the idempotency keys derive from it.
	Occurrence time.Time
	Event      Event
}

// occurrenceText is the occurrence as keys, message bodies and logs carry it: RFC 3339 UTC,
// e.g. "2025-03-30T00:30:00Z".
func (r Run) occurrenceText() string { return r.Occurrence.Format(time.RFC3339) }

// ItemSource yields the work items of one run. It must be deterministic for a given Run:
// a repeated invocation for the same occurrence must yield the same item ids, or the consumer
// cannot recognize the repeats. Implementations reading a database or an API should read a
// snapshot keyed by run.Occurrence.
type ItemSource interface {
	Items(ctx context.Context, run Run) ([]Item, error)
}

// EventItems is the default ItemSource: the items listed in the schedule's input. A fixed
// list of tenants or shards to fan out to every run is what most schedules need, and it
// costs no extra permission or call.
type EventItems struct{}

// Items returns run.Event.Items.
func (EventItems) Items(_ context.Context, run Run) ([]Item, error) { return run.Event.Items, nil }

var _ ItemSource = EventItems{}
