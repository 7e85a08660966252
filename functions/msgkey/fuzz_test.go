package msgkey

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzExtract checks Extract against two oracles: it never panics, it is deterministic, every
// failure is an *InputError with a code and a reason, and every key it returns is valid, is
// exactly the string encoding/json finds in that field, and is exactly the UTF-16 text the
// field's JSON escapes spell (utf16Units, which keeps lone surrogates). encoding/json alone
// cannot be the oracle for escapes: it maps every lone surrogate escape to U+FFFD, which
// merges distinct keys, and agrees with itself about that.
func FuzzExtract(f *testing.F) {
	for _, c := range loadExtractCases(f) {
		attr := c.Message.MessageAttributes["IdempotencyKey"]
		val := ""
		if attr.StringValue != nil {
			val = *attr.StringValue
		}
		f.Add(c.Message.Body, strings.HasPrefix(c.Source, "attribute:"), attr.DataType, val, 1024)
	}
	// The fixtures hold the plain lone surrogates; these are the escapes around them.
	for _, key := range []string{`\ud800`, `\\ud800`, `\\\ud800`, `\ude00\ud83d`, `\ud83d\u0041`, `\ud83d\n`} {
		f.Add(`{"idempotencyKey":"`+key+`"}`, false, "", "", 0)
	}
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
		units := utf16Units(t, m["idempotencyKey"])
		if lone := loneSurrogate(units); lone >= 0 {
			t.Fatalf("key %q accepted from %s, whose escapes spell the lone surrogate %#04x", key, m["idempotencyKey"], units[lone])
		}
		if spelled := string(utf16.Decode(units)); spelled != key {
			t.Fatalf("key %q, the JSON text %s spells %q", key, m["idempotencyKey"], spelled)
		}
	})
}

// utf16Units decodes a JSON string literal (valid JSON, quotes included) to the UTF-16 code
// units it spells, keeping a \u escape's unit as written even when it is a lone surrogate.
func utf16Units(t *testing.T, lit []byte) []uint16 {
	t.Helper()
	s := string(lit[1 : len(lit)-1])
	var units []uint16
	for len(s) > 0 {
		if s[0] != '\\' {
			r, n := utf8.DecodeRuneInString(s)
			units = utf16.AppendRune(units, r)
			s = s[n:]
			continue
		}
		if s[1] == 'u' {
			u, err := strconv.ParseUint(s[2:6], 16, 16)
			if err != nil {
				t.Fatalf("escape %q in %s: %v", s[:6], lit, err)
			}
			units = append(units, uint16(u))
			s = s[6:]
			continue
		}
		simple := map[byte]uint16{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
		u, ok := simple[s[1]]
		if !ok {
			t.Fatalf("escape %q in %s is not JSON", s[:2], lit)
		}
		units = append(units, u)
		s = s[2:]
	}
	return units
}

// loneSurrogate returns the index of the first surrogate in units that is not half of a
// high-low pair, or -1.
func loneSurrogate(units []uint16) int {
	for i := 0; i < len(units); i++ {
		switch u := units[i]; {
		case u >= 0xD800 && u <= 0xDBFF && i+1 < len(units) && units[i+1] >= 0xDC00 && units[i+1] <= 0xDFFF:
			i++ // a pair
		case u >= 0xD800 && u <= 0xDFFF:
			return i
		}
	}
	return -1
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
