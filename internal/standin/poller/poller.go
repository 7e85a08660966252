// Package poller stands in for Lambda's SQS event source mapping in the local kit and the
// scenario tests: it receives batches as the mapping does and invokes a function through an
// Invoker, deleting what the response does not report failed.
package poller

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// Invoker runs one invocation in one execution environment and returns the function's
// response payload; any failure of the invocation as a whole (a function error, a timeout, a
// crash) is an error. *lambdart.Env satisfies it through InvokerFunc.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// InvokerFunc adapts a function to Invoker.
type InvokerFunc func(ctx context.Context, payload []byte) ([]byte, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// Poller stands in for Lambda's SQS event source mapping, as documented for SQS with
// ReportBatchItemFailures: one poller per execution environment receives up to the mapping's
// batch size (long polling, at most 10 per ReceiveMessage), invokes the function
// synchronously, deletes the records the response does not list as failed, and leaves every
// other record to come back after the queue's visibility timeout. An invocation that fails as
// a whole (function error, timeout, crash) deletes nothing. A response that lists an unknown
// or empty itemIdentifier fails the whole batch, as Lambda does.
type Poller struct {
	SQS      *sqs.Client
	QueueURL string
	QueueARN string
	Region   string
	Mapping  standin.Mapping
	Fifo     bool      // the queue is a FIFO queue: no batching window
	Envs     []Invoker // one concurrent poller each; at most Mapping.MaxConcurrency are used
	// VisibilityTimeout, when set (whole seconds), is asked for on each receive instead of
	// the queue's own: a shorter one for a queue the poller may not change (a deployed one).
	VisibilityTimeout int32

	Stats Stats

	lastErr atomic.Value // string: the last delete error, for LastDeleteError
}

// LastDeleteError is the last failed delete ("" when none), for a scenario's failure message.
func (p *Poller) LastDeleteError() string {
	s, _ := p.lastErr.Load().(string)
	return s
}

// Stats counts what the pollers did; safe to read while they run.
type Stats struct {
	Invocations    atomic.Int64
	InvokeErrors   atomic.Int64 // invocations that failed as a whole
	Received       atomic.Int64 // records handed to the function
	Deleted        atomic.Int64
	ReportedFailed atomic.Int64 // batchItemFailures entries
	SQSCalls       atomic.Int64 // ReceiveMessage + DeleteMessageBatch
	DeleteErrors   atomic.Int64 // DeleteMessageBatch calls or entries that failed
	Filtered       atomic.Int64 // records that matched none of the filter criteria, deleted undelivered
}

// Run polls until ctx is done and returns the first SQS error that is not ctx's.
func (p *Poller) Run(ctx context.Context) error {
	n := len(p.Envs)
	if p.Mapping.MaxConcurrency > 0 && n > p.Mapping.MaxConcurrency {
		n = p.Mapping.MaxConcurrency
	}
	if n == 0 {
		return errors.New("poller: no execution environments")
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = p.loop(ctx, p.Envs[i]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Poller) loop(ctx context.Context, env Invoker) error {
	var held []sqstypes.Message // received, past the payload limit of the batch before
	for ctx.Err() == nil {
		held = p.renew(ctx, held)
		batch, rest, err := p.receive(ctx, held)
		held = rest
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if len(batch) == 0 {
			continue
		}
		if err := p.deliver(ctx, env, batch); err != nil && ctx.Err() == nil {
			// As Lambda's poller: the undeleted records come back after the visibility
			// timeout (and run as duplicates); the poller goes on.
			p.Stats.DeleteErrors.Add(1)
			p.lastErr.Store(err.Error())
		}
	}
	return nil
}

// renew restarts the visibility timeout of records held over from the batch before (they
// waited through its invocation) and returns those still held: a record whose receipt
// handle no longer works has become visible again and goes to whoever receives it next.
func (p *Poller) renew(ctx context.Context, held []sqstypes.Message) []sqstypes.Message {
	if len(held) == 0 {
		return nil
	}
	vis, err := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(p.QueueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		return nil // they come back after the visibility timeout, as after a crash
	}
	seconds, _ := strconv.Atoi(vis.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	var kept []sqstypes.Message
	for _, m := range held {
		p.Stats.SQSCalls.Add(1)
		if _, err := p.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(p.QueueURL),
			ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(seconds)}); err == nil {
			kept = append(kept, m)
		}
	}
	return kept
}

// MaxPayload is Lambda's quota on a synchronous invocation's request payload (6 MB), which
// an event source mapping keeps a batch's event under.
const MaxPayload = 6 * 1024 * 1024

// receive gathers a batch as Lambda's SQS event source mapping does ("Using Lambda with
// Amazon SQS", Lambda developer guide): without a batching window, what one long poll
// returns; with one, it goes on polling from the first record until the window has passed,
// the batch is full, or the next record would take the event past MaxPayload. A FIFO queue
// takes no window (Lambda does not support one for FIFO queues). The records of the last
// receive that did not fit are returned as rest, for the next batch, in their order; held
// are those of the receive before.
func (p *Poller) receive(ctx context.Context, held []sqstypes.Message) (batch, rest []sqstypes.Message, err error) {
	size := p.Mapping.BatchSize
	if size <= 0 {
		size = 10
	}
	window := time.Duration(p.Mapping.WindowSeconds) * time.Second
	if p.Fifo {
		window = 0
	}
	payload := len(`{"Records":[]}`)
	var deadline time.Time
	add := func(msgs []sqstypes.Message) {
		for i, m := range msgs {
			n := p.recordSize(m)
			if len(batch) > 0 && (len(batch) >= size || payload+n > MaxPayload) {
				rest = append(rest, msgs[i:]...)
				return
			}
			batch, payload = append(batch, m), payload+n
		}
	}
	add(held)
	for len(rest) == 0 && len(batch) < size {
		wait := int32(1) // short, so that a cancelled run stops promptly
		if len(batch) > 0 {
			if deadline.IsZero() {
				deadline = time.Now().Add(window)
			}
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			if left < time.Second { // wait out the window, then take what is there
				select {
				case <-ctx.Done():
					return batch, nil, ctx.Err()
				case <-time.After(left):
				}
				wait = 0
			}
		}
		p.Stats.SQSCalls.Add(1)
		out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.QueueURL),
			MaxNumberOfMessages:         int32(min(size-len(batch), 10)),
			WaitTimeSeconds:             wait,
			VisibilityTimeout:           p.VisibilityTimeout,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			return batch, nil, err
		}
		add(p.filter(ctx, out.Messages))
		if window == 0 || wait == 0 {
			break
		}
	}
	return batch, rest, nil
}

// filter applies the mapping's filter criteria as Lambda does before it batches: a record
// that matches no filter is deleted from the queue, never delivered (one whose delete fails
// comes back after the visibility timeout and is filtered again). It returns the others.
func (p *Poller) filter(ctx context.Context, msgs []sqstypes.Message) []sqstypes.Message {
	if len(p.Mapping.Filters) == 0 {
		return msgs
	}
	var keep []sqstypes.Message
	drop := map[string]sqstypes.Message{}
	for _, m := range msgs {
		b, _ := json.Marshal(p.record(m))
		if p.Mapping.Delivers(b) {
			keep = append(keep, m)
		} else {
			drop[aws.ToString(m.MessageId)] = m
		}
	}
	if err := p.delete(ctx, drop); err != nil && ctx.Err() == nil {
		p.Stats.DeleteErrors.Add(1)
		p.lastErr.Store("filtered out: " + err.Error())
	} else {
		p.Stats.Filtered.Add(int64(len(drop)))
	}
	return keep
}

// recordSize is what m adds to the event: its record and a comma.
func (p *Poller) recordSize(m sqstypes.Message) int {
	b, _ := json.Marshal(p.record(m))
	return len(b) + 1
}

func (p *Poller) deliver(ctx context.Context, env Invoker, batch []sqstypes.Message) error {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(batch))}
	byID := make(map[string]sqstypes.Message, len(batch))
	for i, m := range batch {
		ev.Records[i] = p.record(m)
		byID[*m.MessageId] = m
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	p.Stats.Invocations.Add(1)
	p.Stats.Received.Add(int64(len(batch)))
	resp, err := env.Invoke(ctx, payload)
	if err != nil {
		p.Stats.InvokeErrors.Add(1)
		return nil // the whole batch comes back after the visibility timeout
	}
	done := byID
	if p.Mapping.ReportFailures {
		var r events.SQSEventResponse
		if err := json.Unmarshal(resp, &r); err != nil {
			p.Stats.InvokeErrors.Add(1)
			return nil // an unreadable response fails the batch
		}
		done = make(map[string]sqstypes.Message, len(byID))
		for id, m := range byID {
			done[id] = m
		}
		for _, f := range r.BatchItemFailures {
			if _, ok := byID[f.ItemIdentifier]; !ok {
				p.Stats.InvokeErrors.Add(1)
				return nil // Lambda fails the whole batch on an unknown identifier
			}
			delete(done, f.ItemIdentifier)
			p.Stats.ReportedFailed.Add(1)
		}
	}
	return p.delete(ctx, done)
}

func (p *Poller) delete(ctx context.Context, msgs map[string]sqstypes.Message) error {
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	flush := func() error {
		if len(entries) == 0 {
			return nil
		}
		p.Stats.SQSCalls.Add(1)
		out, err := p.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("delete: %d entries failed, first %s: %s", len(out.Failed), aws.ToString(out.Failed[0].Code), aws.ToString(out.Failed[0].Message))
		}
		p.Stats.Deleted.Add(int64(len(out.Successful)))
		entries = entries[:0]
		return nil
	}
	for _, m := range msgs {
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(entries))), ReceiptHandle: m.ReceiptHandle})
		if len(entries) == 10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// record converts a received message into the event record Lambda builds.
func (p *Poller) record(m sqstypes.Message) events.SQSMessage {
	r := events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             map[string]string{},
		MessageAttributes:      map[string]events.SQSMessageAttribute{},
		EventSourceARN:         p.QueueARN,
		EventSource:            "aws:sqs",
		AWSRegion:              p.Region,
	}
	if r.Md5OfBody == "" {
		sum := md5.Sum([]byte(r.Body))
		r.Md5OfBody = hex.EncodeToString(sum[:])
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		a := events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}
		a.BinaryValue = v.BinaryValue // []byte: base64 in the JSON event, as Lambda sends it
		r.MessageAttributes[k] = a
	}
	return r
}
