package local

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// The functions' proxy refuses at once every call that would leave this machine, HTTP or
// HTTPS, naming the host, the AWS service and the fix in the error the client gets and to
// the kit, with the caller its URL names; a call to this machine passes, tunnelled or not.
func TestEgressRefusesWhatLeavesTheMachine(t *testing.T) {
	var mu sync.Mutex
	got := map[string]refusal{}
	e, err := listenEgress(func(caller string, r refusal) {
		mu.Lock()
		defer mu.Unlock()
		got[caller+" "+r.Host] = r
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	vars := e.environ("Dev/Orders|Consumer1234")
	if vars["NO_PROXY"] != "localhost,127.0.0.1,::1" || vars["https_proxy"] != vars["HTTPS_PROXY"] || vars["http_proxy"] != vars["HTTP_PROXY"] {
		t.Fatalf("environ = %v", vars)
	}
	proxy, err := url.Parse(vars["HTTPS_PROXY"])
	if err != nil {
		t.Fatal(err)
	}
	// As a function's client takes it from its environment (http.ProxyFromEnvironment would
	// skip loopback, so the loopback case sets the proxy for every request).
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	start := time.Now()
	for _, tc := range []struct{ url, caller, want string }{
		{"https://ssm.us-east-2.amazonaws.com/", "Dev/Orders|Consumer1234", `Get "https://ssm.us-east-2.amazonaws.com/": the local kit refused a call to ssm.us-east-2.amazonaws.com:443 (AWS service ssm): ` +
			`nothing a function calls under the kit reaches AWS; the kit does not serve ssm: give the function the value it reads with pipelinectl local up --env FUNCTION.VAR=VALUE (Options.Env), ` +
			`or, if it must call ssm, its client does not read AWS_ENDPOINT_URL (aws-sdk-go v1 is one): give it the endpoint the kit gives the function in AWS_ENDPOINT_URL`},
		{"https://sqs.eu-west-1.amazonaws.com/", "Dev/Orders|Consumer1234", `Get "https://sqs.eu-west-1.amazonaws.com/": the local kit refused a call to sqs.eu-west-1.amazonaws.com:443 (AWS service sqs): ` +
			`nothing a function calls under the kit reaches AWS; its client does not read AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL (aws-sdk-go v1 is one): give it the endpoint the kit gives the function in AWS_ENDPOINT_URL_SQS`},
		{"https://example.com/path", "Dev/Orders|Consumer1234", `Get "https://example.com/path": the local kit refused a call to example.com:443: nothing a function calls under the kit leaves this machine; ` +
			`point the function at a stand-in on this machine (pipelinectl local up --env FUNCTION.VAR=VALUE, Options.Env)`},
	} {
		_, err := client.Get(tc.url)
		if err == nil || err.Error() != tc.want {
			t.Errorf("GET %s: %v\nwant %s", tc.url, err, tc.want)
		}
	}
	// Plain HTTP: the answer is the refusal, status 403 and the reason as its body.
	resp, err := client.Get("http://bucket.s3.us-east-1.amazonaws.com/key")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(body), "the local kit refused a call to bucket.s3.us-east-1.amazonaws.com (AWS service s3): ") {
		t.Errorf("plain HTTP: %s %s", resp.Status, body)
	}
	fmt.Printf("FIGURE egress: 4 calls refused in %v\n", time.Since(start).Round(time.Millisecond))
	mu.Lock()
	if len(got) != 4 || got["Dev/Orders|Consumer1234 ssm.us-east-2.amazonaws.com:443"].Service != "ssm" || got["Dev/Orders|Consumer1234 example.com:443"].Service != "" {
		t.Errorf("the kit heard %v", got)
	}
	mu.Unlock()

	// This machine's servers pass, through a tunnel (HTTPS) or as they are (HTTP).
	for _, srv := range []*httptest.Server{
		httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "here "+r.Host) })),
		httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "here "+r.Host) })),
	} {
		defer srv.Close()
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.Proxy = http.ProxyURL(proxy)
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(srv.URL)
		if err != nil {
			t.Fatalf("%s through the proxy: %v", srv.URL, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "here " + strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://"); string(b) != want {
			t.Errorf("%s through the proxy: %q, want %q", srv.URL, b, want)
		}
	}
}
