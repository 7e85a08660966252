package local

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// egress is the HTTP proxy every function process is given (HTTP_PROXY and HTTPS_PROXY,
// with NO_PROXY for this machine's loopback, where the kit's servers are), so that nothing
// a function calls leaves the machine, whatever its client: an SDK that reads
// AWS_ENDPOINT_URL reaches the kit without it; one that does not (aws-sdk-go v1), or a
// plain HTTP client, comes here. A call to a loopback address is passed on (a client that
// proxies one anyway), one to an AWS host is answered by the kit (answer); any other is
// refused at once, with a reason that names the host and the fix: the function's error
// carries it (as the proxy's status text), and the kit reports it (refused) with the
// caller, the user of the proxy URL the function was given.
type egress struct {
	ln      net.Listener
	srv     *http.Server
	refused func(caller string, r refusal)
	pass    *http.Transport // to loopback, never through a proxy of the kit's own environment
	// answer is the kit's endpoint for an AWS service (the base URL of the server that
	// answers it: SQS's, DynamoDB's, the stand-ins'). A call to an AWS host is answered
	// there: a CONNECT to port 443 is met with TLS by a certificate of the kit's own
	// authority (ca, which the functions are told to trust), its requests passed on.
	answer func(service string) string
	ca     *authority
	inner  *http.Server  // serves the requests of the CONNECTs the kit answers
	conns  chan net.Conn // to inner
	done   chan struct{}
}

// refusal is a call egress refused: its host (with the port), the AWS service the host
// belongs to ("" for none), and why, in words that end with the fix.
type refusal struct {
	Host, Service, Why string
}

// listenEgress starts the proxy on a free loopback port, with its certificate authority
// written to dir/kit-ca.pem; refused hears every refusal, answer names the endpoint (a base
// URL) that answers each AWS service.
func listenEgress(dir string, refused func(caller string, r refusal), answer func(service string) string) (*egress, error) {
	ca, err := newAuthority(filepath.Join(dir, "kit-ca.pem"))
	if err != nil {
		return nil, fmt.Errorf("local: the functions' proxy: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: the functions' proxy: %w", err)
	}
	e := &egress{ln: ln, refused: refused, answer: answer, ca: ca, conns: make(chan net.Conn), done: make(chan struct{}),
		pass: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second}
	e.inner = &http.Server{Handler: http.HandlerFunc(e.serveAWS), ReadHeaderTimeout: 30 * time.Second}
	go e.srv.Serve(ln)
	go e.inner.Serve(chanListener{e.conns, e.done, ln.Addr()})
	return e, nil
}

// environ is the variables that send caller's HTTP and HTTPS calls through the proxy, in
// both the spellings clients read (Go reads the upper case first; curl the lower).
func (e *egress) environ(caller string) map[string]string {
	u := (&url.URL{Scheme: "http", User: url.User(caller), Host: e.ln.Addr().String()}).String()
	vars := map[string]string{}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY"} {
		vars[name], vars[strings.ToLower(name)] = u, u
	}
	vars["NO_PROXY"], vars["no_proxy"] = noProxy, noProxy
	// The kit's authority, for the AWS hosts it answers over TLS: Go's crypto/x509, OpenSSL
	// and rustls-native-certs read SSL_CERT_FILE as the roots to trust. (Not AWS_CA_BUNDLE:
	// a client that does not load it, as these constructs' functions do not, refuses it.)
	vars["SSL_CERT_FILE"] = e.ca.file
	return vars
}

// noProxy is this machine's loopback, where every server of the kit listens.
const noProxy = "localhost,127.0.0.1,::1"

// Close stops the proxy and the tunnels it holds.
func (e *egress) Close() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	e.srv.Shutdown(ctx)
	e.srv.Close()
	close(e.done)
	e.inner.Shutdown(ctx)
	e.inner.Close()
	e.pass.CloseIdleConnections()
}

func (e *egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host // CONNECT's authority; an absolute URI's host
	if r.Method != http.MethodConnect && r.URL.Host != "" {
		host = r.URL.Host
	}
	name := hostOnly(host)
	switch {
	case loopback(name):
		e.forward(w, r, host)
	case awsService(name) != "" && r.Method == http.MethodConnect:
		e.intercept(w, r, host, name)
	case awsService(name) != "":
		e.serveAWS(w, r)
	default:
		why := fmt.Sprintf("the local kit refused a call to %s: nothing a function calls under the kit leaves this machine; "+
			"point the function at a stand-in on this machine (pipelinectl local up --env FUNCTION.VAR=VALUE, Options.Env)", host)
		e.refused(proxyUser(r), refusal{Host: host, Why: why})
		refuse(w, why)
	}
}

// forward passes a call to this machine on: a CONNECT as a tunnel, any other request as it is.
func (e *egress) forward(w http.ResponseWriter, r *http.Request, host string) {
	if r.Method != http.MethodConnect {
		(&httputil.ReverseProxy{Transport: e.pass, Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "http", host, r.Host
			pr.Out.Header.Del("Proxy-Authorization")
		}}).ServeHTTP(w, r)
		return
	}
	up, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(up, buf); up.(*net.TCPConn).CloseWrite() })
	io.Copy(conn, up)
	wg.Wait()
	conn.Close()
	up.Close()
}

// intercept answers a CONNECT to an AWS host as that host: TLS with a certificate of the
// kit's authority for its name, then each request to inner, which passes it to the kit's
// endpoint for the service. A client that does not trust the authority fails its handshake:
// that is reported as a refusal, with the variables that would make it trust the kit.
func (e *egress) intercept(w http.ResponseWriter, r *http.Request, host, name string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	caller := proxyUser(r)
	tc := tls.Server(bufferedConn{conn, buf.Reader}, &tls.Config{
		NextProtos:     []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return e.ca.leaf(name) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		e.refused(caller, refusal{Host: host, Service: awsService(name), Why: fmt.Sprintf(
			"the local kit answers %s (AWS service %s) with a certificate of its own authority, which the function's TLS client does not trust (%v): "+
				"the kit gives every function SSL_CERT_FILE naming it; "+
				"a client with its own roots (rustls's webpki-roots) must be given the endpoint the kit gives the function in AWS_ENDPOINT_URL", host, awsService(name), err)})
		return
	}
	select {
	case e.conns <- tc:
	case <-e.done:
		tc.Close()
	}
}

// serveAWS passes a request to an AWS host to the kit's endpoint for its service, as if
// it had been sent there: with the endpoint's own host, so that a server that checks it
// (the stand-ins do) takes it.
func (e *egress) serveAWS(w http.ResponseWriter, r *http.Request) {
	svc := awsService(hostOnly(r.Host))
	target, err := url.Parse(e.answer(svc))
	if err != nil || target.Host == "" {
		http.Error(w, fmt.Sprintf("the local kit has no endpoint for %s (%q): %v", svc, e.answer(svc), err), http.StatusBadGateway)
		return
	}
	bucket := ""
	if svc == "s3" { // bucket.s3.REGION.amazonaws.com: the kit's S3 is addressed by path
		if b, _, ok := strings.Cut(hostOnly(r.Host), ".s3"); ok && b != "s3" && !strings.HasPrefix(hostOnly(r.Host), "s3") {
			bucket = "/" + b
		}
	}
	(&httputil.ReverseProxy{Transport: e.pass, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		if bucket != "" {
			pr.Out.URL.Path, pr.Out.URL.RawPath = bucket+pr.Out.URL.Path, ""
		}
		pr.Out.Header.Del("Proxy-Authorization")
	}}).ServeHTTP(w, r)
}

// refuse answers a call with 403 and why as the status text, which Go's HTTP client makes
// the error of a CONNECT it refuses (`Get "https://host/": why`), and as the body.
func refuse(w http.ResponseWriter, why string) {
	why = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, why)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, why, http.StatusForbidden)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 403 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", why, len(why), why)
	buf.Flush()
}

// proxyUser is the user name of a request's Proxy-Authorization (Basic), which is the
// caller the proxy URL named.
func proxyUser(r *http.Request) string {
	v, ok := strings.CutPrefix(r.Header.Get("Proxy-Authorization"), "Basic ")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return ""
	}
	user, _, _ := strings.Cut(string(b), ":")
	if u, err := url.PathUnescape(user); err == nil {
		return u
	}
	return user
}

// loopback says whether host is this machine by its loopback name or address.
func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// awsService is the service an AWS endpoint host belongs to ("ssm" of
// ssm.us-east-2.amazonaws.com, "s3" of bucket.s3.eu-west-1.amazonaws.com), "" for a host of
// another domain.
func awsService(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	var rest string
	for _, suffix := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"} {
		if r, ok := strings.CutSuffix(host, suffix); ok {
			rest = r
			break
		}
	}
	if rest == "" {
		return ""
	}
	labels := strings.Split(rest, ".")
	for _, l := range labels {
		if l == "s3" || strings.HasPrefix(l, "s3-") {
			return "s3"
		}
	}
	return strings.TrimSuffix(labels[0], "-fips")
}

// answerFor is the endpoint that answers an AWS service for a function whose client sent
// the call to AWS's own host (through egress): SQS's and DynamoDB's servers, and the
// stand-ins for every other, which answer what they serve and say what they do not.
func (k *Kit) answerFor(service string) string {
	switch service {
	case "sqs":
		return k.sqsd.Endpoint()
	case "dynamodb":
		return k.proxy.URL
	}
	return k.apiURL
}

// refusedCall records a call egress refused, for Status, and says it once per function and
// host in Kit.Err.
func (k *Kit) refusedCall(caller string, r refusal) {
	stackID, id, _ := strings.Cut(caller, "|")
	k.mu.Lock()
	if k.refusals == nil {
		k.refusals = map[string]map[string]int{}
	}
	if k.refusals[caller] == nil {
		k.refusals[caller] = map[string]int{}
	}
	k.refusals[caller][r.Host]++
	first := k.refusals[caller][r.Host] == 1
	k.mu.Unlock()
	if !first {
		return
	}
	who := "a process that did not say which function it is"
	for _, st := range k.stacks {
		if st.ref.ID == stackID {
			who = fmt.Sprintf("function %s of stack %s", id, st.ref.DisplayName)
		}
	}
	k.background(fmt.Errorf("local: %s called %s: %s", who, r.Host, r.Why))
}

// refusedOf is what Status says of the calls refused to the functions of a pipeline: each
// host with its service and count.
func (k *Kit) refusedOf(stackID string, ids ...string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, id := range ids {
		hosts := k.refusals[stackID+"|"+id]
		for _, h := range slices.Sorted(maps.Keys(hosts)) {
			line := h
			if svc := awsService(hostOnly(h)); svc != "" {
				line += " (" + svc + ")"
			}
			out = append(out, fmt.Sprintf("%s x%d", line, hosts[h]))
		}
	}
	return out
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// chanListener hands inner the connections intercept answers.
type chanListener struct {
	conns <-chan net.Conn
	done  <-chan struct{}
	addr  net.Addr
}

func (l chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l chanListener) Close() error   { return nil }
func (l chanListener) Addr() net.Addr { return l.addr }

// bufferedConn reads what the hijacked connection's reader holds before the connection.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// authority is the kit's own certificate authority, made at each start (its key never
// leaves the kit's memory), whose certificate file the functions are told to trust; it
// signs a certificate for each AWS host the kit answers.
type authority struct {
	file   string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func newAuthority(file string) (*authority, error) {
	now := time.Now()
	der, key, err := issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "idempotent-sqs-pipeline local kit " + now.UTC().Format(time.RFC3339)},
		NotAfter: now.Add(30 * 24 * time.Hour),
		IsCA:     true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return &authority{file: file, cert: cert, key: key, leaves: map[string]*tls.Certificate{}}, nil
}

// leaf is the certificate the kit answers host with, made once.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[host]; ok {
		return c, nil
	}
	der, key, err := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: host}, DNSNames: []string{host}, NotAfter: a.cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, a.cert, a.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	a.leaves[host] = c
	return c, nil
}

// issue makes a key and the certificate tmpl describes for it (with a random serial, valid
// from an hour ago), signed by parent's key, or by its own when parent is nil.
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber, tmpl.NotBefore = serial(), time.Now().Add(-time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	return der, key, err
}

// serial is a random certificate serial number (RFC 5280: positive, at most 20 octets).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n.Add(n, big.NewInt(1))
}
