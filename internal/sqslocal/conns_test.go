package sqslocal

import (
	"context"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/conntest"
)

// Clients made one per call share the server's connections: a client made without an HTTP
// client would open one of its own and leave it open, idle, for a minute.
func TestClientsShareConnections(t *testing.T) {
	conntest.Shared(t, func(wrap func(conntest.Doer) conntest.Doer) error {
		_, err := srv.Client(func(o *sqs.Options) { o.HTTPClient = wrap(o.HTTPClient) }).ListQueues(t.Context(), &sqs.ListQueuesInput{})
		return err
	})
}

// With more connections open than Pekko HTTP's default cap (1,024), ElasticMQ still answers
// a new one at once. At the default cap it accepts no more until an open one reaches its 60 s
// idle timeout: a call waits in the kernel's queue for seconds (13.8 s measured in
// cmd/pipelinectl's tests, over 20 s in CI), which is what an SDK client made per call does to
// it within a minute.
func TestManyConnections(t *testing.T) {
	const open = 1100
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < open+200 {
		t.Fatalf("this test holds %d connections open: its open-file limit is %d (raise it: ulimit -n 4096)", open, lim.Cur)
	}
	addr := strings.TrimPrefix(srv.Endpoint(), "http://")
	for i := range open {
		c, err := net.DialTimeout("tcp", addr, 30*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d: %v (at Pekko HTTP's max-connections the server accepts no more)", i+1, open, err)
		}
		defer c.Close()
	}
	// A new connection: the transport of a client of its own, as a caller's new SDK client.
	c := srv.Client(func(o *sqs.Options) {
		o.HTTPClient, o.RetryMaxAttempts = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, 1
	})
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	took := time.Since(start)
	t.Logf("ListQueues on a new connection with %d others open: answered in %s (%v)", open, took.Round(time.Millisecond), err)
	if err != nil {
		t.Fatalf("with %d connections open, a new one got no answer: %v (Pekko HTTP's max-connections caps them)", open, err)
	}
}
