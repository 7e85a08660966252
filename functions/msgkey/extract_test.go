package msgkey

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const testMaxBody = 256 * 1024

type extractCase struct {
	Name       string            `json:"name"`
	Source     string            `json:"source"`
	Message    events.SQSMessage `json:"message"`
	MaxBody    int               `json:"maxBody"`
	WantKey    string            `json:"wantKey"`
	WantCode   Code              `json:"wantCode"`
	WantReason string            `json:"wantReason"`
}

func loadExtractCases(t testing.TB) []extractCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/extract_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []extractCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("testdata/extract_cases.json: %v", err)
	}
	return cases
}

func checkExtract(t *testing.T, c extractCase) {
	t.Helper()
	src, err := ParseSource(c.Source)
	if err != nil {
		t.Fatalf("ParseSource(%q): %v", c.Source, err)
	}
	maxBody := c.MaxBody
	if maxBody == 0 {
		maxBody = testMaxBody
	}
	key, err := src.Extract(c.Message, maxBody)
	if c.WantCode == "" {
		if err != nil || key != c.WantKey {
			t.Fatalf("Extract = %q, %v; want %q, nil", key, err, c.WantKey)
		}
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("Extract = %q, %v; want *InputError %s", key, err, c.WantCode)
	}
	if key != "" {
		t.Errorf("key = %q alongside an error, want empty", key)
	}
	if ie.Code != c.WantCode {
		t.Errorf("Code = %s, want %s (reason %q)", ie.Code, c.WantCode, ie.Reason)
	}
	if !strings.Contains(ie.Reason, c.WantReason) {
		t.Errorf("Reason = %q, want it to contain %q", ie.Reason, c.WantReason)
	}
	if ie.Source != src {
		t.Errorf("Source = %v, want %v", ie.Source, src)
	}
	if !strings.Contains(err.Error(), ie.Reason) || !strings.Contains(err.Error(), c.Source) {
		t.Errorf("Error() = %q, want the source and the reason", err.Error())
	}
}

func TestExtractFixtures(t *testing.T) {
	for _, c := range loadExtractCases(t) {
		t.Run(c.Name, func(t *testing.T) { checkExtract(t, c) })
	}
}

func strp(s string) *string { return &s }

func TestExtractLimits(t *testing.T) {
	bodyOf := func(n int) string { // a valid body of exactly n bytes with key "k"
		prefix, suffix := `{"idempotencyKey":"k","pad":"`, `"}`
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	keyBody := func(key string) string {
		b, _ := json.Marshal(map[string]string{"idempotencyKey": key})
		return string(b)
	}
	longest := strings.Repeat("é", MaxKeyBytes/2) // 2 bytes each: counts bytes, not runes
	cases := []extractCase{
		{Name: "body at the limit", Source: "body:idempotencyKey",
			Message: events.SQSMessage{Body: bodyOf(testMaxBody)}, WantKey: "k"},
		{Name: "body one byte over the limit", Source: "body:idempotencyKey",
			Message:  events.SQSMessage{Body: bodyOf(testMaxBody + 1)},
			WantCode: CodeBodyTooLarge, WantReason: "message body is 262145 bytes, larger than the limit of 262144"},
		{Name: "oversize body with attribute source", Source: "attribute:IdempotencyKey",
			Message: events.SQSMessage{Body: strings.Repeat("x", 11), MessageAttributes: map[string]events.SQSMessageAttribute{
				"IdempotencyKey": {DataType: "String", StringValue: strp("k")}}},
			MaxBody: 10, WantCode: CodeBodyTooLarge, WantReason: "message body is 11 bytes, larger than the limit of 10"},
		{Name: "no limit when maxBody is negative", Source: "body:idempotencyKey",
			Message: events.SQSMessage{Body: bodyOf(testMaxBody + 1)}, MaxBody: -1, WantKey: "k"},
		{Name: "key at MaxKeyBytes", Source: "body:idempotencyKey",
			Message: events.SQSMessage{Body: keyBody(longest)}, WantKey: longest},
		{Name: "key one byte over MaxKeyBytes", Source: "body:idempotencyKey",
			Message:  events.SQSMessage{Body: keyBody(longest + "x")},
			WantCode: CodeValueTooLong, WantReason: `body field "idempotencyKey" is 513 bytes, longer than the limit of 512`},
		{Name: "attribute key too long", Source: "attribute:K",
			Message: events.SQSMessage{Body: "x", MessageAttributes: map[string]events.SQSMessageAttribute{
				"K": {DataType: "String", StringValue: strp(strings.Repeat("a", MaxKeyBytes+1))}}},
			WantCode: CodeValueTooLong, WantReason: `message attribute "K" is 513 bytes, longer than the limit of 512`},
		{Name: "attribute key invalid UTF-8", Source: "attribute:K",
			Message: events.SQSMessage{Body: "x", MessageAttributes: map[string]events.SQSMessageAttribute{
				"K": {DataType: "String", StringValue: strp("a\xffb")}}},
			WantCode: CodeValueInvalid, WantReason: `message attribute "K" is not valid UTF-8`},
		{Name: "body invalid UTF-8", Source: "body:idempotencyKey",
			Message:  events.SQSMessage{Body: "{\"idempotencyKey\":\"a\xffb\"}"},
			WantCode: CodeBodyNotJSON, WantReason: "message body is not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { checkExtract(t, c) })
	}
}

func TestExtractUnparsedSource(t *testing.T) {
	for _, src := range []Source{{}, {Kind: SourceBody}, {Kind: 7, Name: "k"}, {Kind: SourceAttribute, Name: "bad name"}} {
		_, err := src.Extract(events.SQSMessage{Body: `{"k":"v"}`}, 0)
		var ie *InputError
		if !errors.Is(err, ErrInvalidSource) || errors.As(err, &ie) {
			t.Errorf("%#v.Extract: err = %v, want ErrInvalidSource and no InputError", src, err)
		}
	}
}

func TestValidateKey(t *testing.T) {
	cases := []struct {
		key     string
		code    Code
		problem string
	}{
		{"a", "", ""},
		{" a ", "", ""},
		{strings.Repeat("k", MaxKeyBytes), "", ""},
		{"", CodeValueEmpty, "is empty"},
		{"\t \n", CodeValueEmpty, "is only whitespace"},
		{"\u00a0\u2003", CodeValueEmpty, "is only whitespace"},
		{strings.Repeat("k", MaxKeyBytes+1), CodeValueTooLong, "is 513 bytes, longer than the limit of 512"},
		{"\xc3", CodeValueInvalid, "is not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			err := ValidateKey(c.key)
			if c.code == "" {
				if err != nil {
					t.Fatalf("ValidateKey = %v, want nil", err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Code != c.code || ke.Problem != c.problem {
				t.Fatalf("ValidateKey = %#v, want code %s problem %q", err, c.code, c.problem)
			}
			if !strings.Contains(err.Error(), c.problem) {
				t.Errorf("Error() = %q, want the problem", err)
			}
		})
	}
}

// encoding/json decodes a \u escape of a lone UTF-16 surrogate to U+FFFD, so without a check
// of the JSON text "order-\ud800", "order-\udbff", "order-\udfff" and "order-\ufffd" would all
// be the key "order-\uFFFD": four different messages, one idempotency record.
func TestExtractSurrogateEscapes(t *testing.T) {
	lone := func(esc string) string {
		return `body field "idempotencyKey" contains the lone surrogate escape ` + esc
	}
	cases := []struct {
		name, value string // value: the key's JSON text between the quotes
		wantKey     string
		wantReason  string // "": accepted
	}{
		{"high", `order-\ud800`, "", lone(`\ud800`)},
		{"last high", `order-\udbff`, "", lone(`\udbff`)},
		{"low", `order-\udfff`, "", lone(`\udfff`)},
		{"first low", `\udc00order`, "", lone(`\udc00`)},
		{"upper-case hex", `order-\uD800`, "", lone(`\uD800`)},
		{"high then a plain character", `\ud83dx`, "", lone(`\ud83d`)},
		{"high then a non-surrogate escape", `\ud83d\u0041`, "", lone(`\ud83d`)},
		{"high then another escape kind", `\ud83d\n`, "", lone(`\ud83d`)},
		{"two highs then a low", `\ud83d\ud83d\ude00`, "", lone(`\ud83d`)},
		{"low then high: a pair in the wrong order", `\ude00\ud83d`, "", lone(`\ude00`)},
		{"escaped backslash before the lone escape", `\\\ud800`, "", lone(`\ud800`)},
		{"U+FFFD escape", `order-\ufffd`, "order-\uFFFD", ""},
		{"U+FFFD itself", "order-\uFFFD", "order-\uFFFD", ""},
		{"pair", `order-\ud83d\ude00`, "order-😀", ""},
		{"pair in upper case", `\uD83D\uDE00`, "😀", ""},
		{"last pair", `\udbff\udfff`, "\U0010FFFF", ""},
		{"pair then more text", `\ud800\udc00x`, "\U00010000x", ""},
		{"escaped backslash, then text that looks like an escape", `\\ud800`, `\ud800`, ""},
		{"the character itself", "order-😀", "order-😀", ""},
	}
	src := Source{Kind: SourceBody, Name: "idempotencyKey"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := extractCase{Source: src.String(), Message: events.SQSMessage{Body: `{"idempotencyKey":"` + c.value + `"}`},
				WantKey: c.wantKey}
			if c.wantReason != "" {
				want.WantCode, want.WantReason = CodeValueInvalid, c.wantReason
			}
			checkExtract(t, want)
		})
	}
}

// The regression itself: the four keys of the report never share a key. The three lone
// surrogates are bad input; the genuine U+FFFD escape is a key like any other.
func TestExtractLoneSurrogatesDoNotCollapse(t *testing.T) {
	src := Source{Kind: SourceBody, Name: "idempotencyKey"}
	seen := map[string]string{}
	for _, esc := range []string{`\ud800`, `\udbff`, `\udfff`, `\ufffd`} {
		body := `{"idempotencyKey":"order-` + esc + `"}`
		key, err := src.Extract(events.SQSMessage{Body: body}, 0)
		if err != nil {
			if ie := (*InputError)(nil); !errors.As(err, &ie) || ie.Code != CodeValueInvalid || !strings.Contains(ie.Reason, "lone surrogate") {
				t.Errorf("%s: err = %v, want an *InputError value_invalid about the lone surrogate", body, err)
			}
			if esc == `\ufffd` {
				t.Errorf("%s: rejected (%v), but \\ufffd is a real character", body, err)
			}
			continue
		}
		if esc != `\ufffd` {
			t.Errorf("%s: accepted as key %q, want bad input", body, key)
		}
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s both give key %q", other, body, key)
		}
		seen[key] = body
	}
}
