package consume

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/batch"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// ErrNoGroup is the bad-input error of a record without MessageGroupId when the tenant is the
// group (IDEMPOTENCY_TENANT_SOURCE=group): a FIFO queue's message group, or on a standard
// queue the fair-queue tenant, which its producers must set.
var ErrNoGroup = errors.New("bad input: MessageGroupId is missing, and IDEMPOTENCY_TENANT_SOURCE=group needs it (a FIFO queue's group, or a fair queue's tenant that every producer must set)")

// ErrInvalidInput is what an Effect wraps to say its message can never succeed, such as a
// body it cannot parse: return fmt.Errorf("order %s: %w", id, consume.ErrInvalidInput). The
// key is released as after any error, and the record ends like other bad input: moved to the
// dead-letter queue at once with DeadLetterReason "invalid_input" (counted as InvalidInput
// and DeadLettered), instead of being retried until the queue's redrive policy moves it, and
// holding up its FIFO group meanwhile. After fixing the data, redrive it like any other.
var ErrInvalidInput = errors.New("invalid input")

// Message is what the business effect gets: the record plus what the consumer extracted.
type Message struct {
	ID           string            // the SQS MessageId
	Key          string            // idempotency key, verbatim from the message
	Tenant       string            // "" unless a composite key is configured
	GroupID      string            // MessageGroupId ("" on standard queues without fair queueing)
	ReceiveCount int               // ApproximateReceiveCount: 1 on the first delivery
	Body         string            // the message body, as sent
	Record       events.SQSMessage // everything else (attributes, ARN, ...)
}

// Effect is the business side effect of one message. It runs at most once to completion per
// key (see package idempotency for the exact guarantee): an error releases the key so the
// redelivery runs it again, unless it wraps ErrInvalidInput (the message is dead-lettered). The returned bytes are stored only with StoreResult, and only
// when the record can hold them (see idempotency.Result.ResultDropped).
type Effect func(ctx context.Context, msg Message) ([]byte, error)

// LogEffect returns the default Effect: one structured "effect applied" line per run. It makes
// the pipeline observable end to end before any business logic exists, and it is what tests
// count to prove exactly-once effects.
func LogEffect(log *slog.Logger) Effect {
	return func(ctx context.Context, msg Message) ([]byte, error) {
		telemetry.LogAttrs(ctx, log, slog.LevelInfo, "effect applied",
			slog.String(telemetry.AttrIdempotencyKey, msg.Key),
			slog.String(telemetry.AttrMessageID, msg.ID),
			slog.String("tenant", msg.Tenant))
		return nil, nil
	}
}

// The outcomes logged per record (the "outcome" field), by their old names.
const (
	// Deprecated: use telemetry.OutcomeProcessed (the same value).
	OutcomeProcessed = telemetry.OutcomeProcessed
	// Deprecated: use telemetry.OutcomeDuplicate (the same value).
	OutcomeDuplicate = telemetry.OutcomeDuplicate
	// Deprecated: use telemetry.OutcomeInFlightElsewhere (the same value).
	OutcomeInFlightElsewhere = telemetry.OutcomeInFlightElsewhere
	// Deprecated: use telemetry.OutcomeInvalidInput (the same value).
	OutcomeInvalidInput = telemetry.OutcomeInvalidInput
	// Deprecated: use telemetry.OutcomePayloadMismatch (the same value).
	OutcomePayloadMismatch = telemetry.OutcomePayloadMismatch
	// Deprecated: use telemetry.OutcomeEffectFailed (the same value).
	OutcomeEffectFailed = telemetry.OutcomeEffectFailed
	// Deprecated: use telemetry.OutcomeLockLost (the same value).
	OutcomeLockLost = telemetry.OutcomeLockLost
	// Deprecated: use telemetry.OutcomeStoreError (the same value).
	OutcomeStoreError = telemetry.OutcomeStoreError
	// Deprecated: use telemetry.OutcomePanicked (the same value).
	OutcomePanicked = telemetry.OutcomePanicked
	// Deprecated: use telemetry.OutcomeSkippedGroupFailed (the same value).
	OutcomeSkippedGroupFailed = telemetry.OutcomeSkippedGroupFailed
	// Deprecated: use telemetry.OutcomeSkippedDeadline (the same value).
	OutcomeSkippedDeadline = telemetry.OutcomeSkippedDeadline
	// Deprecated: use telemetry.OutcomeAbandoned (the same value).
	OutcomeAbandoned = telemetry.OutcomeAbandoned
	// Deprecated: use telemetry.OutcomeProbe (the same value).
	OutcomeProbe = telemetry.OutcomeProbe
	// Deprecated: use telemetry.OutcomeProbeDuplicate (the same value).
	OutcomeProbeDuplicate = telemetry.OutcomeProbeDuplicate
)

// AttrProbe marks a probe message: `pipelinectl verify` sends two with the same value, and
// the consumer takes them through everything but the effect: it acquires and completes the
// idempotency record of the key ProbeKeyPrefix+value (tenant ProbeKeyPrefix+"tenant" on a
// composite table) with a no-op, so the second is a duplicate. A probe proves that the queue,
// its key, the event source mapping, the function and its access to the table work, and
// runs no business effect. The value is 1 to 64 letters, digits, '-', '_', '.' and ':'; another value is
// bad input.
const (
	// Deprecated: use contract.AttrProbe.
	AttrProbe = contract.AttrProbe
	// Deprecated: use contract.ProbeKeyPrefix.
	ProbeKeyPrefix = contract.ProbeKeyPrefix
)

// Handler processes SQS events: it is built once per cold start and is safe for the
// concurrent records of one event.
type Handler struct {
	guard   *idempotency.Guard
	proc    *batch.Processor
	keySrc  msgkey.Source
	tenant  TenantSource
	maxBody int
	effect  Effect
	log     *slog.Logger
	metrics *telemetry.Metrics
	out     io.Writer // EMF destination (stdout in Lambda)
	dead    DeadLetter
}

// WithDeadLetter makes h move records that can never succeed (bad input, a key reused for
// other content) to dl at once instead of reporting them until the redrive policy does; see
// DeadLetter for why. It returns h.
func (h *Handler) WithDeadLetter(dl DeadLetter) *Handler {
	h.dead = dl
	return h
}

// NewHandler builds the Guard and the batch Processor from cfg. effect nil means LogEffect.
// api may be nil when idempotency is disabled.
func NewHandler(cfg Config, api idempotency.DynamoDBAPI, effect Effect, log *slog.Logger, metricsOut io.Writer) (*Handler, error) {
	guard, err := idempotency.New(api, cfg.Idempotency)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	opts := cfg.Batch
	opts.Logger = log
	proc, err := batch.New(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if effect == nil {
		effect = LogEffect(log)
	}
	// A Config built by hand rather than by LoadConfig has no Service.
	m := telemetry.NewMetrics(cfg.MetricsNamespace, cmp.Or(cfg.Service, serviceName))
	m.Register(telemetry.ConsumerMetrics()...)
	if cfg.Idempotency.StoreResult {
		// Only a Guard that stores results can drop one; otherwise the counter is always 0.
		m.Register(telemetry.StoreResultMetrics()...)
	}
	return &Handler{guard: guard, proc: proc, keySrc: cfg.KeySource, tenant: cfg.Tenant, maxBody: cfg.MaxBodyBytes,
		effect: effect, log: log, metrics: m, out: metricsOut}, nil
}

// Handle processes one SQS event with partial batch responses. It never returns an error: a
// failed record is a batch item failure (SQS redelivers it, and after maxReceiveCount moves it
// to the DLQ); only a broken configuration fails a whole invocation, and that handler is the
// one Init returns instead of this.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	report := h.proc.Process(ctx, ev, h.Record)
	// Records the handler did not finish get their line here, so every record has one.
	for i, res := range report.Results {
		var outcome string
		switch {
		case res.Duplicate:
			continue // the same MessageId earlier in this event carries the line
		case res.Status == batch.StatusSkippedGroupFailed:
			outcome = telemetry.OutcomeSkippedGroupFailed
		case res.Status == batch.StatusSkippedDeadline:
			outcome = telemetry.OutcomeSkippedDeadline
		case res.Status == batch.StatusPanicked:
			outcome = telemetry.OutcomePanicked
		case errors.Is(res.Err, batch.ErrStillRunning):
			outcome = telemetry.OutcomeAbandoned
		default:
			continue
		}
		rec := ev.Records[i]
		telemetry.LogAttrs(ctx, h.log, slog.LevelWarn, "record outcome", recordAttrs(rec, "", outcome, res.Err)...)
	}
	resp := report.Response()
	h.metrics.Add(telemetry.MetricFailed, len(resp.BatchItemFailures))
	if err := h.metrics.Flush(h.out); err != nil {
		h.log.Error("metrics not published", "error", err.Error())
	}
	return resp, nil
}

// Record processes one SQS record; it is the batch.Handler. The returned error fails this
// record only. Bad input returns the *msgkey.InputError; the Guard's typed errors
// (*idempotency.PayloadMismatchError, ...) come back unchanged for errors.As.
func (h *Handler) Record(ctx context.Context, rec events.SQSMessage) error {
	if a, ok := rec.MessageAttributes[contract.AttrProbe]; ok {
		return h.probe(ctx, rec, a)
	}
	key, err := h.keySrc.Extract(rec, h.maxBody)
	if err != nil {
		return h.reject(ctx, rec, "", telemetry.OutcomeInvalidInput, telemetry.MetricInvalidInput, err)
	}
	tenant, err := h.tenantOf(rec)
	if err != nil {
		return h.reject(ctx, rec, key, telemetry.OutcomeInvalidInput, telemetry.MetricInvalidInput, err)
	}
	msg := Message{ID: rec.MessageId, Key: key, Tenant: tenant, GroupID: rec.Attributes["MessageGroupId"],
		ReceiveCount: receiveCount(rec), Body: rec.Body, Record: rec}
	res, err := h.guard.Run(ctx, idempotency.Request{Key: key, Tenant: tenant, Payload: []byte(rec.Body)},
		func(ctx context.Context) ([]byte, error) { return h.effect(ctx, msg) })

	if err == nil && res.TookOver {
		// Counted by the taker, so a crashed owner (who reports nothing) is counted too.
		h.metrics.Add(telemetry.MetricLockTakenOver, 1)
	}
	var outcome, metric string
	switch {
	case err == nil && res.Outcome == idempotency.OutcomeDuplicate:
		outcome, metric = telemetry.OutcomeDuplicate, telemetry.MetricDuplicate
	case err == nil:
		outcome, metric = telemetry.OutcomeProcessed, telemetry.MetricProcessed
	case errors.Is(err, idempotency.ErrInProgress):
		outcome, metric = telemetry.OutcomeInFlightElsewhere, telemetry.MetricInFlightElsewhere
	case errors.Is(err, idempotency.ErrInvalidRequest), errors.Is(err, ErrInvalidInput):
		outcome, metric = telemetry.OutcomeInvalidInput, telemetry.MetricInvalidInput
	case errors.Is(err, idempotency.ErrPayloadMismatch):
		// A producer reused a key for other content: bad input like any other, so the one
		// count an operator alarms on for bad input includes it; the outcome tells them apart.
		outcome, metric = telemetry.OutcomePayloadMismatch, telemetry.MetricInvalidInput
	case errors.Is(err, idempotency.ErrLockLost):
		outcome = telemetry.OutcomeLockLost
	case errors.As(err, new(*idempotency.HandlerError)):
		outcome = telemetry.OutcomeEffectFailed
	default:
		outcome = telemetry.OutcomeStoreError
	}
	extra := []slog.Attr{slog.Int("attempt", res.Attempt)}
	if tenant != "" {
		extra = append(extra, slog.String("tenant", tenant))
	}
	if res.TookOver {
		extra = append(extra, slog.Bool("tookOver", true))
	}
	if err == nil && res.ResultDropped {
		extra = append(extra, slog.Bool("resultDropped", true))
		if res.Outcome == idempotency.OutcomeProcessed {
			h.resultDropped(ctx, rec, key, len(res.Data))
		}
	}
	if outcome == telemetry.OutcomeInvalidInput || outcome == telemetry.OutcomePayloadMismatch {
		return h.reject(ctx, rec, key, outcome, metric, err, extra...)
	}
	return h.done(ctx, rec, key, outcome, metric, err, extra...)
}

// probe takes a probe message (AttrProbe) through the record's whole life with a no-op
// instead of the effect.
func (h *Handler) probe(ctx context.Context, rec events.SQSMessage, a events.SQSMessageAttribute) error {
	id := ""
	if a.StringValue != nil {
		id = *a.StringValue
	}
	if !msgkey.ValidProbeID(id) {
		err := &msgkey.InputError{Source: msgkey.Source{Kind: msgkey.SourceAttribute, Name: contract.AttrProbe}, Code: "probe_invalid", Reason: fmt.Sprintf("attribute %s %q: %s", contract.AttrProbe, id, msgkey.ProbeIDRule)}
		return h.reject(ctx, rec, "", telemetry.OutcomeInvalidInput, telemetry.MetricInvalidInput, err)
	}
	key, tenant := contract.ProbeKeyPrefix+id, ""
	if h.tenant.Group || h.tenant.Source.Kind != 0 {
		tenant = contract.ProbeTenant
	}
	res, err := h.guard.Run(ctx, idempotency.Request{Key: key, Tenant: tenant, Payload: []byte(rec.Body)},
		func(context.Context) ([]byte, error) { return nil, nil })
	switch {
	case err == nil && res.Outcome == idempotency.OutcomeDuplicate:
		return h.done(ctx, rec, key, telemetry.OutcomeProbeDuplicate, telemetry.MetricProbeCompleted, nil, slog.Bool("probe", true))
	case err == nil:
		return h.done(ctx, rec, key, telemetry.OutcomeProbe, telemetry.MetricProbeCompleted, nil, slog.Bool("probe", true))
	case errors.Is(err, idempotency.ErrInProgress):
		return h.done(ctx, rec, key, telemetry.OutcomeInFlightElsewhere, telemetry.MetricInFlightElsewhere, err, slog.Bool("probe", true))
	}
	return h.done(ctx, rec, key, telemetry.OutcomeStoreError, "", err, slog.Bool("probe", true))
}

// resultDropped reports an effect result the Guard could not store, once, where it happened:
// the record is COMPLETED (the effect will not run again), but the key's duplicates replay
// no result, and that is worth a look when the result matters to them.
func (h *Handler) resultDropped(ctx context.Context, rec events.SQSMessage, key string, size int) {
	h.metrics.Add(telemetry.MetricResultDropped, 1)
	telemetry.LogAttrs(ctx, h.log, slog.LevelWarn, "result not stored",
		slog.String(telemetry.AttrMessageID, rec.MessageId),
		slog.String(telemetry.AttrIdempotencyKey, key),
		slog.Int("resultBytes", size),
		slog.String(telemetry.AttrReason, "the effect's result does not fit in the idempotency record (DynamoDB's 400 KB item limit): "+
			"the record is COMPLETED without it, and duplicates of this key get no stored result"))
}

// reject ends a record that can never succeed. With a DeadLetter it is moved to the
// dead-letter queue and acknowledged (logged with deadLettered=true); without one, or when
// the move fails, it is reported as failed and the queue's redrive policy moves it after
// maxReceiveCount receives.
func (h *Handler) reject(ctx context.Context, rec events.SQSMessage, key, outcome, metric string, err error, extra ...slog.Attr) error {
	if h.dead != nil {
		code := outcome
		if ie := (*msgkey.InputError)(nil); errors.As(err, &ie) {
			code = string(ie.Code)
		} else if be := (*BodyError)(nil); errors.As(err, &be) {
			code = string(be.Code)
		}
		dlErr := h.dead.Send(ctx, rec, code, err.Error())
		if dlErr == nil {
			h.metrics.Add(telemetry.MetricDeadLettered, 1)
			h.done(ctx, rec, key, outcome, metric, err, append(extra, slog.Bool("deadLettered", true))...)
			return nil
		}
		extra = append(extra, slog.String("deadLetterError", dlErr.Error()))
	}
	return h.done(ctx, rec, key, outcome, metric, err, extra...)
}

// done counts and logs a record's outcome and returns err for the batch processor.
func (h *Handler) done(ctx context.Context, rec events.SQSMessage, key, outcome, metric string, err error, extra ...slog.Attr) error {
	if metric != "" {
		h.metrics.Add(metric, 1)
	}
	level := slog.LevelInfo
	switch outcome {
	case telemetry.OutcomeProcessed, telemetry.OutcomeDuplicate, telemetry.OutcomeProbe, telemetry.OutcomeProbeDuplicate:
	case telemetry.OutcomeInFlightElsewhere, telemetry.OutcomeInvalidInput:
		level = slog.LevelWarn // expected now and then; the DLQ and its alarm catch what persists
	default:
		level = slog.LevelError
	}
	attrs := append(recordAttrs(rec, key, outcome, err), extra...)
	telemetry.LogAttrs(ctx, h.log, level, "record outcome", attrs...)
	return err
}

func recordAttrs(rec events.SQSMessage, key, outcome string, err error) []slog.Attr {
	attrs := []slog.Attr{
		slog.String(telemetry.AttrMessageID, rec.MessageId),
		slog.String(telemetry.AttrIdempotencyKey, key),
		slog.String(telemetry.AttrGroupID, rec.Attributes["MessageGroupId"]),
		slog.Int(telemetry.AttrReceiveCount, receiveCount(rec)),
		slog.String(telemetry.AttrOutcome, outcome),
	}
	if err != nil {
		reason := err.Error()
		var ie *msgkey.InputError
		if errors.As(err, &ie) {
			reason = ie.Reason
			attrs = append(attrs, slog.String("reasonCode", string(ie.Code)))
		}
		attrs = append(attrs, slog.String(telemetry.AttrReason, reason))
	}
	return attrs
}

// tenantOf extracts the tenant when a composite key is configured.
func (h *Handler) tenantOf(rec events.SQSMessage) (string, error) {
	switch {
	case h.tenant.Group:
		g := rec.Attributes["MessageGroupId"]
		if g == "" {
			return "", ErrNoGroup
		}
		return g, nil
	case h.tenant.Source.Kind != 0:
		return h.tenant.Source.Extract(rec, h.maxBody)
	}
	return "", nil
}

func receiveCount(rec events.SQSMessage) int {
	n, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	return n
}
