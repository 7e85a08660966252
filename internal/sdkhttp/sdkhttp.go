// Package sdkhttp is the HTTP client every AWS SDK client in this repository sends through:
// the SDK's own, less one race that cuts off answers.
//
// The race, in aws-sdk-go-v2 (smithy-go's ClientHandler) and net/http together: the SDK
// closes a request's body as soon as the response's headers are in, while net/http's write
// loop may still be finishing that body. A body the transport does not know to be in memory
// has its headers flushed first and is then written straight to the socket, so the server
// can answer before the write loop's last step, a read for bytes past Content-Length. The
// SDK's body, once closed, answers that read through WriteTo with io.EOF as an error
// (WriteTo is meant to return nil at the end), the transport takes it for a failed write and
// closes the connection, and the answer whose headers already came is cut off: the next
// read of its body fails with "read tcp ...: use of closed network connection". The call
// took effect (a ReceiveMessage handed out its messages), and its answer is lost. It needs
// the write loop to be descheduled for that moment, so it shows on a loaded machine, and on
// answers longer than the transport's 4 KiB read buffer (a receive of 10 messages).
//
// Wrap's client hands the transport the request's body without its WriteTo: the last read
// then ends the copy at EOF (nil), as it does for any reader, and the connection stays whole.
package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Wrap returns c (the SDK's default client when c is nil: awshttp.NewBuildableClient,
// frozen) sending each request with its body read only through Read. A client the service
// clients do not see as the SDK's buildable one gets none of their per-service settings: the
// defaults mode's timeouts (the default mode, legacy, sets none) and the read timeout that
// AWS_ENABLE_DEFAULT_SOCKET_TIMEOUT_2026=true would turn on.
func Wrap(c aws.HTTPClient) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient().Freeze()
	}
	return client{c}
}

type client struct{ next aws.HTTPClient }

// Do sends a shallow copy of req whose body hides any WriteTo (req itself is not changed:
// the SDK closes its own body after Do returns).
func (c client) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	r := *req
	r.Body = readOnly{req.Body}
	return c.next.Do(&r)
}

// readOnly is a request body with only Read and Close.
type readOnly struct{ io.ReadCloser }
