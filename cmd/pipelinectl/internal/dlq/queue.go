package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// reasonRedrivePolicy groups messages without a DeadLetterReason: SQS moved them after
// maxReceiveCount receives (the queue's redrive policy).
const reasonRedrivePolicy = "redrive policy"

// URLOfARN finds the URL of the queue an ARN names (arn:aws:sqs:region:account:name).
func URLOfARN(ctx context.Context, api *sqs.Client, arn string) (string, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("%q is not an SQS queue ARN", arn)
	}
	out, err := api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("queue %s: %w", arn, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// reason is the group of a dead-lettered message: the code of the consumer's
// DeadLetterReason ("value_missing: ..." is value_missing), or reasonRedrivePolicy.
func reason(m types.Message) string {
	a, ok := m.MessageAttributes[contract.AttrDeadLetterReason]
	if !ok || a.StringValue == nil {
		return reasonRedrivePolicy
	}
	code, _, _ := strings.Cut(*a.StringValue, ": ")
	return code
}

// badInput reports a message the consumer dead-lettered as one that can never succeed
// unchanged: every message with a DeadLetterReason.
func badInput(m types.Message) bool { return reason(m) != reasonRedrivePolicy }

func sysAttr(m types.Message, name types.MessageSystemAttributeName) string {
	return m.Attributes[string(name)]
}

func group(m types.Message) string { return sysAttr(m, types.MessageSystemAttributeNameMessageGroupId) }

// Sent is m's SentTimestamp: when SQS accepted the send that made this copy of it.
func Sent(m types.Message) time.Time {
	ms, _ := strconv.ParseInt(sysAttr(m, types.MessageSystemAttributeNameSentTimestamp), 10, 64)
	return time.UnixMilli(ms)
}

// attrFirstSent carries a message's first SentTimestamp (epoch milliseconds) through the
// redrives that send it as a new message, whose own SentTimestamp starts again: the age
// checked against the record TTL is the age of the first send.
const attrFirstSent = "FirstSentTimestamp"

// FirstSent is when m was first sent: its FirstSentTimestamp attribute or its
// SentTimestamp, whichever is earlier.
func FirstSent(m types.Message) time.Time {
	t := Sent(m)
	if a, ok := m.MessageAttributes[attrFirstSent]; ok && a.StringValue != nil {
		if ms, err := strconv.ParseInt(*a.StringValue, 10, 64); err == nil && time.UnixMilli(ms).Before(t) {
			t = time.UnixMilli(ms)
		}
	}
	return t
}

// withFirstSent is m's attributes with FirstSentTimestamp added when m has none and SQS's
// limit of 10 leaves room (without room the copy's age starts again: said in the docs).
func withFirstSent(m types.Message) map[string]types.MessageAttributeValue {
	if _, ok := m.MessageAttributes[attrFirstSent]; ok || len(m.MessageAttributes) >= 10 {
		return m.MessageAttributes
	}
	attrs := maps.Clone(m.MessageAttributes)
	if attrs == nil {
		attrs = map[string]types.MessageAttributeValue{}
	}
	attrs[attrFirstSent] = types.MessageAttributeValue{DataType: aws.String("Number"),
		StringValue: aws.String(strconv.FormatInt(FirstSent(m).UnixMilli(), 10))}
	return attrs
}

// receive is one ReceiveMessage of at most n messages with every attribute, holding what it
// returns invisible for hold; an empty result after a 1 s long poll means nothing is
// visible. Once started it runs to its end, also on Ctrl-C: a receive cut off after SQS
// handed the messages out would leave them hidden with nobody to give them back.
func receive(ctx context.Context, api *sqs.Client, url string, hold time.Duration, n int) ([]types.Message, error) {
	ctx, cancel := settled(ctx)
	defer cancel()
	in := &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         int32(min(n, 10)),
		VisibilityTimeout:           int32(hold / time.Second),
		WaitTimeSeconds:             1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
	if strings.HasSuffix(url, ".fifo") {
		// The SDK's retry of a receive whose response was lost then hands out the same
		// messages again, instead of leaving them hidden.
		in.ReceiveRequestAttemptId = aws.String(strconv.FormatInt(time.Now().UnixNano(), 36))
	}
	// The SDK's retries are off for a receive, and done here: a try that got no whole answer
	// (none, or one cut off while it came) may have handed out a batch that nobody can give
	// back (its receipt handles are lost with the answer), hidden until the hold ends. Each
	// is counted (lostReceives), so that the summary names it and says when its batch
	// reappears. On FIFO the attempt id makes the retry hand out the same batch: nothing is
	// lost, unless every try fails, and then that one batch is.
	fifo := in.ReceiveRequestAttemptId != nil
	var msgs []types.Message
	unknown := false
	err := tries(receiveAttempts, 100*time.Millisecond, func() error {
		out, err := api.ReceiveMessage(ctx, in, oneAttempt)
		if err == nil {
			msgs = out.Messages
		}
		return err
	}, func() {
		unknown = true
		if !fifo {
			noteLostReceive(ctx, hold)
		}
	})
	if err != nil {
		if fifo && unknown {
			noteLostReceive(ctx, hold)
		}
		return nil, fmt.Errorf("receive from %s: %w", url, err)
	}
	return msgs, nil
}

// receiveAttempts is how often one receive is tried (the SDK's own default).
const receiveAttempts = 3

// lostReceives counts a run's receives that got no answer, and when the last one's batch,
// hidden for the hold with nobody to give it back, reappears.
type lostReceives struct {
	mu    sync.Mutex
	n     int
	until time.Time
}

type lostKey struct{}

// withLostReceives is ctx whose receives count their lost answers in l.
func withLostReceives(ctx context.Context, l *lostReceives) context.Context {
	return context.WithValue(ctx, lostKey{}, l)
}

func noteLostReceive(ctx context.Context, hold time.Duration) {
	if l, ok := ctx.Value(lostKey{}).(*lostReceives); ok {
		l.mu.Lock()
		l.n++
		if t := time.Now().Add(hold); t.After(l.until) {
			l.until = t
		}
		l.mu.Unlock()
	}
}

// makeVisible returns messages to the queue at once (visibility timeout 0). It runs even
// when ctx is cancelled (an interrupted scan must not leave messages hidden).
func makeVisible(ctx context.Context, api *sqs.Client, url string, msgs []types.Message) error {
	left, err := giveBack(ctx, api, url, msgs)
	if len(left) == 0 {
		return nil
	}
	ids := make([]string, len(left))
	for i, m := range left {
		ids[i] = aws.ToString(m.MessageId)
	}
	return &hiddenError{n: len(left), msg: fmt.Sprintf("%d messages stay hidden in %s until their visibility timeout ends (%s): %s", len(left), url, cli.InWords(err), strings.Join(ids, ", "))}
}

// hiddenError is messages makeVisible could not give back: they reappear at the end of their
// visibility timeout.
type hiddenError struct {
	n   int
	msg string
}

func (e *hiddenError) Error() string { return e.msg }

// count is how many messages stay hidden, 0 for a nil error.
func (e *hiddenError) count() int {
	if e == nil {
		return 0
	}
	return e.n
}

// giveBack makes msgs visible again at once (visibility timeout 0), also when ctx is
// cancelled, and returns those it could not, with the last call's error. A message SQS
// says is no longer in flight (its hold ran out) or whose handle is stale counts as given
// back: it is visible, or gone.
func giveBack(ctx context.Context, api *sqs.Client, url string, msgs []types.Message, opts ...func(*sqs.Options)) ([]types.Message, error) {
	var left []types.Message
	var lastErr error
	for chunk := range slices.Chunk(msgs, 10) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}
		}
		cctx, cancel := settled(ctx)
		out, err := api.ChangeMessageVisibilityBatch(cctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries}, opts...)
		cancel()
		if err != nil {
			left, lastErr = append(left, chunk...), err
			continue
		}
		for _, f := range out.Failed {
			if c := aws.ToString(f.Code); strings.Contains(c, "MessageNotInflight") || strings.Contains(c, "ReceiptHandleIsInvalid") {
				continue
			}
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			left = append(left, chunk[i])
			lastErr = fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return left, lastErr
}

// scan receives up to max messages of url, holding each invisible until the scan ends (at
// most hold/2, so none reappears mid-scan), and returns them in the order received. The
// caller makes them visible again (makeVisible). Ctrl-C (ctx) stops it between receives,
// with what it received so far and ctx's error.
func scan(ctx context.Context, api *sqs.Client, url string, max int, hold time.Duration) ([]types.Message, error) {
	var msgs []types.Message
	seen := map[string]bool{}
	deadline := time.Now().Add(hold / 2)
	for len(msgs) < max && time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return msgs, err
		}
		got, err := receive(ctx, api, url, hold, max-len(msgs))
		if err != nil {
			return msgs, err
		}
		if len(got) == 0 {
			break
		}
		for _, m := range got {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				msgs = append(msgs, m)
			}
		}
	}
	return msgs, nil
}

// Peek is scan followed by makeVisible: the messages, none of them consumed.
func Peek(ctx context.Context, api *sqs.Client, url string, max int, hold time.Duration) ([]types.Message, error) {
	msgs, err := scan(ctx, api, url, max, hold)
	return msgs, errors.Join(err, makeVisible(ctx, api, url, msgs))
}

// reasonGroup is the messages of one reason.
type reasonGroup struct {
	reason string
	msgs   []types.Message
	oldest time.Time
}

// byReason groups msgs by reason, most messages first.
func byReason(msgs []types.Message) []*reasonGroup {
	idx := map[string]*reasonGroup{}
	var out []*reasonGroup
	for _, m := range msgs {
		r := reason(m)
		g, ok := idx[r]
		if !ok {
			g = &reasonGroup{reason: r}
			idx[r] = g
			out = append(out, g)
		}
		g.msgs = append(g.msgs, m)
		if s := Sent(m); g.oldest.IsZero() || s.Before(g.oldest) {
			g.oldest = s
		}
	}
	slices.SortStableFunc(out, func(a, b *reasonGroup) int {
		return cmp.Or(cmp.Compare(len(b.msgs), len(a.msgs)), cmp.Compare(a.reason, b.reason))
	})
	return out
}
