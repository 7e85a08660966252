package local

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
// proxies one anyway); any other is refused at once, with a reason that names the host,
// the service and the fix: the function's error carries it (as the proxy's status text),
// and the kit reports it (refused) with the caller, the user of the proxy URL the
// function was given.
type egress struct {
	ln      net.Listener
	srv     *http.Server
	refused func(caller string, r refusal)
	pass    *http.Transport // to loopback, never through a proxy of the kit's own environment
}

// refusal is a call egress refused: its host (with the port), the AWS service the host
// belongs to ("" for none), and why, in words that end with the fix.
type refusal struct {
	Host, Service, Why string
}

// listenEgress starts the proxy on a free loopback port; refused hears every refusal.
func listenEgress(refused func(caller string, r refusal)) (*egress, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local: the functions' proxy: %w", err)
	}
	e := &egress{ln: ln, refused: refused, pass: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second}
	go e.srv.Serve(ln)
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
	e.pass.CloseIdleConnections()
}

func (e *egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host // CONNECT's authority; an absolute URI's host
	if r.Method != http.MethodConnect && r.URL.Host != "" {
		host = r.URL.Host
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if loopback(name) {
		e.forward(w, r, host)
		return
	}
	ref := refuseReason(host, name)
	if e.refused != nil {
		e.refused(proxyUser(r), ref)
	}
	refuse(w, ref.Why)
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

// refuseReason says why a call to host (name, without the port) is refused, and the way out.
func refuseReason(host, name string) refusal {
	svc := awsService(name)
	if svc == "" {
		return refusal{Host: host, Why: fmt.Sprintf("the local kit refused a call to %s: nothing a function calls under the kit leaves this machine; "+
			"point the function at a stand-in on this machine (pipelinectl local up --env FUNCTION.VAR=VALUE, Options.Env)", host)}
	}
	fix := "its client does not read AWS_ENDPOINT_URL (aws-sdk-go v1 is one): give it the endpoint the kit gives the function in AWS_ENDPOINT_URL"
	if env, ok := servedEndpoint[svc]; ok {
		fix = "its client does not read " + env + " or AWS_ENDPOINT_URL (aws-sdk-go v1 is one): give it the endpoint the kit gives the function in " + env
	}
	if !slices.Contains(servedServices, svc) && servedEndpoint[svc] == "" {
		fix = fmt.Sprintf("the kit does not serve %s: give the function the value it reads with pipelinectl local up --env FUNCTION.VAR=VALUE (Options.Env), "+
			"or, if it must call %s, %s", svc, svc, fix)
	}
	return refusal{Host: host, Service: svc, Why: fmt.Sprintf("the local kit refused a call to %s (AWS service %s): nothing a function calls under the kit reaches AWS; %s", host, svc, fix)}
}

// servedEndpoint is the variable of the endpoint of each service the kit's own servers answer.
var servedEndpoint = map[string]string{"sqs": "AWS_ENDPOINT_URL_SQS", "dynamodb": "AWS_ENDPOINT_URL_DYNAMODB"}

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
