package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
)

// RESTClient makes the few signed REST calls pipelinectl needs of services it has no SDK
// client for, so that it adds no module: Lambda's Invoke, Scheduler's GetSchedule and
// CloudWatch's DescribeAlarms.
type RESTClient struct {
	Cfg      aws.Config
	Endpoint string // --endpoint-url, for every service
}

// endpointFor is a service's endpoint: --endpoint-url, AWS_ENDPOINT_URL_<SERVICE>,
// AWS_ENDPOINT_URL, else the service's regional endpoint.
func (r *RESTClient) endpointFor(service string) string {
	id := strings.ToUpper(serviceID(service))
	for _, e := range []string{r.Endpoint, os.Getenv("AWS_ENDPOINT_URL_" + id), os.Getenv("AWS_ENDPOINT_URL")} {
		if e != "" {
			return strings.TrimSuffix(e, "/")
		}
	}
	domain := "amazonaws.com"
	if strings.HasPrefix(r.Cfg.Region, "cn-") {
		domain = "amazonaws.com.cn"
	}
	return fmt.Sprintf("https://%s.%s.%s", service, r.Cfg.Region, domain)
}

// serviceID is the SDKs' service id of a signing name: CloudWatch's is "monitoring".
func serviceID(signingName string) string {
	switch signingName {
	case "monitoring":
		return "CloudWatch"
	case "lambda":
		return "Lambda"
	case "scheduler":
		return "Scheduler"
	}
	return signingName
}

// apiError is a non-2xx answer of a REST call.
type apiError struct {
	Service, Op string
	Status      int
	Type, Msg   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Service, e.Op, e.Status, e.Type, e.Msg)
}

// Call signs and sends one request and returns the response's headers and body; a non-2xx
// answer is an *apiError.
func (r *RESTClient) Call(ctx context.Context, service, op, method, path string, header http.Header, body []byte) (http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, r.endpointFor(service)+path, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	creds, err := r.Cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: get credentials: %w", service, op, err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, r.Cfg.Region, time.Now()); err != nil {
		return nil, nil, err
	}
	resp, err := r.Cfg.HTTPClient.Do(req)
	if err != nil { // as the SDK says it, so that Explain names the service's endpoint variable
		return nil, nil, &smithy.OperationError{ServiceID: serviceID(service), OperationName: op, Err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read the answer: %w", service, op, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Type    string `json:"__type"`
			Message string // "Message" or "message": JSON field names match either case
		}
		if json.Unmarshal(out, &e) != nil {
			// The query APIs (CloudWatch) answer errors in XML.
			var x struct {
				Code    string `xml:"Error>Code"`
				Message string `xml:"Error>Message"`
			}
			if xml.Unmarshal(out, &x) == nil {
				e.Type, e.Message = x.Code, x.Message
			}
		}
		typ, _, _ := strings.Cut(cmp.Or(resp.Header.Get("X-Amzn-ErrorType"), e.Type), ":")
		return nil, nil, &apiError{Service: service, Op: op, Status: resp.StatusCode, Type: typ, Msg: cmp.Or(e.Message, strings.TrimSpace(string(out)))}
	}
	return resp.Header, out, nil
}
