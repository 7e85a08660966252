package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aws/smithy-go"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/internal/backoff"
)

// entryState tracks one message across attempts.
type entryState struct {
	msg     *message
	id      string // batch entry id, stable across attempts
	lastErr error
	final   bool // failed in a way retrying cannot fix
}

// send sends msgs in batches of at most 10 entries (and maxBatchBytes), retrying only the
// entries that failed, with capped exponential backoff and full jitter, up to
// SEND_MAX_ATTEMPTS attempts per entry. It returns how many were accepted and, if any were
// not, an *UnsentError.
//
// What is retried: entries SQS failed with SenderFault=false (a service-side problem) and
// whole calls that failed with a server-side, throttling or network error (after the SDK's own
// retries). What fails fast: entries with SenderFault=true (the request itself is wrong, e.g.
// invalid characters; the same bytes fail the same way) and calls rejected with a client fault
// other than throttling (missing queue, access denied, KMS key disabled): waiting does not fix
// those, and the invocation's failure is what gets them noticed.
func (h *Handler) send(ctx context.Context, log *slog.Logger, msgs []message) (int, error) {
	pending := make([]*entryState, len(msgs))
	for i := range msgs {
		pending[i] = &entryState{msg: &msgs[i], id: entryID(i)}
	}
	var failed []*entryState // given up on
	sent := 0
	for attempt := 1; len(pending) > 0; attempt++ {
		var retryNext []*entryState
		for _, batch := range chunk(pending) {
			ok, again := h.sendBatch(ctx, batch)
			sent += ok
			for _, e := range again {
				if e.final || attempt >= h.cfg.SendMaxAttempts {
					failed = append(failed, e)
				} else {
					retryNext = append(retryNext, e)
				}
			}
		}
		pending = retryNext
		if len(pending) == 0 {
			break
		}
		wait := h.backoff(attempt)
		log.Warn("retrying failed entries", "attempt", attempt, "entries", len(pending), "wait", wait.String(),
			"error", pending[0].lastErr.Error())
		if err := h.sleep(ctx, wait); err != nil {
			for _, e := range pending {
				e.lastErr = fmt.Errorf("%w (while waiting to retry: %w)", e.lastErr, err)
			}
			failed = append(failed, pending...)
			break
		}
	}
	if len(failed) == 0 {
		return sent, nil
	}
	for _, e := range failed {
		log.Error("message not sent", "itemId", e.msg.itemID, "idempotencyKey", e.msg.key,
			"groupId", e.msg.group, "error", e.lastErr.Error())
	}
	return sent, &UnsentError{Unsent: len(failed), Total: len(msgs), Last: failed[len(failed)-1].lastErr}
}

// backoff is the wait after the given attempt: full jitter over min(cap, base*2^(attempt-1)).
func (h *Handler) backoff(attempt int) time.Duration {
	return h.jitter(backoff.Ceiling(attempt, h.backoffBase, h.backoffCap))
}

// chunk splits entries into batches SQS accepts: at most 10 entries and maxBatchBytes each.
func chunk(entries []*entryState) [][]*entryState {
	var out [][]*entryState
	var cur []*entryState
	size := 0
	for _, e := range entries {
		if len(cur) == maxBatchEntries || (len(cur) > 0 && size+e.msg.size > maxBatchBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, e)
		size += e.msg.size
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sendBatch sends one batch and returns how many entries SQS accepted and the entries that
// were not (with lastErr and final set).
func (h *Handler) sendBatch(ctx context.Context, batch []*entryState) (int, []*entryState) {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(h.cfg.QueueURL), Entries: make([]types.SendMessageBatchRequestEntry, len(batch))}
	byID := make(map[string]*entryState, len(batch))
	for i, e := range batch {
		byID[e.id] = e
		in.Entries[i] = e.entry()
	}

	out, err := h.sqs.SendMessageBatch(ctx, in)
	if err != nil {
		err = fmt.Errorf("SendMessageBatch: %w", err)
		final := permanent(ctx, err)
		for _, e := range batch {
			e.lastErr, e.final = err, final
		}
		return 0, batch
	}
	ok := 0
	for _, s := range out.Successful {
		if _, mine := byID[aws.ToString(s.Id)]; mine {
			delete(byID, aws.ToString(s.Id))
			ok++
		}
	}
	rejected := make(map[string]bool, len(out.Failed))
	for _, f := range out.Failed {
		e := byID[aws.ToString(f.Id)]
		if e == nil {
			continue
		}
		rejected[e.id] = true
		e.lastErr = fmt.Errorf("entry rejected: %s: %s (sender fault: %t)", aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault)
		e.final = f.SenderFault
	}
	var again []*entryState
	for _, e := range batch { // batch order, so a retry keeps the original order
		if _, left := byID[e.id]; !left {
			continue
		}
		if !rejected[e.id] {
			// Neither successful nor failed: SQS did not say. Sending again is safe (the
			// consumer absorbs a repeat); assuming success could lose the message.
			e.lastErr, e.final = errors.New("entry missing from the SendMessageBatch response"), false
		}
		again = append(again, e)
	}
	return ok, again
}

// entry is e's message as an entry of SendMessageBatch: its key in the attribute the
// consumer reads (the probe's own for a probe), its group and deduplication id on FIFO.
func (e *entryState) entry() types.SendMessageBatchRequestEntry {
	attr := attrKey
	if e.msg.probe {
		attr = contract.AttrProbe
	}
	entry := types.SendMessageBatchRequestEntry{
		Id:          aws.String(e.id),
		MessageBody: aws.String(e.msg.body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			attr: {DataType: aws.String("String"), StringValue: aws.String(e.msg.key)},
		},
	}
	if e.msg.group != "" {
		entry.MessageGroupId = aws.String(e.msg.group)
	}
	if e.msg.dedupID != "" {
		entry.MessageDeduplicationId = aws.String(e.msg.dedupID)
	}
	return entry
}

// permanent reports whether a failed call should not be retried: the context is done, or SQS
// rejected the request with a client fault that is not throttling.
func permanent(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorFault() == smithy.FaultClient {
		return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary
	}
	return false
}
