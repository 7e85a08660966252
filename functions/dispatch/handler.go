package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/internal/backoff"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// SQSAPI is the part of the SQS client the dispatcher uses.
type SQSAPI interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ SQSAPI = (*sqs.Client)(nil)

// Errors of Handle (errors.Is).
var (
	ErrInvalidEvent = errors.New("invalid dispatcher event")
	ErrInvalidItems = errors.New("invalid work items")
	ErrUnsent       = errors.New("messages not sent")
)

// UnsentError reports the entries still unsent after every attempt. The invocation fails so
// Lambda's async retries (and then its on-failure destination) take over; the messages that did
// go out are sent again on that retry, which the consumer absorbs as duplicates.
type UnsentError struct {
	Unsent, Total int
	Last          error // the last failure seen, for the log
}

// Error says how many messages were not sent and the last failure.
func (e *UnsentError) Error() string {
	return fmt.Sprintf("%d of %d messages not sent after retries: last error: %v", e.Unsent, e.Total, e.Last)
}

// Unwrap makes errors.Is match ErrUnsent and the last failure's cause (e.g. context.Canceled).
func (e *UnsentError) Unwrap() []error { return []error{ErrUnsent, e.Last} }

// Summary is what Handle returns (Scheduler ignores it; it shows in test invokes).
type Summary struct {
	Job        string `json:"job"`
	Occurrence string `json:"occurrence"` // the run's scheduled occurrence, RFC 3339 UTC
	Items      int    `json:"items"`
	Sent       int    `json:"sent"`
}

// The send's retry backoff: full jitter, the wait before retry n uniform in
// [0, min(SendBackoffCap, SendBackoffBase x 2^(n-1))].
const (
	SendBackoffBase = 100 * time.Millisecond
	SendBackoffCap  = 2 * time.Second
)

// Limits applied to every message.
const (
	// maxMessageBytes is the consumer's default MAX_BODY_BYTES (and the classic SQS message
	// limit): a larger message would only be rejected as bad input at the other end.
	maxMessageBytes = 256 * 1024
	// maxBatchBytes bounds one SendMessageBatch call. SQS now takes 1 MiB, but 256 KiB is what
	// older endpoints and the local emulators accept; splitting further costs only calls.
	maxBatchBytes   = 256 * 1024
	maxBatchEntries = 10 // SQS limit per SendMessageBatch
	attrKey         = "IdempotencyKey"
)

// Handler dispatches one scheduled run. Build it once per cold start; it keeps no state
// between invocations except its metrics, which are flushed at the end of each one.
type Handler struct {
	cfg     Config
	sqs     SQSAPI
	items   ItemSource
	log     *slog.Logger
	metrics *telemetry.Metrics
	out     io.Writer // EMF destination (stdout in Lambda)

	backoffBase, backoffCap time.Duration
	// Seams for tests: the wait between attempts and the jitter draw in [0, max].
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(max time.Duration) time.Duration
}

// NewHandler returns a Handler; items nil means EventItems.
func NewHandler(cfg Config, api SQSAPI, items ItemSource, log *slog.Logger, metricsOut io.Writer) *Handler {
	if items == nil {
		items = EventItems{}
	}
	// A Config built by hand rather than by LoadConfig has no Service.
	m := telemetry.NewMetrics(cfg.MetricsNamespace, cmp.Or(cfg.Service, serviceName))
	m.Register(telemetry.DispatcherMetrics()...)
	return &Handler{
		cfg: cfg, sqs: api, items: items, log: log, metrics: m, out: metricsOut,
		backoffBase: SendBackoffBase,
		backoffCap:  SendBackoffCap,
		sleep:       backoff.Sleep,
		jitter:      func(max time.Duration) time.Duration { return rand.N(max + 1) },
	}
}

// Handle turns ev into one message per work item and sends them. The occurrence comes from
// the event's scheduledTime, never the wall clock, so a repeated or retried invocation for the
// same scheduled occurrence produces byte-identical messages with the same keys, and two
// different occurrences never share one. Its error wraps ErrInvalidEvent for an event it
// cannot use, ErrInvalidItems for work items it refuses (sending none of them), and ErrUnsent
// (an *UnsentError naming them) for messages still unsent after retries.
func (h *Handler) Handle(ctx context.Context, ev Event) (Summary, error) {
	defer h.flushMetrics()
	if ev.Probe != "" {
		return h.probe(ctx, ev)
	}
	run, err := h.run(ev)
	if err != nil {
		h.log.Error("dispatch rejected", "error", err.Error(), "executionId", ev.ExecutionID)
		return Summary{Job: h.cfg.JobName}, err
	}
	occ := run.occurrenceText()
	sum := Summary{Job: h.cfg.JobName, Occurrence: occ}
	log := h.log.With("job", h.cfg.JobName, "occurrence", occ, "scheduledTime", ev.ScheduledTime, "executionId", ev.ExecutionID)

	items, err := h.items.Items(ctx, run)
	if err != nil {
		err = fmt.Errorf("list work items for %s: %w", occ, err)
		log.Error("dispatch failed", "error", err.Error())
		return sum, err
	}
	sum.Items = len(items)
	msgs, err := h.messages(items, occ)
	if err != nil {
		log.Error("dispatch rejected", "error", err.Error())
		return sum, err
	}
	if len(msgs) == 0 {
		log.Warn("no work items: nothing dispatched")
		return sum, nil
	}

	sent, err := h.send(ctx, log, msgs)
	sum.Sent = sent
	h.metrics.Add(telemetry.MetricDispatched, sent)
	h.metrics.Add(telemetry.MetricSendFailed, len(msgs)-sent)
	if err != nil {
		log.Error("dispatch incomplete", "items", len(msgs), "sent", sent, "unsent", len(msgs)-sent, "error", err.Error())
		return sum, err
	}
	log.Info("dispatched", "items", len(msgs), "sent", sent, "fifo", h.cfg.Fifo)
	return sum, nil
}

// probe sends one probe message (ev.Probe) to the queue; the consumer completes its record
// without running an effect.
func (h *Handler) probe(ctx context.Context, ev Event) (Summary, error) {
	sum := Summary{Job: h.cfg.JobName}
	log := h.log.With("job", h.cfg.JobName, "probe", ev.Probe, "executionId", ev.ExecutionID)
	if !msgkey.ValidProbeID(ev.Probe) {
		err := fmt.Errorf(`%w: "probe" %q: %s`, ErrInvalidEvent, ev.Probe, msgkey.ProbeIDRule)
		log.Error("dispatch rejected", "error", err.Error())
		return sum, err
	}
	m := message{itemID: "probe", key: ev.Probe, probe: true}
	m.body = contract.ProbeBody(ev.Probe, "dispatcher")
	if h.cfg.Fifo {
		m.group, m.dedupID = contract.ProbeGroup, "probe-"+ev.Probe
	}
	m.size = len(m.body) + len(contract.AttrProbe) + len("String") + len(m.key)
	sent, err := h.send(ctx, log, []message{m})
	sum.Sent = sent
	if err != nil {
		log.Error("probe not sent", "error", err.Error())
		return sum, err
	}
	log.Info("probe dispatched")
	return sum, nil
}

func (h *Handler) flushMetrics() {
	if err := h.metrics.Flush(h.out); err != nil {
		h.log.Error("metrics not published", "error", err.Error())
	}
}

// run validates the event and derives the occurrence.
func (h *Handler) run(ev Event) (Run, error) {
	if ev.ScheduledTime == "" {
		return Run{}, fmt.Errorf(`%w: "scheduledTime" is missing: the schedule input must carry <aws.scheduler.scheduled-time>`, ErrInvalidEvent)
	}
	at, err := time.Parse(time.RFC3339, ev.ScheduledTime)
	if err != nil {
		return Run{}, fmt.Errorf(`%w: "scheduledTime" %q is not an RFC 3339 time: %w`, ErrInvalidEvent, ev.ScheduledTime, err)
	}
	// A schedule wired to another job's dispatcher would otherwise send that job's items
	// under this job's keys.
	if ev.Job != "" && ev.Job != h.cfg.JobName {
		return Run{}, fmt.Errorf(`%w: "job" %q does not match JOB_NAME %q`, ErrInvalidEvent, ev.Job, h.cfg.JobName)
	}
	return Run{Job: h.cfg.JobName, ScheduledTime: at, Occurrence: occurrence(at), Event: ev}, nil
}

// occurrence identifies the schedule occurrence a scheduled time stands for: the instant in
// UTC at Scheduler's resolution, the whole minute. Keys were once derived from the scheduled
// time truncated to a configurable period; any period longer than the gap between two runs
// merges them, and daylight-saving changes make that gap shorter than the cron suggests: the
// daily 01:30 Europe/Berlin runs of 2025-03-30 and 2025-03-31 are 00:30Z and 23:30Z of one
// UTC day, so a 24h period gave both one key and the consumer dropped the second day's work
// as a duplicate.
//
// Injective on occurrences: cron fields are whole minutes, so occurrences are distinct
// whole-minute instants at least 1m apart, which Truncate(time.Minute) leaves unchanged.
//
// A repeat of one occurrence (a Scheduler retry or double fire) carries the same instant, so
// it gets the same key whatever offset or seconds its rendering has. With the former default
// PERIOD=1m this is byte-for-byte the key the dispatcher derived before (at.Truncate(1m) in
// UTC, RFC 3339), so messages in flight across the deploy keep their keys.
func occurrence(at time.Time) time.Time { return at.UTC().Truncate(time.Minute) }

// message is one prepared SQS entry.
type message struct {
	itemID, key, group, dedupID string
	probe                       bool // key is a probe id, sent as msgkey.AttrProbe
	body                        string
	size                        int // body + attributes, as SQS counts it
}

// messageBody is the JSON body of every message: msgkey.DispatchMessage, the type consumers
// decode it with, the payload kept as the item gave it.
type messageBody = msgkey.DispatchMessage[json.RawMessage]

// messages validates every item and builds its message; all problems are reported at once and
// nothing is sent when there is any, so a bad item list never produces a partial run.
func (h *Handler) messages(items []Item, occ string) ([]message, error) {
	var problems []string
	seen := make(map[string]int, len(items))
	msgs := make([]message, 0, len(items))
	for i, it := range items {
		where := fmt.Sprintf("items[%d] (id %.64q)", i, it.ID) // ids can be long; the index finds it
		if it.ID == "" {
			problems = append(problems, fmt.Sprintf("items[%d]: empty id", i))
			continue
		}
		if j, dup := seen[it.ID]; dup {
			problems = append(problems, fmt.Sprintf("%s: duplicate of items[%d]; ids must be unique", where, j))
			continue
		}
		seen[it.ID] = i
		m, err := h.message(it, occ)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		msgs = append(msgs, m)
	}
	if n := len(problems); n > 0 {
		const show = 10 // keep the error (and its log line) readable for a long bad list
		more := ""
		if n > show {
			more = fmt.Sprintf("; and %d more", n-show)
			problems = problems[:show]
		}
		return nil, fmt.Errorf("%w: %d of %d items invalid: %s%s", ErrInvalidItems, n, len(items), strings.Join(problems, "; "), more)
	}
	return msgs, nil
}

// message is item's message for the occurrence occ: its key, group, deduplication id and
// body, each checked as SQS and the consumer will check it.
func (h *Handler) message(it Item, occ string) (message, error) {
	if r, ok := badSQSChar(it.ID); !ok {
		return message{}, fmt.Errorf("character %U is not accepted by SQS", r)
	}
	m := message{itemID: it.ID, key: msgkey.DispatchKey(h.cfg.JobName, occ, it.ID)}
	if err := msgkey.ValidateKey(m.key); err != nil {
		return message{}, err
	}
	m.group = it.Group
	if m.group == "" && h.cfg.Fifo {
		m.group = h.cfg.DefaultGroupID
	}
	if m.group != "" {
		if err := msgkey.ValidateGroupID(m.group); err != nil {
			return message{}, fmt.Errorf("group: %w", err)
		}
	}
	if h.cfg.Fifo {
		m.dedupID = msgkey.DeduplicationID(m.key)
	}
	body, err := json.Marshal(messageBody{IdempotencyKey: m.key, Job: h.cfg.JobName, Occurrence: occ, ItemID: it.ID, Payload: it.Payload})
	if err != nil {
		return message{}, fmt.Errorf("payload is not valid JSON: %w", err)
	}
	m.body = string(body)
	m.size = len(m.body) + len(attrKey) + len("String") + len(m.key)
	if m.size > maxMessageBytes {
		return message{}, fmt.Errorf("message is %d bytes, larger than %d", m.size, maxMessageBytes)
	}
	return m, nil
}

// badSQSChar finds a character SQS rejects in message attributes and bodies (outside #x9 #xA
// #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF); invalid UTF-8 decodes as U+FFFD and is
// caught by the reverse check.
func badSQSChar(s string) (rune, bool) {
	for i, r := range s {
		ok := r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000
		if r == 0xFFFD && !strings.HasPrefix(s[i:], "\uFFFD") {
			ok = false // an invalid byte, not a real U+FFFD
		}
		if !ok {
			return r, false
		}
	}
	return 0, true
}

// entryID names message i within its batch; SQS wants 1-80 characters of [A-Za-z0-9_-].
func entryID(i int) string { return strconv.Itoa(i) }
