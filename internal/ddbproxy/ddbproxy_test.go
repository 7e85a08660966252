package ddbproxy

import (
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct{ target, body, op, step, key string }{
		{"DynamoDB_20120810.UpdateItem", `{"TableName":"t","Key":{"id":{"S":"p#k"}},"ExpressionAttributeValues":{":lock":{"N":"1"},":inprogress":{"S":"INPROGRESS"}}}`, "UpdateItem", "acquire", "p#k"},
		{"DynamoDB_20120810.UpdateItem", `{"Key":{"id":{"S":"p#k"}},"ExpressionAttributeValues":{":completed":{"S":"COMPLETED"},":inprogress":{"S":"INPROGRESS"}}}`, "UpdateItem", "complete", "p#k"},
		{"DynamoDB_20120810.UpdateItem", `{"Key":{"id":{"S":"p#k"}},"ExpressionAttributeValues":{":zero":{"N":"0"},":owner":{"S":"o"}}}`, "UpdateItem", "release", "p#k"},
		{"DynamoDB_20120810.GetItem", `{"Key":{"id":{"S":"p#k"}}}`, "GetItem", "", "p#k"},
		{"DynamoDB_20120810.PutItem", `{"Item":{"id":{"S":"fn#h"},"status":{"S":"INPROGRESS"}}}`, "PutItem", "", "fn#h"},
		{"AmazonSQS.SendMessageBatch", `{"QueueUrl":"u","Entries":[]}`, "SendMessageBatch", "", ""},
	}
	for _, tt := range tests {
		c := Classify(tt.target, []byte(tt.body))
		if c.Op != tt.op || c.Step != tt.step || c.Key != tt.key {
			t.Errorf("Classify(%s, %s) = %+v, want op %s step %q key %q", tt.target, tt.body, c, tt.op, tt.step, tt.key)
		}
	}
}

// The proxy's own behaviour against a stand-in backend that answers like DynamoDB Local: a
// success, and a failed condition without the CRC header.
func TestProxyCountsObservesAndInjects(t *testing.T) {
	p := proxyTo(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"dup"`) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed"}`)
			return
		}
		io.WriteString(w, `{}`)
	})
	var mu sync.Mutex
	var seen []string
	p.Observe = func(c Call, r Reply) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c.Key+" "+c.Op+" "+strconv.Itoa(r.Status)+" "+r.Type)
	}
	p.Policy = func(c Call) Fault {
		if c.Key == "throttled" {
			return Fault{Status: 400, Type: "ThrottlingException"}
		}
		return Fault{}
	}
	p.Delay = 20 * time.Millisecond

	call := func(op, id string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/", strings.NewReader(`{"TableName":"t","Key":{"id":{"S":"`+id+`"}}}`))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < p.Delay {
			t.Errorf("%s %s answered after %v, before the delay of %v", op, id, d, p.Delay)
		}
		return resp
	}
	for _, c := range []struct{ op, id string }{{"UpdateItem", "new"}, {"UpdateItem", "dup"}, {"GetItem", "throttled"}} {
		resp := call(c.op, c.id)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Every reply carries the CRC32 the SDK checks, errors included.
		if got, want := resp.Header.Get("X-Amz-Crc32"), strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10); got != want {
			t.Errorf("%s %s: X-Amz-Crc32 %q, want %q", c.op, c.id, got, want)
		}
	}
	want := []string{"new UpdateItem 200 ", "dup UpdateItem 400 ConditionalCheckFailedException", "throttled GetItem 400 ThrottlingException"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("observed %q, want %q", seen, want)
	}
	if c := p.Counts(); c["UpdateItem"] != 2 || c["GetItem"] != 1 || len(c) != 2 {
		t.Errorf("Counts = %v", c)
	}
	if n := p.Injected.Load(); n != 1 {
		t.Errorf("Injected = %d, want 1", n)
	}
	if n := p.Conns(); n < 1 || n > 3 {
		t.Errorf("Conns = %d, want 1 to 3", n)
	}
	p.ResetCounts()
	if c := p.Counts(); len(c) != 0 {
		t.Errorf("Counts after reset = %v", c)
	}
}

// Rewrite changes what the backend receives (the call is still classified from the client's
// body), and Observe sees the reply's body as the client gets it, for forwarded and injected
// replies alike.
func TestProxyRewritesRequestsAndObservesBodies(t *testing.T) {
	p := proxyTo(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(body) // echo what arrived
	})
	var mu sync.Mutex
	observed := map[string]string{}
	p.Rewrite = func(c Call, body []byte) []byte {
		if c.Op != "UpdateItem" {
			return body
		}
		// Dropping :lock too: a call classified from this body would lose its step.
		return []byte(strings.Replace(strings.Replace(string(body), "{", `{"ReturnConsumedCapacity":"TOTAL",`, 1), ":lock", ":x", 1))
	}
	p.Policy = func(c Call) Fault {
		if c.Op == "GetItem" {
			return Fault{Status: 400, Type: "ThrottlingException"}
		}
		return Fault{}
	}
	p.Observe = func(c Call, r Reply) {
		mu.Lock()
		defer mu.Unlock()
		observed[c.Op] = string(r.Body)
	}
	got := map[string]string{}
	for _, op := range []string{"UpdateItem", "PutItem", "GetItem"} {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/", strings.NewReader(`{"Key":{"id":{"S":"k"}},"ExpressionAttributeValues":{":lock":{"N":"1"}}}`))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[op] = string(body)
	}
	if want := `{"ReturnConsumedCapacity":"TOTAL","Key":{"id":{"S":"k"}},"ExpressionAttributeValues":{":x":{"N":"1"}}}`; got["UpdateItem"] != want {
		t.Errorf("backend received %s, want the rewritten %s", got["UpdateItem"], want)
	}
	if strings.Contains(got["PutItem"], "ReturnConsumedCapacity") {
		t.Errorf("PutItem was rewritten: %s", got["PutItem"])
	}
	if !strings.Contains(got["GetItem"], "ThrottlingException") {
		t.Errorf("GetItem reply %s, want the injected fault", got["GetItem"])
	}
	for op, body := range got {
		if observed[op] != body {
			t.Errorf("Observe saw the %s reply body %q, client got %q", op, observed[op], body)
		}
	}
	if c := p.Counts(); c["UpdateItem/acquire"] != 1 || c["PutItem"] != 1 || c["GetItem"] != 1 {
		t.Errorf("Counts = %v, want the calls classified from the original bodies", c)
	}
}

// proxyTo starts a proxy in front of a stand-in backend; both close with the test.
func proxyTo(t *testing.T, backend http.HandlerFunc) *Proxy {
	t.Helper()
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	p, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
