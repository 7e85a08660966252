package sqsfidelity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// fakeReceive is an SQS endpoint whose every ReceiveMessage answers, after delay, with the
// message "m" (or nothing when empty): a server that shows a message it should hide, fast
// or slowly.
func fakeReceive(t *testing.T, delay time.Duration, empty bool) *Env {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if empty {
			_, _ = w.Write([]byte(`{}`))
			return
		}
		// MD5OfBody is md5("m"): the SDK checks it.
		_, _ = w.Write([]byte(`{"Messages":[{"MessageId":"1","ReceiptHandle":"r","Body":"m","MD5OfBody":"6f8f57715090da2632453988d9a1501b"}]}`))
	}))
	t.Cleanup(ts.Close)
	return &Env{client: sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(ts.URL), RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}, nil
		}),
	})}
}

// expectHidden blames the server only for what it showed before the timeout could end, and
// says what it measured either way.
func TestExpectHiddenVerdicts(t *testing.T) {
	const url = "http://queue/000000000000/q"
	t.Run("hidden", func(t *testing.T) {
		e := fakeReceive(t, 0, true)
		if err := e.expectHidden(t.Context(), url, time.Now(), 30, "check"); err != nil {
			t.Fatalf("nothing received: %v, want nil", err)
		}
	})
	t.Run("shown early", func(t *testing.T) {
		e := fakeReceive(t, 0, false)
		err := e.expectHidden(t.Context(), url, time.Now(), 30, "check")
		if err == nil || !strings.Contains(err.Error(), "check: received [m] while it had 30 s to stay hidden (the poll ran from ") ||
			strings.Contains(err.Error(), "too slow") {
			t.Fatalf("err = %v, want the server blamed, with the poll's times", err)
		}
	})
	t.Run("poll answered after the timeout could end", func(t *testing.T) {
		// 3 s of the 10 s timeout are left when the poll starts (2 s more than it needs, for a
		// loaded machine); it answers 4 s later, when the message may be visible.
		e := fakeReceive(t, 4*time.Second, false)
		err := e.expectHidden(t.Context(), url, time.Now().Add(-7*time.Second), 10, "check")
		if err == nil || !strings.Contains(err.Error(), "check: received [m], but the poll ran from ") ||
			!strings.Contains(err.Error(), "past the 10 s timeout: machine too slow for this check, not a server fault") {
			t.Fatalf("err = %v, want the late poll reported as such", err)
		}
	})
	t.Run("too late to start", func(t *testing.T) {
		e := fakeReceive(t, 0, false)
		err := e.expectHidden(t.Context(), url, time.Now().Add(-4500*time.Millisecond), 5, "check")
		late := regexp.MustCompile(`^check: the check could start only \d+(\.\d+)?s after the call, -?\d+(\.\d+)?m?s before the 5 s timeout could end: too late to see the message stay hidden`)
		if err == nil || !late.MatchString(err.Error()) {
			t.Fatalf("err = %v, want the late start reported, with the measured delay", err)
		}
	})
}

func TestReceiveOneSaysHowLongItWaited(t *testing.T) {
	e := fakeReceive(t, 0, true)
	_, err := e.receiveOne(t.Context(), "http://queue/000000000000/q")
	if err == nil || !regexp.MustCompile(`^receive: got 0 messages after waiting \d+(\.\d+)?m?s, want 1$`).MatchString(err.Error()) {
		t.Fatalf("err = %v, want the count and the measured wait", err)
	}
}
