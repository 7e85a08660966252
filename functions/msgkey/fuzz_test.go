package msgkey

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzExtract checks Extract against encoding/json as an oracle: it never panics, it is
// deterministic, every failure is an *InputError with a code and a reason, and every key it
// returns is valid and is exactly the string encoding/json finds in that field.
func FuzzExtract(f *testing.F) {
	for _, c := range loadExtractCases(f) {
		attr := c.Message.MessageAttributes["IdempotencyKey"]
		val := ""
		if attr.StringValue != nil {
			val = *attr.StringValue
		}
		f.Add(c.Message.Body, strings.HasPrefix(c.Source, "attribute:"), attr.DataType, val, 1024)
	}
	f.Add(`{"idempotencyKey":"\ud800"}`, false, "", "", 0)
	f.Add(`{"idempotencyKey":"a","idempotencyKey":1}`, false, "", "", 100)

	f.Fuzz(func(t *testing.T, body string, attribute bool, dataType, attrValue string, maxBody int) {
		src := Source{Kind: SourceBody, Name: "idempotencyKey"}
		if attribute {
			src = Source{Kind: SourceAttribute, Name: "IdempotencyKey"}
		}
		msg := events.SQSMessage{Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{
			"IdempotencyKey": {DataType: dataType, StringValue: &attrValue},
		}}
		key, err := src.Extract(msg, maxBody)
		key2, err2 := src.Extract(msg, maxBody)
		if key != key2 || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("not deterministic: %q %v / %q %v", key, err, key2, err2)
		}
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Code == "" || ie.Reason == "" || key != "" {
				t.Fatalf("Extract = %q, %#v; want only an *InputError with code and reason", key, err)
			}
			return
		}
		if key == "" || len(key) > MaxKeyBytes || !utf8.ValidString(key) || strings.TrimSpace(key) == "" || ValidateKey(key) != nil {
			t.Fatalf("Extract returned invalid key %q", key)
		}
		if maxBody > 0 && len(body) > maxBody {
			t.Fatalf("body of %d bytes accepted with maxBody %d", len(body), maxBody)
		}
		if attribute {
			if key != attrValue {
				t.Fatalf("key %q, attribute %q", key, attrValue)
			}
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("key %q from a body encoding/json rejects: %v", key, err)
		}
		var want string
		if err := json.Unmarshal(m["idempotencyKey"], &want); err != nil || want != key {
			t.Fatalf("key %q, encoding/json finds %q (%v)", key, want, err)
		}
	})
}

// FuzzParseSource: never panics; what parses prints back to its input and every failure
// wraps ErrInvalidSource.
func FuzzParseSource(f *testing.F) {
	for _, s := range []string{"body:idempotencyKey", "attribute:IdempotencyKey", "body:", "attribute:a..b",
		"attribute:AWS.x", "group", "body:a:b", ":", "attribute:" + strings.Repeat("a", 257)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		src, err := ParseSource(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSource) || src != (Source{}) {
				t.Fatalf("ParseSource(%q) = %#v, %v", s, src, err)
			}
			return
		}
		if src.String() != s || src.Name == "" {
			t.Fatalf("ParseSource(%q) = %#v, prints as %q", s, src, src.String())
		}
		if again, err := ParseSource(src.String()); err != nil || again != src {
			t.Fatalf("round trip of %q: %#v, %v", s, again, err)
		}
		// A parsed source is usable: Extract reports bad input, never ErrInvalidSource.
		if _, err := src.Extract(events.SQSMessage{Body: "{}"}, 0); errors.Is(err, ErrInvalidSource) {
			t.Fatalf("parsed source %q rejected by Extract: %v", s, err)
		}
	})
}

// FuzzDeduplicationID: always a valid SQS id, deterministic, and the key itself when the key
// already qualifies.
func FuzzDeduplicationID(f *testing.F) {
	for _, s := range []string{"", "order-42", "with space", "café", strings.Repeat("a", 128), strings.Repeat("a", 129),
		sqsPunct, DispatchKey("job", "2025-01-02T03:04:00Z", "item#1")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id := DeduplicationID(key)
		checkSQSID(t, id)
		if DeduplicationID(key) != id {
			t.Fatalf("DeduplicationID(%q) not deterministic", key)
		}
		if ValidateGroupID(key) == nil && id != key { // same alphabet and length rules
			t.Fatalf("DeduplicationID(%q) = %q, want the key itself", key, id)
		}
		if id != key && id != hashHex(key) {
			t.Fatalf("DeduplicationID(%q) = %q, neither the key nor its hash", key, id)
		}
	})
}

// FuzzDispatchKeyInjective: two different triples never share a key, and every key splits
// back into its triple.
func FuzzDispatchKeyInjective(f *testing.F) {
	f.Add("a#b", "c", "d", "a", "b#c", "d")
	f.Add("a%23b", "c", "d", "a#b", "c", "d")
	f.Add("job", "2025-01-02T03:04:00Z", "1", "job", "2025-01-02T03:04:00Z", "1")
	f.Fuzz(func(t *testing.T, j1, p1, i1, j2, p2, i2 string) {
		k1, k2 := DispatchKey(j1, p1, i1), DispatchKey(j2, p2, i2)
		t1, t2 := [3]string{j1, p1, i1}, [3]string{j2, p2, i2}
		if (k1 == k2) != (t1 == t2) {
			t.Fatalf("DispatchKey%q = %q, DispatchKey%q = %q", t1, k1, t2, k2)
		}
		if got := splitDispatchKey(t, k1); got != t1 {
			t.Fatalf("key %q decodes to %q, want %q", k1, got, t1)
		}
	})
}
