package msgkey

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSource(t *testing.T) {
	valid := []struct {
		in   string
		want Source
	}{
		{"body:idempotencyKey", Source{Kind: SourceBody, Name: "idempotencyKey"}},
		{"attribute:IdempotencyKey", Source{Kind: SourceAttribute, Name: "IdempotencyKey"}},
		{"body:a:b", Source{Kind: SourceBody, Name: "a:b"}},
		{"body: spaced name ", Source{Kind: SourceBody, Name: " spaced name "}},
		{"attribute:a.b-c_D9", Source{Kind: SourceAttribute, Name: "a.b-c_D9"}},
		{"attribute:" + strings.Repeat("a", 256), Source{Kind: SourceAttribute, Name: strings.Repeat("a", 256)}},
	}
	for _, c := range valid {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseSource(c.in)
			if err != nil || got != c.want {
				t.Fatalf("ParseSource = %#v, %v; want %#v", got, err, c.want)
			}
			if got.String() != c.in {
				t.Errorf("String() = %q, want the input back", got.String())
			}
		})
	}

	invalid := []struct{ in, msg string }{
		{"", `want "body:<json field>" or "attribute:<message attribute name>"`},
		{"idempotencyKey", `want "body:<json field>" or "attribute:<message attribute name>"`},
		{"header:x", `unknown kind "header"`},
		{"Body:x", `unknown kind "Body"`},
		{" body:x", `unknown kind " body"`},
		{"group", `want "body:<json field>"`},
		{"body:", "empty body name"},
		{"attribute:", "empty attribute name"},
		{"body:" + strings.Repeat("a", 257), "body name is 257 bytes, longer than 256"},
		{"attribute:" + strings.Repeat("a", 257), "attribute name is 257 bytes, longer than 256"},
		{"body:\xff", "body name is not valid UTF-8"},
		{"attribute:a b", `attribute name has ' ' at byte 1`},
		{"attribute:ключ", `attribute name has 'к' at byte 0`},
		{"attribute:.a", "starts or ends with '.'"},
		{"attribute:a.", "starts or ends with '.'"},
		{"attribute:a..b", "contains '..'"},
		{"attribute:AWS.key", `"AWS." or "Amazon." are reserved`},
		{"attribute:amazon.key", `"AWS." or "Amazon." are reserved`},
	}
	for _, c := range invalid {
		t.Run("invalid "+c.in, func(t *testing.T) {
			got, err := ParseSource(c.in)
			if !errors.Is(err, ErrInvalidSource) {
				t.Fatalf("ParseSource = %#v, %v; want ErrInvalidSource", got, err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
			if got != (Source{}) {
				t.Errorf("got %#v alongside the error, want the zero Source", got)
			}
		})
	}
}

func TestSourceKindString(t *testing.T) {
	for k, want := range map[SourceKind]string{SourceBody: "body", SourceAttribute: "attribute", 0: "SourceKind(0)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(k), got, want)
		}
	}
}
