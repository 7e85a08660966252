package cli

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
)

// An unreachable endpoint is explained with the variable of the service that could not be
// reached, once, however deep the error is wrapped.
func TestExplainNamesTheServicesVariable(t *testing.T) {
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for service, want := range map[string]string{"CloudWatch": "AWS_ENDPOINT_URL_CLOUDWATCH", "Scheduler": "AWS_ENDPOINT_URL_SCHEDULER",
		"Lambda": "AWS_ENDPOINT_URL_LAMBDA", "DynamoDB": "AWS_ENDPOINT_URL_DYNAMODB"} {
		err := Explain(fmt.Errorf("the alarms: %w", &smithy.OperationError{ServiceID: service, OperationName: "Op", Err: refused}))
		msg := err.Error()
		if !strings.Contains(msg, "cannot reach the "+service+" endpoint: check "+want+" (") {
			t.Errorf("%s: %s", service, msg)
		}
		if again := Explain(fmt.Errorf("status: %w", err)).Error(); strings.Count(again, "cannot reach") != 1 {
			t.Errorf("%s explained twice: %s", service, again)
		}
	}
}

// The REST calls (Lambda Invoke, Scheduler, CloudWatch) work on a machine without
// AWS_CA_BUNDLE, where the SDK's configuration has no HTTP client of its own: they used to
// dereference that nil client (found by the deploy rehearsal, which runs with no AWS_*
// variable of the caller's).
func TestRESTCallWithoutCABundle(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"answer":"from `+r.URL.Path+`"}`)
	}))
	defer srv.Close()
	cl, err := NewAWS(t.Context(), &Common{endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := cl.REST.Call(t.Context(), "lambda", "Invoke", http.MethodPost, "/2015-03-31/functions/f/invocations", nil, []byte("{}"))
	if err != nil || string(body) != `{"answer":"from /2015-03-31/functions/f/invocations"}` {
		t.Fatalf("%q, %v", body, err)
	}
}
