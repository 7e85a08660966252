package local

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/schedule"
)

// Message is one message to send. On a FIFO queue GroupID defaults to "local" and
// DeduplicationID to a new value per message, so that the same body sent twice arrives
// twice, as a producer's retry after a lost response does. On a standard queue GroupID is
// the fair-queue tenant, sent only when set, and received in the record's MessageGroupId
// as SQS does; the kit's server does not model fair queueing's dwell-time priority.
// DeduplicationID is refused there, as SQS refuses it.
type Message struct {
	Body                     string
	GroupID, DeduplicationID string
	Attributes               map[string]string
}

var dedupSeq atomic.Int64

// Send sends bodies to a pipeline's queue ("" when only one runs).
func (k *Kit) Send(ctx context.Context, pipeline string, bodies ...string) error {
	msgs := make([]Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = Message{Body: b}
	}
	return k.SendMessages(ctx, pipeline, msgs...)
}

// SendMessages sends messages to a pipeline's queue, in batches of ten.
func (k *Kit) SendMessages(ctx context.Context, pipeline string, msgs ...Message) error {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return err
	}
	if !r.Fifo {
		for i, m := range msgs {
			if m.DeduplicationID != "" {
				return fmt.Errorf("local: message %d has a DeduplicationID, and %s's queue is a standard queue, which SQS refuses it on: leave it empty (nothing was sent)", i, r.Name)
			}
		}
	}
	for start := 0; start < len(msgs); start += 10 {
		batch := msgs[start:min(start+10, len(msgs))]
		entries := make([]sqstypes.SendMessageBatchRequestEntry, len(batch))
		for i, m := range batch {
			e := sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(m.Body)}
			if len(m.Attributes) > 0 {
				e.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
				for n, v := range m.Attributes {
					e.MessageAttributes[n] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
				}
			}
			if r.Fifo {
				g, dd := m.GroupID, m.DeduplicationID
				if g == "" {
					g = "local"
				}
				if dd == "" {
					dd = "local-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(dedupSeq.Add(1), 36)
				}
				e.MessageGroupId, e.MessageDeduplicationId = aws.String(g), aws.String(dd)
			} else if m.GroupID != "" {
				e.MessageGroupId = aws.String(m.GroupID)
			}
			entries[i] = e
		}
		out, err := k.sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.QueueURL), Entries: entries})
		if err != nil {
			return fmt.Errorf("local: send to %s: %w (messages %d to %d were not sent)", r.Name, err, start, len(msgs)-1)
		}
		r.st.obs.Sent(r.p.Queue, out.Successful)
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("local: send to %s: %d of a batch refused, first %s: %s (messages from %d on may not be sent)",
				r.Name, len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message), start)
		}
	}
	return nil
}

// Fire runs a pipeline's dispatcher once, as its schedule would at the scheduled time at
// (a new execution id each call: fire twice with the same time to see a scheduler's
// duplicate firing be harmless). The invocation is asynchronous as Scheduler's is: a failure
// is retried as the function's EventInvokeConfig says, the retries a minute apart on the
// alarm clock, and the last failure goes to its on-failure destination. Fire returns when
// the dispatcher is done, with the number of attempts and the last failure, or when ctx
// ends or the kit is closed. A zero at is the current minute.
func (k *Kit) Fire(ctx context.Context, pipeline string, at time.Time) (attempts int, err error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return 0, err
	}
	return k.fire(ctx, r, at)
}

func (k *Kit) fire(ctx context.Context, r *run, at time.Time) (attempts int, err error) {
	ctx, cancel := context.WithCancel(ctx) // Close ends a firing and its retries
	defer cancel()
	defer context.AfterFunc(k.ctx, cancel)()
	if at.IsZero() {
		at = time.Now().UTC().Truncate(time.Minute)
	}
	if r.Dispatcher == "" {
		return 0, fmt.Errorf("local: pipeline %s has no dispatcher", r.Name)
	}
	t := r.st.d.Template
	s, err := t.ScheduleFor(r.Dispatcher)
	if err != nil {
		return 0, fmt.Errorf("local: %w", err)
	}
	payload, err := schedule.Input(s, at, fmt.Sprintf("local-%d-%d", time.Now().UnixNano(), k.fires.Add(1)), nil)
	if err != nil {
		return 0, fmt.Errorf("local: %w", err)
	}
	r.mu.Lock() // one environment: one invocation at a time, as Lambda runs one per environment
	defer r.mu.Unlock()
	return standin.InvokeAsync(ctx, r.st.d, k.sq, r.Dispatcher, payload, r.st.obs.Clock, func(ctx context.Context, payload []byte) (lambdart.Result, error) {
		return k.invoke(ctx, r.st, r.Dispatcher, r.disp, payload)
	}, r.disp.FunctionARN())
}

// say writes to Progress, one writer at a time (firings report from their goroutines).
func (k *Kit) say(format string, args ...any) {
	k.sayMu.Lock()
	defer k.sayMu.Unlock()
	fmt.Fprintf(k.opts.Progress, format, args...)
}

// cron fires r's dispatcher at each time its schedule's expression gives, until Close.
func (k *Kit) cron(r *run) error {
	s, err := r.st.d.Template.ScheduleFor(r.Dispatcher)
	if err != nil {
		return err
	}
	now := k.opts.now()
	e, err := schedule.Of(s, now)
	if err != nil {
		return err
	}
	first, ok := e.Next(now)
	if !ok {
		k.say("local: %s: schedule %s never fires again\n", r.Name, e)
		return nil
	}
	k.say("local: %s: schedule %s, first firing %s\n", r.Name, e, first.Format(time.RFC3339))
	k.wg.Go(func() {
		for at, ok := first, true; ok; {
			select {
			case <-k.ctx.Done():
				return
			case <-time.After(at.Sub(k.opts.now())):
			}
			n, err := k.fire(k.ctx, r, at)
			if k.ctx.Err() != nil {
				return
			}
			outcome := "done"
			if err != nil {
				outcome = fmt.Sprintf("failed after %d attempts: %v", n, err)
			}
			k.say("local: %s: fired its schedule for %s: %s\n", r.Name, at.Format(time.RFC3339), outcome)
			// The next occurrence after the one fired, unless the machine slept or a firing
			// took long: occurrences more than a minute past are skipped, not fired in a burst.
			next, more := e.Next(at)
			if since := k.opts.now().Add(-time.Minute); more && next.Before(since) {
				skipped := 0
				for more && next.Before(since) {
					skipped++
					next, more = e.Next(next)
				}
				k.say("local: %s: skipped %d occurrences of its schedule that passed while it fired or the machine slept\n", r.Name, skipped)
			}
			at, ok = next, more
		}
	})
	return nil
}
