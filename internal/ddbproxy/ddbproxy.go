// Package ddbproxy is an HTTP proxy between AWS SDK clients and a local backend (DynamoDB
// Local, or any AWS JSON-protocol server such as an SQS server) that sees every call: it
// counts calls per operation and idempotency step, injects faults, delays calls, counts TCP
// connections, reports each call's reply and can rewrite requests. The end-to-end suite
// (test/e2e) counts and injects with it; the peer benchmark (test/bench/peers) counts each
// item's calls and models network latency with it; the cost benchmark
// (test/bench/cost/measure) counts calls and reads DynamoDB's consumed capacity with it.
//
// Point a client at it with its endpoint URL, e.g. AWS_ENDPOINT_URL_DYNAMODB=proxy.URL:
//
//	p, err := ddbproxy.New(ddb.Endpoint())
//	if err != nil { t.Fatal(err) }
//	defer p.Close()
//	p.Policy = func(c ddbproxy.Call) ddbproxy.Fault { ... } // before the first call
package ddbproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one request as the proxy sees it.
type Call struct {
	Op    string // X-Amz-Target operation, e.g. "UpdateItem"
	Step  string // for the idempotency store's UpdateItem: "acquire", "complete" or "release"
	Key   string // the item's "id" (prefix#key), from Key or, for PutItem, Item
	Table string
	// Body is the request's body, for a Policy that looks further (read only).
	Body []byte
}

// Fault is what the proxy does with one call. The zero Fault forwards it.
type Fault struct {
	// Status and Type answer the call with a DynamoDB error instead of forwarding it, e.g.
	// 400 ThrottlingException or 500 InternalServerError.
	Status int
	Type   string
	// AfterForward, when set, runs after DynamoDB has applied the call and before the reply
	// goes back: a test kills the caller here to crash it at an exact point. It does not run
	// when the caller no longer waits for the reply (it gave up at its deadline, on a loaded
	// machine): a kill then would land after the caller had moved on.
	AfterForward func()
	// Drop forwards the call and then closes the client's connection without a reply: the
	// call took effect and its response was lost, as in a network cut.
	Drop bool
	// Cut closes the client's connection without forwarding the call: it did not take
	// effect, but the client cannot tell that from a lost response.
	Cut bool
	// Truncate forwards the call, sends the reply's status, headers and first half of its
	// body, and closes the client's connection: the call took effect and its answer broke
	// off while it came.
	Truncate bool
}

// Reply is the answer a call got, from the backend or from an injected Fault.
type Reply struct {
	Status int
	// Type is the error type without its namespace ("ConditionalCheckFailedException"),
	// empty for a 2xx reply.
	Type string
	// Body is the reply's body as it goes back to the client (e.g. to read the
	// ConsumedCapacity or the Messages of a reply). Observe must not modify it: the proxy
	// sends it after Observe returns.
	Body []byte
}

// Proxy forwards to one target. Set its exported func and Delay fields before the first
// call; they are read concurrently afterwards.
type Proxy struct {
	URL string
	// Policy chooses the Fault for each call. nil: forward everything. Must be safe for
	// concurrent use.
	Policy func(Call) Fault
	// Observe, when set, is called with each call and its reply just before the reply goes
	// back. Must be safe for concurrent use.
	Observe func(Call, Reply)
	// Rewrite, when set, returns the body to forward in place of the request's, e.g. to add
	// ReturnConsumedCapacity to a DynamoDB request. The call is classified and counted from
	// the original body. The rewritten request keeps the client's signature, so only a
	// backend that does not check signatures (DynamoDB Local, the local SQS servers)
	// accepts it. Must be safe for concurrent use.
	Rewrite func(c Call, body []byte) []byte
	// Delay holds every call this long before it is forwarded or faulted: a model of the
	// network round trip to a real service. Default 0.
	Delay time.Duration
	// Injected counts the calls answered with a Fault's error, dropped or cut.
	Injected atomic.Int64

	target string
	srv    *http.Server
	client *http.Client
	conns  atomic.Int64
	mu     sync.Mutex
	counts map[string]int // "UpdateItem/acquire" -> n
}

// New listens on a free loopback port and forwards to target (the backend's endpoint URL).
// Close it when done.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		URL:    "http://" + ln.Addr().String(),
		target: strings.TrimSuffix(target, "/"),
		// DisableCompression: the body goes back byte for byte, so its X-Amz-Crc32 still
		// matches. Idle connections for every caller in flight (a batch of 100 records
		// concurrently, in the benchmark), so the proxy never redials the backend.
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, DisableCompression: true}},
		counts: map[string]int{},
	}
	p.srv = &http.Server{Handler: p, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// Counts returns a copy of the call counts, keyed "Op" or "Op/step".
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// ResetCounts zeroes the call counts.
func (p *Proxy) ResetCounts() {
	p.mu.Lock()
	p.counts = map[string]int{}
	p.mu.Unlock()
}

// Conns is the number of TCP connections clients have opened to the proxy.
func (p *Proxy) Conns() int { return int(p.conns.Load()) }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	call := Classify(r.Header.Get("X-Amz-Target"), body)
	call.Body = body
	name := call.Op
	if call.Step != "" {
		name += "/" + call.Step
	}
	p.mu.Lock()
	p.counts[name]++
	p.mu.Unlock()
	if p.Delay > 0 {
		time.Sleep(p.Delay)
	}

	var f Fault
	if p.Policy != nil {
		f = p.Policy(call)
	}
	if f.Cut {
		p.Injected.Add(1)
		hangUp(w)
		return
	}
	if f.Status != 0 {
		p.Injected.Add(1)
		msg := fmt.Appendf(nil, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected by ddbproxy"}`, f.Type)
		p.observe(call, Reply{Status: f.Status, Type: f.Type, Body: msg})
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-ErrorType", f.Type)
		w.Header().Set(crcHeader, strconv.FormatUint(uint64(crc32.ChecksumIEEE(msg)), 10))
		w.WriteHeader(f.Status)
		w.Write(msg)
		return
	}
	if p.Rewrite != nil {
		body = p.Rewrite(call, body)
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
	if f.AfterForward != nil && r.Context().Err() == nil {
		f.AfterForward()
	}
	if f.Drop {
		p.Injected.Add(1)
		hangUp(w)
		return
	}
	if f.Truncate {
		p.Injected.Add(1)
		truncate(w, resp, out)
		return
	}
	if p.Observe != nil {
		p.observe(call, reply(resp, out))
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	// DynamoDB sends a CRC32 of every response body, errors included; DynamoDB Local omits it
	// on errors, and the Go SDK then logs a spurious warning per error response
	// (aws/aws-sdk-go-v2#3545). Adding it makes the local backend answer like DynamoDB, so the
	// binaries' output stays all JSON, which the e2e suite checks.
	if resp.Header.Get(crcHeader) == "" && resp.Header.Get("Content-Encoding") == "" && isDynamo(r) {
		w.Header().Set(crcHeader, strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

// hangUp closes the client's connection without writing a response.
func hangUp(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
		return
	}
	panic(http.ErrAbortHandler) // net/http closes the connection
}

// truncate sends resp's status and headers, with the whole body's Content-Length, and the
// first half of body, then closes the client's connection.
func truncate(w http.ResponseWriter, resp *http.Response, body []byte) {
	c, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer c.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %s\r\n", resp.Status)
	h := resp.Header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Transfer-Encoding")
	h.Write(buf)
	buf.WriteString("\r\n")
	buf.Write(body[:len(body)/2])
	buf.Flush()
}

func (p *Proxy) observe(c Call, r Reply) {
	if p.Observe != nil {
		p.Observe(c, r)
	}
}

const crcHeader = "X-Amz-Crc32"

func isDynamo(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_")
}

// reply reads the error type of a non-2xx reply from its JSON body ("__type":
// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException").
func reply(resp *http.Response, body []byte) Reply {
	r := Reply{Status: resp.StatusCode, Body: body}
	if r.Status/100 == 2 {
		return r
	}
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(body, &e)
	if e.Type == "" {
		e.Type = resp.Header.Get("X-Amzn-ErrorType")
	}
	r.Type = e.Type[strings.LastIndex(e.Type, "#")+1:]
	return r
}

// Classify reads the operation of an AWS JSON-protocol request from its X-Amz-Target and,
// for DynamoDB, the table, the item's "id" and, for the idempotency store's writes, which
// step of the record state machine the call is (told by the expression values each step
// binds).
func Classify(target string, body []byte) Call {
	c := Call{Op: target[strings.LastIndex(target, ".")+1:]}
	var req struct {
		TableName string
		Key       map[string]map[string]any
		Item      map[string]map[string]any
		Values    map[string]any `json:"ExpressionAttributeValues"`
	}
	if json.Unmarshal(body, &req) != nil {
		return c
	}
	c.Table = req.TableName
	for _, m := range []map[string]map[string]any{req.Key, req.Item} {
		if id, ok := m["id"]["S"].(string); ok {
			c.Key = id
			break
		}
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
