// Package sqsfidelity measures how faithfully an SQS-compatible server (internal/sqslocal)
// implements the SQS behaviour the pipeline relies on: visibility timeouts, redrive to a
// dead-letter queue, receive counts, FIFO message groups and deduplication, batch results and
// the queue attributes the stack's templates set.
//
// The same Checks run as the package's tests (against sqslocal.Default, or $SQSLOCAL_KIND) and
// from cmd/compare, which runs them against every kind and prints the table in README.md.
package sqsfidelity

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

// Check is one property of SQS. Run returns a short note on what it saw, and an error when
// the server does not behave as SQS does.
type Check struct {
	Name string
	Run  func(ctx context.Context, e *Env) (note string, err error)
	// Timed checks see a message stay hidden until a deadline, so a server slowed down by
	// other work can push their observation past it: run them one at a time, apart from the
	// others (see RunChecks). Every other check only waits for something to happen, and
	// waits generously.
	Timed bool
}

// Checks are every property measured, in the order of the README's table.
var Checks = []Check{
	{"visibility timeout", checkVisibility, true},
	{"ChangeMessageVisibility", checkChangeVisibility, true},
	{"redrive to DLQ (RedrivePolicy by ARN)", checkRedrive, false},
	{"ApproximateReceiveCount", checkReceiveCount, false},
	{"FIFO group blocked while in flight", checkGroupInFlight, true},
	{"FIFO order within a group", checkGroupOrder, false},
	{"FIFO batch of one group", checkGroupBatch, false},
	{"FIFO receive count of batch followers", checkGroupBatchRedrive, false},
	{"FIFO dedup id (also after delete)", checkDedupID, false},
	{"FIFO content-based dedup", checkContentDedup, false},
	{"batch results (send, partial delete failure)", checkBatch, false},
	{"template attributes accepted", checkAttributes, false},
	{"template attributes kept (read back)", checkAttributesKept, false},
	{"RedriveAllowPolicy enforced", checkRedriveAllowEnforced, false},
}

// RunChecks runs every check against e and gives each outcome to report: the Timed checks
// first, one at a time, then the others all at once. It returns when all are done. The
// package's test does the same with subtests.
func RunChecks(ctx context.Context, e *Env, report func(i int, note string, err error)) {
	for i, c := range Checks {
		if c.Timed {
			note, err := c.Run(ctx, e)
			report(i, note, err)
		}
	}
	var wg sync.WaitGroup
	for i, c := range Checks {
		if !c.Timed {
			wg.Go(func() {
				note, err := c.Run(ctx, e)
				report(i, note, err)
			})
		}
	}
	wg.Wait()
}

// Env is one server under test.
type Env struct {
	Server *sqslocal.Server
	client *sqs.Client
	suffix string // keeps queue names unique when the checks run twice on one server
}

// NewEnv prepares the checks for srv.
func NewEnv(srv *sqslocal.Server) *Env {
	return &Env{
		Server: srv,
		client: srv.Client(func(o *sqs.Options) { o.RetryMaxAttempts = 1 }),
		suffix: strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
	}
}

// Timing of the checks. A check that a message stays hidden until T polls the queue once
// for a second right after the call that hid it, and T is far enough away (hideVis, or
// extendVis) that the poll ends seconds before it even when the server answers slowly;
// expectHidden measures when the poll answered and says so in any failure. A check that a
// message comes back waits up to patience for it: a receive returns as soon as the message
// is there, so patience costs nothing when the server keeps up.
const (
	// vis is the queue's visibility timeout where a check only waits for messages to come
	// back (redrive, receive counts): short, since every round waits it out.
	vis = 2
	// hideVis is the visibility timeout where a check also sees the message stay hidden:
	// the one-second poll leaves about 4 s of slack.
	hideVis = 5
	// extendVis is what ChangeMessageVisibility extends to: released at once after the
	// check, so its length costs nothing.
	extendVis = 30
	// hiddenPoll is how long expectHidden polls, in seconds.
	hiddenPoll = 1
	// patience is the long poll, in seconds, of a receive that must return a message: SQS's
	// maximum WaitTimeSeconds.
	patience = 20
	// afterVisMargin is how long after a visibility timeout can have ended a check receives
	// again; patience covers a server slower than that.
	afterVisMargin = 300 * time.Millisecond
)

func (e *Env) queue(ctx context.Context, name string, attrs map[string]string) (url, arn string, err error) {
	name += "-" + e.suffix
	if attrs["FifoQueue"] == "true" {
		name += ".fifo"
	}
	return e.Server.CreateQueue(ctx, name, attrs)
}

func fifo(more ...string) map[string]string {
	m := map[string]string{"FifoQueue": "true", "VisibilityTimeout": strconv.Itoa(vis)}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

func (e *Env) send(ctx context.Context, url, body, group, dedup string) error {
	in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}
	if group != "" {
		in.MessageGroupId = &group
	}
	if dedup != "" {
		in.MessageDeduplicationId = &dedup
	}
	_, err := e.client.SendMessage(ctx, in)
	if err != nil {
		return fmt.Errorf("send %q: %w", body, err)
	}
	return nil
}

// receive long-polls for up to wait seconds: a message that should not be visible has that
// long to show up, one that should be visible is returned as soon as it is (use patience).
func (e *Env) receive(ctx context.Context, url string, max, wait int32) ([]types.Message, error) {
	out, err := e.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    &url,
		MaxNumberOfMessages:         max,
		WaitTimeSeconds:             wait,
		AttributeNames:              []types.QueueAttributeName{"All"}, //nolint:staticcheck // older servers read only this
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	return out.Messages, nil
}

// receiveOne waits up to patience for one message.
func (e *Env) receiveOne(ctx context.Context, url string) (types.Message, error) {
	start := time.Now()
	ms, err := e.receive(ctx, url, 1, patience)
	if err != nil {
		return types.Message{}, err
	}
	if len(ms) != 1 {
		return types.Message{}, fmt.Errorf("receive: got %d messages after waiting %s, want 1", len(ms), since(start))
	}
	return ms[0], nil
}

// expectNone fails when a message can be received from url within a second. Only for a
// message that must never come back (a duplicate, one moved to the DLQ): for one hidden
// until a deadline, use expectHidden.
func (e *Env) expectNone(ctx context.Context, url, why string) error {
	ms, err := e.receive(ctx, url, 10, 1)
	if err != nil {
		return err
	}
	if len(ms) > 0 {
		return fmt.Errorf("%s: received %v", why, bodies(ms))
	}
	return nil
}

// expectHidden checks that what a call sent at sent hid for secs seconds is still hidden: it
// polls url for hiddenPoll seconds at once, and fails when a message comes. The verdict holds
// only for a poll that answered before the timeout could end (the server started it no
// earlier than sent); one that answered later, on a machine too slow for the check, is
// reported as such, with the measured times, rather than blamed on the server.
func (e *Env) expectHidden(ctx context.Context, url string, sent time.Time, secs int, what string) error {
	until := sent.Add(time.Duration(secs) * time.Second)
	start := time.Now()
	if left := until.Sub(start); left < hiddenPoll*time.Second {
		return fmt.Errorf("%s: the check could start only %s after the call, %s before the %d s timeout could end: "+
			"too late to see the message stay hidden (machine too slow for this check, not a server fault)", what, since(sent), left.Round(10*time.Millisecond), secs)
	}
	ms, err := e.receive(ctx, url, 10, hiddenPoll)
	answered := time.Now()
	if err != nil {
		return err
	}
	if len(ms) == 0 {
		return nil
	}
	window := fmt.Sprintf("the poll ran from %s to %s after the call", start.Sub(sent).Round(10*time.Millisecond), since(sent))
	if answered.After(until) {
		return fmt.Errorf("%s: received %v, but %s, past the %d s timeout: machine too slow for this check, not a server fault",
			what, bodies(ms), window, secs)
	}
	return fmt.Errorf("%s: received %v while it had %d s to stay hidden (%s)", what, bodies(ms), secs, window)
}

// since is the time elapsed since t, rounded for a message.
func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

func (e *Env) del(ctx context.Context, url string, m types.Message) error {
	_, err := e.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
	if err != nil {
		return fmt.Errorf("delete %q: %w", aws.ToString(m.Body), err)
	}
	return nil
}

func bodies(ms []types.Message) []string {
	var b []string
	for _, m := range ms {
		b = append(b, aws.ToString(m.Body))
	}
	return b
}

func receiveCount(m types.Message) string {
	return m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// afterVis waits until a message received by a call that returned at t, on a queue with a
// visibility timeout of secs, is visible again (the server started the timeout before t).
func afterVis(ctx context.Context, t time.Time, secs int) error {
	return sleep(ctx, time.Until(t.Add(time.Duration(secs)*time.Second+afterVisMargin)))
}

func checkVisibility(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "vis", map[string]string{"VisibilityTimeout": strconv.Itoa(hideVis)})
	if err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "m", "", ""); err != nil {
		return "", err
	}
	sent := time.Now()
	if _, err := e.receiveOne(ctx, url); err != nil {
		return "", err
	}
	at := time.Now()
	if err := e.expectHidden(ctx, url, sent, hideVis, "within the visibility timeout"); err != nil {
		return "", err
	}
	if err := afterVis(ctx, at, hideVis); err != nil {
		return "", err
	}
	if _, err := e.receiveOne(ctx, url); err != nil {
		return "", fmt.Errorf("after the visibility timeout: %w", err)
	}
	return fmt.Sprintf("hidden for %d s, then visible again", hideVis), nil
}

func checkChangeVisibility(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "chvis", map[string]string{"VisibilityTimeout": strconv.Itoa(vis)})
	if err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "m", "", ""); err != nil {
		return "", err
	}
	m, err := e.receiveOne(ctx, url)
	if err != nil {
		return "", err
	}
	received := time.Now()
	// Extend far past the queue's timeout, then look once that timeout has surely ended:
	// the message must still be hidden. The extension is released right after, so its
	// length only buys slack.
	extended := time.Now()
	if _, err := e.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: extendVis}); err != nil {
		return "", fmt.Errorf("extend: %w", err)
	}
	if err := afterVis(ctx, received, vis); err != nil {
		return "", err
	}
	what := fmt.Sprintf("after extending the timeout to %d s, past the queue's %d s", extendVis, vis)
	if err := e.expectHidden(ctx, url, extended, extendVis, what); err != nil {
		return "", err
	}
	// Release at once (what a batch item failure with no backoff does).
	if _, err := e.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		return "", fmt.Errorf("release: %w", err)
	}
	if _, err := e.receiveOne(ctx, url); err != nil {
		return "", fmt.Errorf("after ChangeMessageVisibility 0: %w", err)
	}
	return fmt.Sprintf("extend to %d s (past the queue's %d s) and release (0) honoured", extendVis, vis), nil
}

func checkRedrive(ctx context.Context, e *Env) (string, error) {
	_, dlqARN, err := e.queue(ctx, "redrive-dlq", nil)
	if err != nil {
		return "", err
	}
	dlqURL, err := e.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(dlqARN[strings.LastIndex(dlqARN, ":")+1:])})
	if err != nil {
		return "", fmt.Errorf("DLQ URL from its ARN's name: %w", err)
	}
	const maxReceive = 2
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqARN, maxReceive)
	url, _, err := e.queue(ctx, "redrive-src", map[string]string{"VisibilityTimeout": strconv.Itoa(vis), "RedrivePolicy": policy})
	if err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "poison", "", ""); err != nil {
		return "", err
	}
	for i := 1; i <= maxReceive; i++ {
		if _, err := e.receiveOne(ctx, url); err != nil {
			return "", fmt.Errorf("receive %d of %d: %w", i, maxReceive, err)
		}
		if err := afterVis(ctx, time.Now(), vis); err != nil {
			return "", err
		}
	}
	if err := e.expectNone(ctx, url, fmt.Sprintf("source queue after %d receives (maxReceiveCount %d)", maxReceive, maxReceive)); err != nil {
		return "", err
	}
	ms, err := e.receive(ctx, aws.ToString(dlqURL.QueueUrl), 10, patience)
	if err != nil {
		return "", err
	}
	if !slices.Equal(bodies(ms), []string{"poison"}) {
		return "", fmt.Errorf("DLQ holds %v, want [poison]", bodies(ms))
	}
	return fmt.Sprintf("in DLQ after %d receives (DLQ count %s)", maxReceive, receiveCount(ms[0])), nil
}

func checkReceiveCount(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "count", nil)
	if err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "m", "", ""); err != nil {
		return "", err
	}
	var got []string
	for range 3 {
		m, err := e.receiveOne(ctx, url)
		if err != nil {
			return "", err
		}
		got = append(got, receiveCount(m))
		if _, err := e.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			return "", err
		}
	}
	if !slices.Equal(got, []string{"1", "2", "3"}) {
		return "", fmt.Errorf("ApproximateReceiveCount over 3 receives %q, want [1 2 3]", got)
	}
	return "1, 2, 3", nil
}

func checkGroupInFlight(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "groups", fifo("VisibilityTimeout", strconv.Itoa(hideVis)))
	if err != nil {
		return "", err
	}
	for _, m := range [][2]string{{"A1", "A"}, {"A2", "A"}, {"B1", "B"}} {
		if err := e.send(ctx, url, m[0], m[1], m[0]); err != nil {
			return "", err
		}
	}
	sent := time.Now()
	a1, err := e.receiveOne(ctx, url)
	if err != nil {
		return "", err
	}
	at := time.Now()
	if got := aws.ToString(a1.Body); got != "A1" {
		return "", fmt.Errorf("first receive %q, want A1", got)
	}
	ms, err := e.receive(ctx, url, 10, patience)
	if err != nil {
		return "", err
	}
	if !slices.Equal(bodies(ms), []string{"B1"}) {
		return "", fmt.Errorf("second ReceiveMessage while A1 is in flight: %v, want [B1] (group A blocked, group B not)", bodies(ms))
	}
	// B1 was hidden after A1, so A1's timeout ends first: sent bounds both.
	if err := e.expectHidden(ctx, url, sent, hideVis, "third ReceiveMessage while A1 and B1 are in flight"); err != nil {
		return "", err
	}
	if err := afterVis(ctx, at, hideVis); err != nil {
		return "", err
	}
	// B1's timeout has ended too by now, or soon: it may come first, alone or with group A.
	// Of group A, A1 must come first, and alone (A2 stays behind it until it is deleted).
	var again []string
	for try := 1; len(again) == 0; try++ {
		if try > 2 { // B1 comes at most once: the receive hides it again
			return "", errors.New("after A1's visibility timeout: B1 twice, want A1 again")
		}
		ms, err := e.receive(ctx, url, 1, patience)
		if err != nil {
			return "", err
		}
		if len(ms) == 0 {
			return "", fmt.Errorf("after A1's visibility timeout: nothing within %d s, want A1 again", patience)
		}
		if b := aws.ToString(ms[0].Body); b == "B1" {
			continue
		}
		again = bodies(ms)
		if !slices.Equal(again, []string{"A1"}) {
			return "", fmt.Errorf("after A1's visibility timeout: %v, want A1 again before A2", again)
		}
		if err := e.del(ctx, url, ms[0]); err != nil {
			return "", err
		}
	}
	next, err := e.receive(ctx, url, 10, patience)
	if err != nil {
		return "", err
	}
	if a := inGroup(bodies(next), "A"); len(a) == 0 || a[0] != "A2" {
		return "", fmt.Errorf("after deleting A1: %v, want A2 first of group A", bodies(next))
	}
	return "A2 held back across calls until A1 deleted; B served", nil
}

// inGroup returns the bodies that start with group, in order.
func inGroup(bodies []string, group string) []string {
	var out []string
	for _, b := range bodies {
		if strings.HasPrefix(b, group) {
			out = append(out, b)
		}
	}
	return out
}

func checkGroupOrder(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "order", fifo("ContentBasedDeduplication", "true"))
	if err != nil {
		return "", err
	}
	var want []string
	for i := range 8 {
		g := []string{"G", "H"}[i%2]
		body := fmt.Sprintf("%s%d", g, i)
		want = append(want, body)
		if err := e.send(ctx, url, body, g, ""); err != nil {
			return "", err
		}
	}
	var got []string
	var lastSeq string
	for range 10 {
		if len(got) == len(want) {
			break
		}
		ms, err := e.receive(ctx, url, 3, patience)
		if err != nil {
			return "", err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			body := aws.ToString(m.Body)
			got = append(got, body)
			// The ESM passes these to the consumer, whose FIFO batching keys on the group.
			group, seq := m.Attributes["MessageGroupId"], m.Attributes["SequenceNumber"]
			if group != body[:1] || seq == "" {
				return "", fmt.Errorf("message %s has MessageGroupId %q, SequenceNumber %q: want %s and a number", body, group, seq, body[:1])
			}
			if strings.HasPrefix(body, "G") {
				if lastSeq != "" && !seqLess(lastSeq, seq) {
					return "", fmt.Errorf("message %s SequenceNumber %s not above the previous G's %s", body, seq, lastSeq)
				}
				lastSeq = seq
			}
			if err := e.del(ctx, url, m); err != nil {
				return "", err
			}
		}
	}
	for _, g := range []string{"G", "H"} {
		if w, o := inGroup(want, g), inGroup(got, g); !slices.Equal(o, w) {
			return "", fmt.Errorf("group %s delivered %v, want %v", g, o, w)
		}
	}
	return "2 groups x 4, in order over batches of 3; group id and rising SequenceNumber", nil
}

func checkDedupID(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "dedup", fifo())
	if err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "first", "g", "d1"); err != nil {
		return "", err
	}
	if err := e.send(ctx, url, "second", "g", "d1"); err != nil {
		return "", fmt.Errorf("duplicate send must be accepted: %w", err)
	}
	m, err := e.receiveOne(ctx, url)
	if err != nil {
		return "", err
	}
	if got := aws.ToString(m.Body); got != "first" {
		return "", fmt.Errorf("received %q, want first", got)
	}
	if err := e.del(ctx, url, m); err != nil {
		return "", err
	}
	// SQS keeps the id for 5 minutes from the first send, deleted or not.
	if err := e.send(ctx, url, "third", "g", "d1"); err != nil {
		return "", fmt.Errorf("duplicate send after delete must be accepted: %w", err)
	}
	if err := e.expectNone(ctx, url, "a resend with the same dedup id after the first was deleted"); err != nil {
		return "", err
	}
	err = e.send(ctx, url, "no-id", "g", "")
	if err == nil {
		return "", errors.New("send without MessageDeduplicationId to a queue without ContentBasedDeduplication was accepted, want an error")
	}
	return "dup dropped, also after delete; no id rejected (5 min expiry not waited for)", nil
}

func checkContentDedup(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "cbd", fifo("ContentBasedDeduplication", "true"))
	if err != nil {
		return "", err
	}
	for _, b := range []string{"same", "same", "other"} {
		if err := e.send(ctx, url, b, "g", ""); err != nil {
			return "", err
		}
	}
	// Wait for the two distinct bodies, then look once more for a second "same".
	var got []string
	for len(got) < 2 {
		ms, err := e.receive(ctx, url, 10, patience)
		if err != nil {
			return "", err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			got = append(got, aws.ToString(m.Body))
			if err := e.del(ctx, url, m); err != nil {
				return "", err
			}
		}
	}
	ms, err := e.receive(ctx, url, 10, 1)
	if err != nil {
		return "", err
	}
	got = append(got, bodies(ms)...)
	if !slices.Equal(got, []string{"same", "other"}) {
		return "", fmt.Errorf("delivered %v, want [same other]", got)
	}
	return "same body sent twice, delivered once", nil
}

func checkBatch(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "batch", fifo())
	if err != nil {
		return "", err
	}
	var entries []types.SendMessageBatchRequestEntry
	for _, id := range []string{"a", "b", "c"} {
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id: aws.String(id), MessageBody: aws.String("body-" + id),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(id),
		})
	}
	out, err := e.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries})
	noSeq := ""
	if err != nil {
		return "", fmt.Errorf("send batch: %w", err)
	}
	if len(out.Successful) != 3 || len(out.Failed) != 0 {
		return "", fmt.Errorf("send batch: %d successful, %d failed, want 3 and 0", len(out.Successful), len(out.Failed))
	}
	for _, s := range out.Successful {
		id := aws.ToString(s.Id)
		sum := md5.Sum([]byte("body-" + id))
		if aws.ToString(s.MessageId) == "" || aws.ToString(s.MD5OfMessageBody) != hex.EncodeToString(sum[:]) {
			return "", fmt.Errorf("send batch entry %q: MessageId %q, MD5 %q: want an id and the MD5 of the body",
				id, aws.ToString(s.MessageId), aws.ToString(s.MD5OfMessageBody))
		}
		// SQS returns a SequenceNumber for each FIFO entry; nothing in the pipeline reads it
		// from the send result (it reads it from received messages), so it is only noted.
		if aws.ToString(s.SequenceNumber) == "" {
			noSeq = "; no SequenceNumber in send results"
		}
	}
	m, err := e.receiveOne(ctx, url)
	if err != nil {
		return "", err
	}
	del, err := e.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("ok"), ReceiptHandle: m.ReceiptHandle},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-receipt-handle")},
	}})
	if err != nil {
		return "", fmt.Errorf("delete batch with one invalid handle: whole call failed (%w), want a Failed entry", err)
	}
	if len(del.Successful) != 1 || aws.ToString(del.Successful[0].Id) != "ok" || len(del.Failed) != 1 {
		return "", fmt.Errorf("delete batch: successful %d, failed %d; want ok and bad", len(del.Successful), len(del.Failed))
	}
	f := del.Failed[0]
	if aws.ToString(f.Id) != "bad" || aws.ToString(f.Code) == "" || !f.SenderFault {
		return "", fmt.Errorf("delete batch failure entry Id %q Code %q SenderFault %v, want bad, a code, true", aws.ToString(f.Id), aws.ToString(f.Code), f.SenderFault)
	}
	return "per-entry ids, MD5; delete failure " + aws.ToString(f.Code) + noSeq, nil
}

// attributeCases are the attributes the stack's templates set, as CloudFormation passes them
// to CreateQueue; mustGet are those whose value the pipeline's behaviour depends on.
func attributeCases(srcARN string) []struct {
	name    string
	attrs   map[string]string
	mustGet []string
} {
	return []struct {
		name    string
		attrs   map[string]string
		mustGet []string
	}{
		{"kms", map[string]string{"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "300"}, nil},
		{"sse", map[string]string{"SqsManagedSseEnabled": "true"}, nil},
		{"retention", map[string]string{"MessageRetentionPeriod": "1209600"}, []string{"MessageRetentionPeriod"}},
		{"allow", map[string]string{"RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":[%q]}`, srcARN)}, []string{"RedriveAllowPolicy"}},
		{"misc", map[string]string{"VisibilityTimeout": "360", "ReceiveMessageWaitTimeSeconds": "20", "DelaySeconds": "0", "MaximumMessageSize": "262144"}, []string{"VisibilityTimeout"}},
		{"fifo", fifo("ContentBasedDeduplication", "true", "DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"), []string{"ContentBasedDeduplication"}},
	}
}

// createWithAttributes creates one queue per attribute case and reports which attributes the
// server rejected, which it accepted but does not read back, and which of those the pipeline
// depends on.
func (e *Env) createWithAttributes(ctx context.Context, prefix string) (rejected, ignored, missing []string, err error) {
	_, srcARN, err := e.queue(ctx, prefix+"-src", nil)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range attributeCases(srcARN) {
		url, _, err := e.queue(ctx, prefix+"-"+c.name, c.attrs)
		if err != nil {
			rejected = append(rejected, strings.Join(sortedKeys(c.attrs), "+"))
			continue
		}
		got, err := e.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("get attributes of %s: %w", c.name, err)
		}
		for _, k := range sortedKeys(c.attrs) {
			if got.Attributes[k] == c.attrs[k] || equalJSONish(got.Attributes[k], c.attrs[k]) {
				continue
			}
			ignored = append(ignored, k)
			if slices.Contains(c.mustGet, k) {
				missing = append(missing, fmt.Sprintf("%s=%q", k, got.Attributes[k]))
			}
		}
	}
	return rejected, ignored, missing, nil
}

// checkAttributes fails when the server rejects an attribute the templates set: the e2e
// creates its queues from the templates' properties.
func checkAttributes(ctx context.Context, e *Env) (string, error) {
	rejected, ignored, _, err := e.createWithAttributes(ctx, "accept")
	if err != nil {
		return "", err
	}
	if len(rejected) > 0 {
		return "", fmt.Errorf("rejected: %s", strings.Join(rejected, ", "))
	}
	if len(ignored) > 0 {
		return "all accepted; not read back: " + strings.Join(ignored, ", "), nil
	}
	return "all accepted and read back", nil
}

// checkAttributesKept fails when an accepted attribute that the pipeline depends on
// (retention, the DLQ's RedriveAllowPolicy, visibility, content-based dedup) does not read
// back as set: a server that drops it cannot enforce it either.
func checkAttributesKept(ctx context.Context, e *Env) (string, error) {
	rejected, _, missing, err := e.createWithAttributes(ctx, "kept")
	if err != nil {
		return "", err
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("read back as %s", strings.Join(missing, ", "))
	}
	if len(rejected) > 0 {
		return "those accepted are kept", nil
	}
	return "retention, RedriveAllowPolicy, visibility, CBD kept", nil
}

// checkRedriveAllowEnforced fails when a source queue may redrive into a DLQ whose
// RedriveAllowPolicy denies it: SQS rejects that RedrivePolicy, so a template whose DLQ names
// the wrong source fails to deploy, and an e2e run should fail the same way.
func checkRedriveAllowEnforced(ctx context.Context, e *Env) (string, error) {
	_, dlqARN, err := e.queue(ctx, "deny-dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	if err != nil {
		return "", err
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlqARN)
	if _, _, err := e.queue(ctx, "deny-src", map[string]string{"RedrivePolicy": policy}); err == nil {
		return "", errors.New("a RedrivePolicy into a DLQ with RedriveAllowPolicy denyAll was accepted, want it rejected")
	}
	return "denyAll DLQ refused as a redrive target", nil
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// equalJSONish compares two policy documents ignoring whitespace.
func equalJSONish(a, b string) bool {
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return a != "" && strip(a) == strip(b)
}

// seqLess compares two SequenceNumbers (decimal strings of up to 128 bits).
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// groupBatch are the messages of one group that the FIFO batch checks send, in order.
var groupBatch = []string{"m1", "m2", "m3"}

func (e *Env) sendGroupBatch(ctx context.Context, url string) error {
	for _, b := range groupBatch {
		if err := e.send(ctx, url, b, "A", b); err != nil {
			return err
		}
	}
	return nil
}

// checkGroupBatch: SQS returns as many messages of one group as it can in one ReceiveMessage,
// in order, up to MaxNumberOfMessages. The ESM receives batches this way, so a consumer sees
// a group's followers in the same batch as its head.
func checkGroupBatch(ctx context.Context, e *Env) (string, error) {
	url, _, err := e.queue(ctx, "onegroup", fifo())
	if err != nil {
		return "", err
	}
	if err := e.sendGroupBatch(ctx, url); err != nil {
		return "", err
	}
	ms, err := e.receive(ctx, url, 10, patience)
	if err != nil {
		return "", err
	}
	if !slices.Equal(bodies(ms), groupBatch) {
		return "", fmt.Errorf("one ReceiveMessage(MaxNumberOfMessages 10) of 3 messages of one group returned %v, want %v", bodies(ms), groupBatch)
	}
	return "one call returns m1, m2, m3 in order", nil
}

// checkGroupBatchRedrive: every ReceiveMessage that returns a message counts as a receive of
// it, batch followers included. A consumer that gives back a whole batch of one group (the
// ESM does for a failed head and everything behind it) therefore sends the followers to the
// DLQ together with the head once they have all been received maxReceiveCount times: on SQS,
// rounds of m1 m2 m3 with counts 1 then 2, nothing on the third receive, all three in the DLQ.
func checkGroupBatchRedrive(ctx context.Context, e *Env) (string, error) {
	dlqURL, dlqARN, err := e.queue(ctx, "grpredrive-dlq", fifo())
	if err != nil {
		return "", err
	}
	const maxReceive = 2
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqARN, maxReceive)
	url, _, err := e.queue(ctx, "grpredrive", fifo("RedrivePolicy", policy))
	if err != nil {
		return "", err
	}
	if err := e.sendGroupBatch(ctx, url); err != nil {
		return "", err
	}
	// Receive without deleting until nothing comes back: two rounds and an empty third on
	// SQS; a server that serves one message of a group a call takes up to six.
	var trace []string
	counts := map[string][]string{}
	lastRound := map[string]int{}
	remaining := slices.Clone(groupBatch) // not yet received maxReceive times, in order
	var problems []string
	for round := 1; round <= len(groupBatch)*maxReceive+1; round++ {
		// While a message is still due, wait for it; once none is, a short look suffices.
		wait := int32(patience)
		if len(remaining) == 0 {
			wait = 2
		}
		ms, err := e.receive(ctx, url, 10, wait)
		if err != nil {
			return "", err
		}
		at := time.Now()
		if len(ms) == 0 {
			trace = append(trace, fmt.Sprintf("r%d -", round))
			break
		}
		var seen []string
		for _, m := range ms {
			b := aws.ToString(m.Body)
			counts[b] = append(counts[b], receiveCount(m))
			lastRound[b] = round
			seen = append(seen, b+":"+receiveCount(m))
		}
		trace = append(trace, fmt.Sprintf("r%d %s", round, strings.Join(seen, " ")))
		if got := bodies(ms); len(got) > len(remaining) || !slices.Equal(got, remaining[:len(got)]) {
			problems = append(problems, fmt.Sprintf("round %d returned %v ahead of %v", round, got, remaining))
		}
		remaining = slices.DeleteFunc(remaining, func(b string) bool { return len(counts[b]) >= maxReceive })
		if err := afterVis(ctx, at, vis); err != nil {
			return "", err
		}
	}
	// A FIFO DLQ may serve its group one message a call: drain it.
	var dlq []string
	for range len(groupBatch) + 1 {
		wait := int32(patience)
		if len(dlq) >= len(groupBatch) {
			wait = 1
		}
		ms, err := e.receive(ctx, dlqURL, 10, wait)
		if err != nil {
			return "", err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			dlq = append(dlq, aws.ToString(m.Body))
			if err := e.del(ctx, dlqURL, m); err != nil {
				return "", err
			}
		}
	}
	summary := fmt.Sprintf("%s; DLQ %v", strings.Join(trace, "; "), dlq)
	for _, b := range groupBatch {
		var want []string
		for i := 1; i <= len(counts[b]); i++ {
			want = append(want, strconv.Itoa(i))
		}
		if !slices.Equal(counts[b], want) {
			problems = append(problems, fmt.Sprintf("%s counted %v over its receives, want %v", b, counts[b], want))
		}
		if len(counts[b]) != maxReceive {
			problems = append(problems, fmt.Sprintf("%s received %d times, want %d", b, len(counts[b]), maxReceive))
		}
	}
	if head := groupBatch[0]; lastRound[groupBatch[1]] != lastRound[head] || lastRound[groupBatch[2]] != lastRound[head] {
		problems = append(problems, fmt.Sprintf("followers not received with %s: not dead-lettered with it", head))
	}
	if got := slices.Sorted(slices.Values(dlq)); !slices.Equal(got, groupBatch) {
		problems = append(problems, fmt.Sprintf("DLQ holds %v, want %v", dlq, groupBatch))
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%s (%s)", strings.Join(problems, "; "), summary)
	}
	return summary, nil
}
