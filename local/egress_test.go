package local

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The functions' proxy refuses at once every call that would leave this machine (a host
// that is not AWS's, which the kit answers), HTTPS or HTTP, naming the host and the fix in
// the error the client gets and to the kit, with the caller its URL names; a call to this
// machine passes, tunnelled or not.
func TestEgressRefusesWhatLeavesTheMachine(t *testing.T) {
	var mu sync.Mutex
	got := map[string]refusal{}
	e, err := listenEgress(t.TempDir(), func(caller string, r refusal) {
		mu.Lock()
		defer mu.Unlock()
		got[caller+" "+r.Host] = r
	}, func(string) string { return "http://127.0.0.1:1" })
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
	for _, tc := range []struct{ url, want string }{
		{"https://example.com/path", `Get "https://example.com/path": the local kit refused a call to example.com:443: nothing a function calls under the kit leaves this machine; ` +
			`point the function at a stand-in on this machine (pipelinectl local up --env FUNCTION.VAR=VALUE, Options.Env)`},
		{"https://api.partner.example.net:8443/v1", `Get "https://api.partner.example.net:8443/v1": the local kit refused a call to api.partner.example.net:8443: `},
	} {
		_, err := client.Get(tc.url)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("GET %s: %v\nwant %s", tc.url, err, tc.want)
		}
	}
	// Plain HTTP: the answer is the refusal, status 403 and the reason as its body.
	resp, err := client.Get("http://partner.example.org/key")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(body), "the local kit refused a call to partner.example.org: nothing a function calls") {
		t.Errorf("plain HTTP: %s %s", resp.Status, body)
	}
	fmt.Printf("FIGURE egress: 3 calls refused in %v\n", time.Since(start).Round(time.Millisecond))
	mu.Lock()
	if len(got) != 3 || got["Dev/Orders|Consumer1234 example.com:443"].Why == "" || got["Dev/Orders|Consumer1234 partner.example.org"].Service != "" {
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

// A call to an AWS host is answered by the kit's endpoint for its service, over TLS with a
// certificate of the kit's authority (whose file the functions get), the request as the
// client sent it; a client that does not trust the authority fails its handshake, and the
// kit says why.
func TestEgressAnswersAWSHosts(t *testing.T) {
	seen := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Method + " " + r.Host + r.URL.Path + " " + r.Header.Get("X-Amz-Target") + " " + r.Header.Get("Proxy-Authorization")
		io.WriteString(w, `{"Parameter":{"Value":"hello"}}`)
	}))
	defer srv.Close()
	var mu sync.Mutex
	var refused []refusal
	e, err := listenEgress(t.TempDir(), func(caller string, r refusal) {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, r)
	}, func(svc string) string {
		if svc == "ssm" || svc == "s3" {
			return srv.URL
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	vars := e.environ("S|F")
	pemBytes, err := os.ReadFile(vars["SSL_CERT_FILE"])
	if err != nil {
		t.Fatalf("the authority's file %q: %v", vars["SSL_CERT_FILE"], err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("no certificate in %s", pemBytes)
	}
	proxy, _ := url.Parse(vars["HTTPS_PROXY"])
	trusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, tc := range []struct{ url, want string }{
		{"https://ssm.us-east-1.amazonaws.com/", "POST " + strings.TrimPrefix(srv.URL, "http://") + "/ AmazonSSM.GetParameter "},
		{"http://ssm.us-east-1.amazonaws.com/", "POST " + strings.TrimPrefix(srv.URL, "http://") + "/ AmazonSSM.GetParameter "},
		{"https://my-bucket.s3.us-east-1.amazonaws.com/a/b.txt", "POST " + strings.TrimPrefix(srv.URL, "http://") + "/my-bucket/a/b.txt AmazonSSM.GetParameter "},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(`{"Name":"/app/greeting"}`))
		req.Header.Set("X-Amz-Target", "AmazonSSM.GetParameter")
		resp, err := trusting.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := <-seen; got != tc.want || string(b) != `{"Parameter":{"Value":"hello"}}` {
			t.Errorf("%s reached the endpoint as %q (want %q) and answered %s %s", tc.url, got, tc.want, resp.Status, b)
		}
	}
	// A client with other roots: its handshake fails, and the kit says why.
	_, err = (&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}).Get("https://ssm.eu-west-1.amazonaws.com/")
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("a client that does not trust the kit: %v", err)
	}
	// A service the kit has no endpoint for: a Bad Gateway that says so, nothing refused.
	if resp, err := trusting.Get("https://sts.amazonaws.com/"); err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Errorf("sts: %v %v", resp, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), `the local kit has no endpoint for sts ("")`) {
			t.Errorf("sts: %s", b)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for { // the handshake's refusal is heard after the client's error
		mu.Lock()
		n := len(refused)
		mu.Unlock()
		if n >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || !strings.Contains(refused[0].Why, "the local kit answers ssm.eu-west-1.amazonaws.com:443 (AWS service ssm) with a certificate of its own authority, which the function's TLS client does not trust") {
		t.Errorf("the kit heard %+v", refused)
	}
}
