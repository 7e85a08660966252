package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Call is one DynamoDB request as the proxy sees it.
type Call struct {
	Op    string // X-Amz-Target operation, e.g. "UpdateItem"
	Step  string // for the idempotency store's UpdateItem: "acquire", "complete" or "release"
	Key   string // the item's "id" (prefix#key), when the request names one
	Table string
}

// Fault is what the proxy does with one call. The zero Fault forwards it.
type Fault struct {
	// Status and Type answer the call with a DynamoDB error instead of forwarding it, e.g.
	// 400 ThrottlingException or 500 InternalServerError.
	Status int
	Type   string
	// AfterForward, when set, runs after DynamoDB has applied the call and before the reply
	// goes back: a test kills the caller here to crash it at an exact point.
	AfterForward func()
}

// Proxy is an HTTP proxy between the binaries and DynamoDB Local that counts calls per
// operation and step and injects faults chosen by Policy. Point a binary at it with
// AWS_ENDPOINT_URL_DYNAMODB=proxy.URL.
type Proxy struct {
	URL    string
	Policy func(Call) Fault // nil: forward everything; must be safe for concurrent use

	target   string
	srv      *http.Server
	client   *http.Client
	mu       sync.Mutex
	counts   map[string]int // "UpdateItem/acquire" -> n
	Injected atomic.Int64
}

// NewProxy listens on a free loopback port and forwards to target (DynamoDB Local's
// endpoint URL). Close it when done.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		URL:    "http://" + ln.Addr().String(),
		target: strings.TrimSuffix(target, "/"),
		// DisableCompression: the body goes back byte for byte, so its X-Amz-Crc32 still matches.
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		counts: map[string]int{},
	}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// Counts returns a copy of the call counts, keyed "Op" or "Op/step".
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// ResetCounts zeroes the call counts.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	p.counts = map[string]int{}
	p.mu.Unlock()
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	call := classify(r.Header.Get("X-Amz-Target"), body)
	name := call.Op
	if call.Step != "" {
		name += "/" + call.Step
	}
	p.mu.Lock()
	p.counts[name]++
	p.mu.Unlock()

	var f Fault
	if p.Policy != nil {
		f = p.Policy(call)
	}
	if f.Status != 0 {
		p.Injected.Add(1)
		msg := fmt.Appendf(nil, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected by the e2e proxy"}`, f.Type)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-ErrorType", f.Type)
		w.Header().Set(crcHeader, strconv.FormatUint(uint64(crc32.ChecksumIEEE(msg)), 10))
		w.WriteHeader(f.Status)
		w.Write(msg)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if f.AfterForward != nil {
		f.AfterForward()
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	// DynamoDB sends a CRC32 of every response body, errors included; DynamoDB Local omits it
	// on errors, and the Go SDK then logs a spurious warning per error response
	// (aws/aws-sdk-go-v2#3545). Adding it makes the local backend answer like DynamoDB, so the
	// binaries' output stays all JSON, which the suite checks.
	if resp.Header.Get(crcHeader) == "" && resp.Header.Get("Content-Encoding") == "" && isDynamo(r) {
		w.Header().Set(crcHeader, strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

const crcHeader = "X-Amz-Crc32"

func isDynamo(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_")
}

// classify reads the operation and, for the idempotency store's writes, which step of the
// record state machine the call is (told by the expression values each step binds).
func classify(target string, body []byte) Call {
	c := Call{Op: target[strings.LastIndex(target, ".")+1:]}
	var req struct {
		TableName string
		Key       map[string]map[string]any
		Values    map[string]any `json:"ExpressionAttributeValues"`
	}
	if json.Unmarshal(body, &req) != nil {
		return c
	}
	c.Table = req.TableName
	if id, ok := req.Key["id"]["S"].(string); ok {
		c.Key = id
	}
	if c.Op == "UpdateItem" {
		switch {
		case req.Values[":completed"] != nil:
			c.Step = "complete"
		case req.Values[":lock"] != nil:
			c.Step = "acquire"
		case req.Values[":zero"] != nil:
			c.Step = "release"
		}
	}
	return c
}
