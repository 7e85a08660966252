package dlq

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// A receive refused at the connection never reached the queue: it took no message, so it is
// not one that may hide a batch (a network cut overstated them), and it is tried again. One
// whose answer was lost after it was sent may have: it is.
func TestRefusedCallIsNotUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: a dial is refused
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close() // the request arrived; its answer is lost
	}))
	defer hangUp.Close()
	for _, tc := range []struct {
		endpoint           string
		unknown, retryable bool
	}{
		{refused, false, true},
		{hangUp.URL, true, false},
	} {
		api := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(tc.endpoint), RetryMaxAttempts: 1,
			Credentials: aws.AnonymousCredentials{}})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(tc.endpoint + "/1/q")})
		cancel()
		if err == nil {
			t.Fatalf("%s: the receive succeeded", tc.endpoint)
		}
		if got := outcomeUnknown(err); got != tc.unknown {
			t.Errorf("%s: outcomeUnknown(%v) = %v, want %v", tc.endpoint, err, got, tc.unknown)
		}
		if got := retryable(err); got != tc.retryable {
			t.Errorf("%s: retryable(%v) = %v, want %v (an unknown outcome is tried again as such)", tc.endpoint, err, got, tc.retryable)
		}
	}
}
