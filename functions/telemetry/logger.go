package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// Attribute keys shared by every function's log lines, so one CloudWatch Logs Insights query
// (e.g. `filter messageId = "..."`) finds a message across the dispatcher, batch processor and
// consumer.
const (
	AttrMessageID      = "messageId"
	AttrGroupID        = "groupId"
	AttrReceiveCount   = "receiveCount"
	AttrIdempotencyKey = "idempotencyKey"
	AttrStatus         = "status"
	AttrOutcome        = "outcome"
	AttrReason         = "reason"
)

// The consumer's outcomes: the value of AttrOutcome on the one line it logs per record, which
// runbooks, Logs Insights queries and the tests read.
const (
	OutcomeProcessed          = "processed"             // the effect ran and its record completed
	OutcomeDuplicate          = "duplicate"             // the record was already complete: no effect
	OutcomeInFlightElsewhere  = "in_flight_elsewhere"   // another worker holds the record's lock: retried
	OutcomeInvalidInput       = "invalid_input"         // bad input: dead-lettered with its reason
	OutcomePayloadMismatch    = "payload_mismatch"      // the key was used for other content: bad input
	OutcomeEffectFailed       = "effect_failed"         // the effect returned an error: retried
	OutcomeLockLost           = "lock_lost"             // the lock lapsed and was taken over mid-effect
	OutcomeStoreError         = "store_error"           // the idempotency table failed: retried
	OutcomePanicked           = "panicked"              // the effect panicked: retried
	OutcomeSkippedGroupFailed = "skipped_group_failed"  // FIFO: an earlier record of its group failed
	OutcomeSkippedDeadline    = "skipped_deadline"      // not started, the deadline was too close
	OutcomeAbandoned          = "abandoned_at_deadline" // still running at the deadline: reported failed
	// OutcomeProbe and OutcomeProbeDuplicate end a probe (contract.AttrProbe): its record
	// completed, or was already complete; no effect ran.
	OutcomeProbe          = "probe"
	OutcomeProbeDuplicate = "probe_duplicate"
)

// ErrInvalidLevel is returned (wrapped) by ParseLevel for a name it does not know.
var ErrInvalidLevel = errors.New("invalid log level")

// NewLogger returns a JSON logger writing one object per line to w, dropping records below
// level. The time and message keys are renamed to "timestamp" and "message", the names
// Lambda's own JSON log format uses, so Lambda's application log-level filtering and Logs
// Insights treat our lines like the platform's.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				a.Key = "timestamp"
			case slog.MessageKey:
				a.Key = "message"
			}
			return a
		},
	}))
}

// LogAttrs is log.LogAttrs without the caller's program counter. slog looks the caller up for
// every line (runtime.Callers) for handlers that print the source, and NewLogger's handler
// never does; on the consumer's per-record lines that lookup was about 2% of its CPU per
// record. A logger whose handler adds the source gets lines without it.
func LogAttrs(ctx context.Context, log *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	h := log.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r) // as slog.Logger does: a line that cannot be written is not an error of the caller's
}

// ParseLevel maps a LOG_LEVEL value to a slog level. It accepts DEBUG, INFO, WARN (or
// WARNING) and ERROR in any case, with surrounding spaces ignored; anything else, the empty
// string included, is an error so a typo in configuration fails the cold start instead of
// silently logging at a different level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "DEBUG":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "WARN", "WARNING":
		return slog.LevelWarn, nil
	case "ERROR":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%w %q: want DEBUG, INFO, WARN or ERROR", ErrInvalidLevel, s)
}
