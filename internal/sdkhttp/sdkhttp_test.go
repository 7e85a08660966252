package sdkhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var srv *sqslocal.Server

func TestMain(m *testing.M) { os.Exit(testmain.With(m, sqslocal.Start, &srv)) }

// A receive of 10 messages whose answer (about 5 KiB, more than the transport's 4 KiB read
// buffer) comes while net/http's write loop is descheduled right after it wrote the
// request's body, as on a loaded machine: the SDK's own client loses the answer to "use of
// closed network connection" (the cause, in the package comment), and Wrap's, 200 times
// over on the same schedule, never does.
func TestAnswersSurviveAWriteLoopThatIsLate(t *testing.T) {
	t.Parallel()
	url, _, err := srv.CreateQueue(t.Context(), "late-write-loop", map[string]string{"VisibilityTimeout": "0"})
	if err != nil {
		t.Fatal(err)
	}
	fill := srv.Client()
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(strings.Repeat("x", 300))})
	}
	if out, err := fill.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries}); err != nil || len(out.Failed) > 0 {
		t.Fatalf("fill the queue: %v %v", err, out)
	}

	receive := func(c aws.HTTPClient) (int, error) {
		api := srv.Client(func(o *sqs.Options) { o.HTTPClient = c; o.RetryMaxAttempts = 1 })
		// The queue's visibility timeout is 0: every receive gets the same 10 messages.
		out, err := api.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return 0, err
		}
		return len(out.Messages), nil
	}

	// The SDK's own client, on the late schedule: the harness reaches the race. One lost
	// answer is enough; up to 20 tries leave room for a write loop the machine delayed past
	// the schedule.
	sdk := lateClient()
	tries := 0
	for tries < 20 {
		tries++
		_, err := receive(sdk)
		if errors.Is(err, net.ErrClosed) {
			t.Logf("the SDK's own client, receive %d: %v", tries, err)
			break
		}
		if err != nil {
			t.Fatalf("the SDK's client, receive %d: %v, want nil or use of closed network connection", tries, err)
		}
		if tries == 20 {
			t.Fatalf("the SDK's own client lost no answer in 20 receives on the late schedule: the harness no longer reaches the race, " +
				"or the SDK no longer closes a body its transport still reads (then sdkhttp may go)")
		}
	}

	fixed := sdkhttp.Wrap(lateClient())
	start := time.Now()
	for i := range 200 {
		n, err := receive(fixed)
		if err != nil {
			t.Fatalf("sdkhttp.Wrap, receive %d of 200: %v", i+1, err)
		}
		if n != 10 {
			t.Fatalf("sdkhttp.Wrap, receive %d of 200: %d messages, want 10", i+1, n)
		}
	}
	t.Logf("sdkhttp.Wrap: 200 of 200 receives whole on the late schedule (%s)", time.Since(start).Round(time.Millisecond))
}

// lateClient is the SDK's default client over connections whose writer is descheduled for
// a while after each request body, until the answer has begun, and whose reader takes the
// rest of an answer only after that writer ran again.
func lateClient() aws.HTTPClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		var d net.Dialer
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &lateConn{Conn: c, answered: make(chan struct{}, 1), closed: make(chan struct{})}, nil
		}
	}).Freeze()
}

// How long the write loop stays away once the answer has begun (the SDK closes the body in
// that time: microseconds after the headers are read), and how long at most a read of the
// answer's rest waits after the writer is back for the connection to be closed (the write
// loop's last step takes microseconds; a close ends the wait at once).
const lateWriter, lateReader = 20 * time.Millisecond, 15 * time.Millisecond

type lateConn struct {
	net.Conn
	answered chan struct{} // a read of this request's answer returned bytes
	closed   chan struct{} // closed by Close
	once     sync.Once
	mu       sync.Mutex
	back     chan struct{} // closed when the writer of the request in flight is back
	reads    int           // reads of that answer that returned bytes
}

func (c *lateConn) Write(p []byte) (int, error) {
	body := !bytes.HasSuffix(p, []byte("\r\n\r\n")) // the headers go out first, on their own
	if body {
		select {
		case <-c.answered: // a stale signal of the previous answer
		default:
		}
		c.mu.Lock()
		c.back, c.reads = make(chan struct{}), 0
		c.mu.Unlock()
	}
	n, err := c.Conn.Write(p)
	if body {
		select {
		case <-c.answered:
		case <-time.After(10 * time.Second):
		}
		time.Sleep(lateWriter)
		c.mu.Lock()
		close(c.back)
		c.mu.Unlock()
	}
	return n, err
}

func (c *lateConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *lateConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	back, later := c.back, c.reads > 0
	c.mu.Unlock()
	if later && back != nil {
		<-back
		select {
		case <-c.closed:
		case <-time.After(lateReader):
		}
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return n, err
}
