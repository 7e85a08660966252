package cli

import (
	"context"
	"errors"
	"fmt"
	netpkg "net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Each kind of failed call gets its cause in words, naming the endpoint that did not
// answer or what the service refused, with the fix where there is one.
func TestInWords(t *testing.T) {
	api := func(code string, status int) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "the service's words"}}}
	}
	net := func(cause error) error {
		return &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage",
			Err: &url.Error{Op: "Post", URL: "https://sqs.eu-west-1.amazonaws.com/", Err: cause}}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{api("com.amazonaws.sqs#QueueDoesNotExist", 400), "the queue does not exist (QueueDoesNotExist): was it deleted, or the stack deployed again under new names?"},
		{api("ThrottlingException", 400), "throttled (ThrottlingException): the service is busy or the account's limit is reached; slow down with --rate"},
		{api("RequestThrottled", 429), "throttled (RequestThrottled)"},
		{api("AccessDenied", 403), "access denied (AccessDenied): the credentials may not make this call; 'pipelinectl policy --access operate' prints what they need"},
		// AWS's message names the action and the resource: the operator sees what the policy lacks.
		{&smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 403}},
			Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "User: arn:aws:sts::123456789012:assumed-role/ops/alice is not authorized to perform: " +
				"sqs:sendmessage on resource: arn:aws:sqs:eu-west-1:123456789012:orders because no identity-based policy allows the sqs:sendmessage action"}}},
			"access denied (AccessDenied): the credentials may not make this call (sqs:sendmessage on arn:aws:sqs:eu-west-1:123456789012:orders); 'pipelinectl policy --access operate' prints what they need"},
		{api("ServiceUnavailable", 503), "the service failed (HTTP 503, ServiceUnavailable): a fault on its side; a later run retries"},
		{api("InvalidParameterValue", 400), "refused (InvalidParameterValue): the service's words"},
		{net(errors.New("dial tcp 10.0.0.1:443: connect: connection refused")), "no answer from https://sqs.eu-west-1.amazonaws.com (connection refused): is the endpoint up, and the URL right?"},
		{net(context.DeadlineExceeded), "no answer from https://sqs.eu-west-1.amazonaws.com in time (timed out): the network, or the endpoint is overloaded"},
		{net(errors.New("read tcp: connection reset by peer")), "no answer from https://sqs.eu-west-1.amazonaws.com (the connection was cut): the network"},
		{net(errors.New("dial tcp: lookup sqs.eu-west-1.amazonaws.com: no such host")), "no answer from https://sqs.eu-west-1.amazonaws.com (host not found): DNS, or a wrong endpoint URL"},
		{net(errors.New("dial tcp: connect: network is unreachable")), "no answer from https://sqs.eu-west-1.amazonaws.com (the network is unreachable)"},
		{net(errors.New("tls: handshake failure")), "no answer from https://sqs.eu-west-1.amazonaws.com (tls: handshake failure)"},
		{errors.New("journal full"), "journal full"},
		{&smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 502, Request: &http.Request{URL: &url.URL{Scheme: "https", Host: "proxy.example.com"}}}},
			Err:      &smithy.DeserializationError{Err: errors.New("invalid character '<' looking for beginning of value")}}},
			"https://proxy.example.com answered HTTP 502, but not as the service does: a proxy or load balancer in the way, or a wrong endpoint URL"},
		// HTTP 200, then the body broke off: the connection, not another service.
		{&smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 200, Request: &http.Request{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:19324"}}}},
			Err:      &smithy.DeserializationError{Err: &netpkg.OpError{Op: "read", Net: "tcp", Err: netpkg.ErrClosed}}}},
			"the answer from http://127.0.0.1:19324 was cut off while it came (HTTP 200, then read: use of closed network connection): the connection closed mid-answer"},
		{fmt.Errorf("%w: %w", errors.New("move task unsupported"), net(errors.New("tls: handshake failure"))),
			"no answer from https://sqs.eu-west-1.amazonaws.com (tls: handshake failure)"},
	} {
		got := InWords(c.err)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("inWords(%v)\n = %q\nwant %q", c.err, got, c.want)
		}
		if strings.Contains(got, "operation error") {
			t.Errorf("inWords(%v) = %q: the SDK's chain", c.err, got)
		}
	}
}

// A failed AWS call that reaches the command line prints what the CLI was doing, the call,
// and the cause in words, without the SDK's chain of attempts and request ids.
func TestExplainPutsTheCallInWords(t *testing.T) {
	denied := &smithy.OperationError{ServiceID: "SQS", OperationName: "GetQueueAttributes", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 403}},
		Err:      &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized"}}}
	got := Explain(fmt.Errorf("queue https://sqs.eu-west-1.amazonaws.com/1/dlq: %w", denied)).Error()
	want := "queue https://sqs.eu-west-1.amazonaws.com/1/dlq: SQS GetQueueAttributes: access denied (AccessDenied): the credentials may not make this call; " +
		"'pipelinectl policy --access operate' prints what they need"
	if got != want {
		t.Errorf("explain =\n%q\nwant\n%q", got, want)
	}
	// An answer whose body broke off: the connection, not an endpoint of another service.
	cut := &smithy.OperationError{ServiceID: "SQS", OperationName: "ReceiveMessage", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 200, Request: &http.Request{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:19324"}}}},
		Err:      &smithy.DeserializationError{Err: &netpkg.OpError{Op: "read", Net: "tcp", Err: netpkg.ErrClosed}}}}
	got = Explain(fmt.Errorf("receive from http://127.0.0.1:19324/1/dlq: %w", cut)).Error()
	want = "receive from http://127.0.0.1:19324/1/dlq: SQS ReceiveMessage: the answer from http://127.0.0.1:19324 was cut off while it came (HTTP 200, then read: use of closed network connection): " +
		"the connection closed mid-answer (the network, or a proxy on the way); the call may have taken effect"
	if got != want {
		t.Errorf("explain =\n%q\nwant\n%q", got, want)
	}
}
