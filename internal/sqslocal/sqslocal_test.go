package sqslocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var srv *Server

// TestMain also checks Stop: after the tests, the server's process group must be gone.
func TestMain(m *testing.M) {
	code := testmain.With(m, Start, &srv)
	if srv != nil {
		if err := syscall.Kill(-srv.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			fmt.Fprintf(os.Stderr, "FAIL: process group %d still exists after Stop (kill 0: %v)\n", srv.PID(), err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestCreateQueueURLAndARN(t *testing.T) {
	ctx := t.Context()
	url, arn, err := srv.CreateQueue(ctx, "orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every kind puts the account and the name at the end of the URL; the ESM stand-in uses
	// the URL as given, so only the server's own endpoint may be in it for ElasticMQ.
	if !strings.HasSuffix(url, "/orders") {
		t.Errorf("queue URL %q does not end in /orders", url)
	}
	if srv.Kind() == ElasticMQ && url != srv.Endpoint()+"/"+AccountID+"/orders" {
		t.Errorf("queue URL %q, want %s/%s/orders", url, srv.Endpoint(), AccountID)
	}
	if !regexp.MustCompile(`^arn:aws:sqs:us-east-1:\d{12}:orders$`).MatchString(arn) {
		t.Errorf("queue ARN %q, want arn:aws:sqs:us-east-1:<account>:orders", arn)
	}
	got, err := srv.Client().GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.QueueUrl) != url {
		t.Errorf("GetQueueUrl %q, CreateQueue %q", aws.ToString(got.QueueUrl), url)
	}
}

func TestCreateQueueTwiceWithOtherAttributesFails(t *testing.T) {
	ctx := t.Context()
	// A name of its own per run: with -count=N the queue of an earlier run is still there.
	name := fmt.Sprintf("twice-%d", time.Now().UnixNano())
	if _, _, err := srv.CreateQueue(ctx, name, map[string]string{"VisibilityTimeout": "30"}); err != nil {
		t.Fatal(err)
	}
	_, _, err := srv.CreateQueue(ctx, name, map[string]string{"VisibilityTimeout": "60"})
	if err == nil || !strings.Contains(err.Error(), "create queue "+name) {
		t.Fatalf("second CreateQueue: %v, want an error naming the queue", err)
	}
}

func TestMissingInstallNamesTheFix(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		env  string
	}{{ElasticMQ, EnvElasticMQDir}, {Moto, EnvMotoVenv}, {Fauxqs, EnvFauxqsDir}} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Setenv(tc.env, t.TempDir())
			_, err := StartKind(t.Context(), tc.kind)
			if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), tc.env) {
				t.Fatalf("StartKind with an empty %s: %v, want an error naming %s and `make tools`", tc.env, err, tc.env)
			}
		})
	}
}

func TestStartGivesUpWithTheContext(t *testing.T) {
	// A context that has already ended: the server starts, and is stopped after the first
	// probe; the error says how long Start waited.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := StartKind(ctx, srv.Kind())
	want := regexp.MustCompile(`^sqslocal: ` + string(srv.Kind()) + ` did not answer ListQueues at http://127\.0\.0\.1:\d+ within \d+(\.\d+)?m?s: context canceled \(last error: `)
	if err == nil || !want.MatchString(err.Error()) {
		t.Fatalf("StartKind with an ended context: %v, want %s", err, want)
	}
}

func TestKindFromEnv(t *testing.T) {
	t.Setenv(EnvKind, "")
	if k, err := KindFromEnv(); err != nil || k != Default {
		t.Errorf("unset: %q, %v; want %q", k, err, Default)
	}
	t.Setenv(EnvKind, "moto")
	if k, err := KindFromEnv(); err != nil || k != Moto {
		t.Errorf("moto: %q, %v", k, err)
	}
	t.Setenv(EnvKind, "localstack")
	if _, err := KindFromEnv(); err == nil || !strings.Contains(err.Error(), "localstack") {
		t.Errorf("localstack: %v, want an error naming it", err)
	}
}
