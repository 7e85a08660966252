package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/aws/smithy-go"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// deniedAction reads the action and resource from AWS's AccessDenied message ("User: ... is
// not authorized to perform: sqs:SendMessage on resource: arn:... because ..."): what the
// operator's policy lacks.
var deniedAction = regexp.MustCompile(`not authorized to perform: ([A-Za-z0-9-]+:[A-Za-z0-9*]+) on resource: (\S+)`)

// InWords is a failed AWS call's cause in words, without the SDK's chain: who did not
// answer, or what the service refused and why. It names the endpoint where the call got no
// answer, since that is what an operator checks first.
func InWords(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := ae.ErrorCode()
		code = code[strings.LastIndex(code, "#")+1:]
		status := 0
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		}
		switch {
		case strings.Contains(code, "Throttl") || status == 429:
			return fmt.Sprintf("throttled (%s): the service is busy or the account's limit is reached; slow down with --rate", code)
		case strings.Contains(code, "AccessDenied") || strings.Contains(code, "NotAuthorized") || strings.Contains(code, "Unauthorized"):
			what := ""
			if m := deniedAction.FindStringSubmatch(ae.ErrorMessage()); m != nil {
				what = fmt.Sprintf(" (%s on %s)", m[1], strings.TrimRight(m[2], ".,;"))
			}
			return fmt.Sprintf("access denied (%s): the credentials may not make this call%s; 'pipelinectl policy --access operate' prints what they need", code, what)
		case strings.HasSuffix(code, "QueueDoesNotExist") || strings.HasSuffix(code, "NonExistentQueue"):
			return fmt.Sprintf("the queue does not exist (%s): was it deleted, or the stack deployed again under new names?", code)
		case status >= 500:
			return fmt.Sprintf("the service failed (HTTP %d, %s): a fault on its side; a later run retries", status, code)
		}
		msg := ae.ErrorMessage()
		if msg == "" {
			return fmt.Sprintf("refused (%s)", code)
		}
		return fmt.Sprintf("refused (%s): %s", code, msg)
	}
	where := "the endpoint"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			where = u.Scheme + "://" + u.Host
		}
	}
	// An HTTP answer that is not the service's (an HTML page from a proxy or load
	// balancer, a truncated body): the endpoint answered, not as the service does.
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 {
		if u := re.Response.Request; u != nil && u.URL != nil && u.URL.Host != "" {
			where = u.URL.Scheme + "://" + u.URL.Host
		}
		// The answer began as the service's and its body broke off: not a wrong endpoint.
		if cause := cutOff(err); cause != "" {
			return fmt.Sprintf("the answer from %s was cut off while it came (HTTP %d, then %s): the connection closed mid-answer "+
				"(the network, or a proxy on the way); the call may have taken effect", where, re.HTTPStatusCode(), cause)
		}
		return fmt.Sprintf("%s answered HTTP %d, but not as the service does: a proxy or load balancer in the way, or a wrong endpoint URL", where, re.HTTPStatusCode())
	}
	msg := err.Error()
	noAnswer := ue != nil || strings.Contains(msg, "request send failed") || strings.Contains(msg, "StatusCode: 0")
	switch {
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "i/o timeout") || strings.Contains(msg, "Client.Timeout") ||
		strings.Contains(msg, "deadline exceeded"):
		return "no answer from " + where + " in time (timed out): the network, or the endpoint is overloaded"
	case strings.Contains(msg, "connection refused"):
		return "no answer from " + where + " (connection refused): is the endpoint up, and the URL right?"
	case strings.Contains(msg, "no such host"):
		return "no answer from " + where + " (host not found): DNS, or a wrong endpoint URL"
	case strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF") || strings.Contains(msg, "broken pipe"):
		return "no answer from " + where + " (the connection was cut): the network"
	case strings.Contains(msg, "network is unreachable") || strings.Contains(msg, "no route to host"):
		return "no answer from " + where + " (the network is unreachable)"
	}
	last := innermost(err)
	if ue != nil {
		last = innermost(ue.Err)
	}
	if !noAnswer {
		return last.Error()
	}
	return "no answer from " + where + " (" + last.Error() + ")"
}

// cutOff is how an answer's body broke off ("" when it did not): a read of the connection
// that failed, or ended early.
func cutOff(err error) string {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "read":
		return "read: " + op.Err.Error()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, net.ErrClosed):
		return "use of closed network connection"
	}
	return ""
}

// innermost is the cause at the bottom of err's chain; of an error that wraps several, the
// last one's.
func innermost(err error) error {
	for {
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if u.Unwrap() == nil {
				return err
			}
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			errs := u.Unwrap()
			if len(errs) == 0 {
				return err
			}
			err = errs[len(errs)-1]
		default:
			return err
		}
	}
}

// ErrorCode is an AWS error's code, or the error's text.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}

// Explain adds to an AWS error what to check: credentials, the endpoint, the service
// behind it.
func Explain(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get credentials") || strings.Contains(msg, "no EC2 IMDS role"):
		return withCause(err, noCredentials(msg))
	case strings.Contains(msg, "\ncannot reach the "): // explained already, by a callee
		return err
	case strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") || strings.Contains(msg, "i/o timeout"):
		var op *smithy.OperationError
		if !errors.As(err, &op) {
			return fmt.Errorf("%w\ncannot reach the endpoint: check --endpoint-url or the AWS_ENDPOINT_URL_<SERVICE> variables "+
				"(unset for AWS itself) and --region, and that the server is up", err)
		}
		// The variable the SDK reads for this service: its service id, upper case, spaces as _.
		v := "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(op.Service(), " ", "_"))
		return fmt.Errorf("%s\ncannot reach the %s endpoint: check %s (or --endpoint-url, or AWS_ENDPOINT_URL; unset them for AWS itself) "+
			"and --region, and that the server is up", inWordsWhole(err, op), op.Service(), v)
	case cutOff(err) != "": // an answer broken off is the connection's, not another service's
		var op *smithy.OperationError
		if errors.As(err, &op) {
			return errors.New(inWordsWhole(err, op))
		}
		return err
	case strings.Contains(msg, "DynamoDB") && (strings.Contains(msg, "invalid character") || strings.Contains(msg, "deserialization failed")):
		return withCause(err, "the DynamoDB endpoint answered as another service (its reply is not DynamoDB's): "+
			"does AWS_ENDPOINT_URL_DYNAMODB (or --endpoint-url) point at another service, such as the SQS server?")
	case strings.Contains(msg, "SQS") && (strings.Contains(msg, "invalid character") || strings.Contains(msg, "deserialization failed")):
		return withCause(err, "the SQS endpoint answered as another service (its reply is not SQS's): "+
			"does AWS_ENDPOINT_URL_SQS (or --endpoint-url) point at another service?")
	}
	// Any other failed AWS call: what the CLI was doing, the call, and its cause in words
	// (throttled, access denied with the command that prints the policy, refused with the
	// service's reason), not the SDK's chain of attempts and request ids.
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return errors.New(inWordsWhole(err, op))
	}
	return err
}

// withCause is err's message with the SDK's chain of its failed call (operation error ...)
// replaced by the call and cause; an error of no call gets the cause on a line of its own.
func withCause(err error, cause string) error {
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return errors.New(strings.Replace(err.Error(), op.Error(), op.Service()+" "+op.Operation()+": "+cause, 1))
	}
	return fmt.Errorf("%w\n%s", err, cause)
}

// noCredentials says where the SDK looked for credentials and found none, and what to set.
func noCredentials(msg string) string {
	files := "the shared config and credentials files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, else ~/.aws)"
	if p := os.Getenv("AWS_PROFILE"); p != "" {
		files += " for profile " + p
	}
	imds := "the EC2 instance metadata service, which gave none (no instance role)"
	switch {
	case strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true"):
		imds = "not the EC2 instance metadata service (AWS_EC2_METADATA_DISABLED=true)"
	case strings.Contains(msg, "StatusCode: 403"):
		imds = "the EC2 instance metadata service, which refused (HTTP 403: no instance role, or IMDS closed to this process)"
	}
	return "no AWS credentials: looked in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), " + files + ", and " + imds +
		"; set AWS_PROFILE (after 'aws sso login' for SSO), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; against ElasticMQ or DynamoDB Local any static pair works"
}

// inWordsWhole is err's message with the SDK's chain of op (operation error ..., exceeded
// maximum number of attempts, https response error ...) replaced by the call and its cause
// in words: what the CLI was doing stays, the transport's internals go.
func inWordsWhole(err error, op *smithy.OperationError) string {
	return strings.Replace(err.Error(), op.Error(), op.Service()+" "+op.Operation()+": "+InWords(op), 1)
}
