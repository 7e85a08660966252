package msgkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// SourceKind says where a Source looks for its value.
type SourceKind int

// Source kinds. The zero value is invalid, so a Source that was never parsed fails loudly.
const (
	SourceBody      SourceKind = iota + 1 // a top-level field of the JSON message body
	SourceAttribute                       // a String message attribute
)

func (k SourceKind) String() string {
	switch k {
	case SourceBody:
		return "body"
	case SourceAttribute:
		return "attribute"
	}
	return fmt.Sprintf("SourceKind(%d)", int(k))
}

// Source names where a message carries a value: its idempotency key, or a tenant id.
type Source struct {
	Kind SourceKind
	Name string // JSON field name (exact, case-sensitive) or message attribute name
}

// String returns the form ParseSource accepts, e.g. "body:idempotencyKey".
func (s Source) String() string { return s.Kind.String() + ":" + s.Name }

// ErrInvalidSource is wrapped by every error ParseSource returns (it is contract.ErrSource).
var ErrInvalidSource = contract.ErrSource

// ParseSource parses "body:<json field>" or "attribute:<message attribute name>", by the
// grammar of package contract, which constructs/consumer checks its KeySource and
// TenantSource props with: the text is taken exactly as given (no trimming). Attribute names
// must follow the SQS rules (1-256 characters of A-Za-z0-9 _ - ., no leading, trailing or
// doubled period, no "AWS." or "Amazon." prefix), since any other name can never be present
// on a message. Body field names may be any non-empty string of valid UTF-8 up to 256 bytes.
func ParseSource(s string) (Source, error) {
	kind, name, err := contract.ParseSource(s)
	if err != nil {
		return Source{}, err
	}
	if kind == contract.SourceAttribute {
		return Source{Kind: SourceAttribute, Name: name}, nil
	}
	return Source{Kind: SourceBody, Name: name}, nil
}

func (s Source) validateName() error { return contract.CheckSourceName(s.Kind.String(), s.Name) }

// Extract returns the value s names in msg. Every problem with the message is an *InputError
// (use errors.As) with a Code and a Reason fit for a log line; a Source that was never parsed
// gives an error wrapping ErrInvalidSource instead, since that is a bug, not bad input.
//
// The body is checked first, whatever the source: empty, or larger than maxBody bytes
// (maxBody <= 0: no limit), is bad input. For a body source the body must then be a single
// JSON object in valid UTF-8, holding the field exactly once (names match exactly, unlike
// encoding/json's case-insensitive struct matching), as a string. For an attribute source the
// attribute must have a String data type (custom "String.<label>" types included) and a
// value. Unknown fields and attributes are ignored. The value is then checked by ValidateKey.
func (s Source) Extract(msg events.SQSMessage, maxBody int) (string, error) {
	if err := s.validateName(); err != nil || (s.Kind != SourceBody && s.Kind != SourceAttribute) {
		return "", fmt.Errorf("%w %q: not parsed with ParseSource", ErrInvalidSource, s.String())
	}
	if msg.Body == "" {
		return "", s.bad(CodeEmptyBody, "message body is empty")
	}
	if maxBody > 0 && len(msg.Body) > maxBody {
		return "", s.bad(CodeBodyTooLarge, fmt.Sprintf("message body is %d bytes, larger than the limit of %d", len(msg.Body), maxBody))
	}
	var (
		value string
		err   *InputError
	)
	if s.Kind == SourceBody {
		value, err = s.fromBody(msg.Body)
	} else {
		value, err = s.fromAttribute(msg.MessageAttributes)
	}
	if err != nil {
		return "", err
	}
	if err := s.checkValue(value); err != nil {
		return "", err
	}
	return value, nil
}

func (s Source) fromBody(body string) (string, *InputError) {
	if !utf8.ValidString(body) {
		// encoding/json would replace invalid bytes with U+FFFD, so different keys could
		// collapse into one; JSON (RFC 8259) requires UTF-8 anyway.
		return "", s.bad(CodeBodyNotJSON, "message body is not valid UTF-8, so it is not JSON")
	}
	if !json.Valid([]byte(body)) {
		var v json.RawMessage
		detail := "invalid JSON"
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			detail = err.Error()
		}
		return "", s.bad(CodeBodyNotJSON, "message body is not JSON: "+detail)
	}
	trimmed := bytes.TrimLeft([]byte(body), " \t\r\n")
	if trimmed[0] != '{' {
		return "", s.bad(CodeBodyNotObject, fmt.Sprintf("message body is a JSON %s, want an object with field %q", jsonKind(trimmed), s.Name))
	}

	raw, found, ierr := s.field(body)
	if ierr != nil {
		return "", ierr
	}
	switch {
	case found == 0:
		return "", s.bad(CodeValueMissing, fmt.Sprintf("body field %q is missing", s.Name))
	case found > 1:
		// encoding/json keeps the last one, other parsers the first: refuse to guess.
		return "", s.bad(CodeValueAmbiguous, fmt.Sprintf("body field %q appears %d times", s.Name, found))
	}
	if raw[0] != '"' {
		return "", s.bad(CodeValueWrongType, fmt.Sprintf("body field %q is a JSON %s, want a string", s.Name, jsonKind(raw)))
	}
	if esc := loneSurrogateEscape(raw); esc != "" {
		// encoding/json decodes every lone surrogate escape to U+FFFD, so "k\ud800",
		// "k\udfff" and "k\ufffd" would all be the key "k\uFFFD": distinct messages, one
		// record. A lone surrogate is no Unicode character, so the key cannot be kept as sent.
		return "", s.bad(CodeValueInvalid, fmt.Sprintf(
			`body field %q contains the lone surrogate escape %s, which is not a Unicode character (decoders turn it into U+FFFD, so distinct keys would merge): send the character itself, or a \uD800-\uDBFF escape followed by a \uDC00-\uDFFF escape`,
			s.Name, esc))
	}
	var value string
	if err := json.Unmarshal(raw, &value); err != nil {
		return "", s.bad(CodeBodyNotJSON, fmt.Sprintf("body field %q: %v", s.Name, err))
	}
	return value, nil
}

// field is the value of the object body's top-level field s.Name (the last one) and how
// often it appears; body is valid JSON and an object.
func (s Source) field(body string) (json.RawMessage, int, *InputError) {
	dec := json.NewDecoder(strings.NewReader(body))
	if _, err := dec.Token(); err != nil { // the opening '{', already known to be there
		return nil, 0, s.bad(CodeBodyNotJSON, "message body is not JSON: "+err.Error())
	}
	var (
		raw   json.RawMessage
		found int
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, s.bad(CodeBodyNotJSON, "message body is not JSON: "+err.Error())
		}
		name, _ := tok.(string) // object keys are always strings in valid JSON
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil && err != io.EOF {
			return nil, 0, s.bad(CodeBodyNotJSON, "message body is not JSON: "+err.Error())
		}
		if name == s.Name {
			found++
			raw = v
		}
	}
	return raw, found, nil
}

func (s Source) fromAttribute(attrs map[string]events.SQSMessageAttribute) (string, *InputError) {
	a, ok := attrs[s.Name]
	if !ok {
		return "", s.bad(CodeValueMissing, fmt.Sprintf("message attribute %q is missing", s.Name))
	}
	if a.DataType != "String" && !strings.HasPrefix(a.DataType, "String.") {
		return "", s.bad(CodeValueWrongType, fmt.Sprintf("message attribute %q has data type %q, want String", s.Name, a.DataType))
	}
	if a.StringValue == nil {
		return "", s.bad(CodeValueMissing, fmt.Sprintf("message attribute %q has data type %q but no string value", s.Name, a.DataType))
	}
	return *a.StringValue, nil
}

// checkValue applies ValidateKey and words its error for this source.
func (s Source) checkValue(v string) *InputError {
	err := ValidateKey(v)
	if err == nil {
		return nil
	}
	var ke *KeyError
	if !errors.As(err, &ke) {
		return s.bad(CodeValueInvalid, err.Error())
	}
	where := fmt.Sprintf("body field %q", s.Name)
	if s.Kind == SourceAttribute {
		where = fmt.Sprintf("message attribute %q", s.Name)
	}
	return s.bad(ke.Code, where+" "+ke.Problem)
}

func (s Source) bad(code Code, reason string) *InputError {
	return &InputError{Source: s, Code: code, Reason: reason}
}

// loneSurrogateEscape returns the first \u escape in lit (a valid JSON string literal) that is
// a UTF-16 surrogate but not half of a pair, as written, or "" when there is none. A pair is a
// \uD800-\uDBFF escape immediately followed by a \uDC00-\uDFFF escape. Surrogates can only
// come from escapes here: as raw bytes they are invalid UTF-8, which fromBody rejects first.
func loneSurrogateEscape(lit []byte) string {
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] != 'u' { // a two-byte escape such as \\ or \": skip both bytes
			i++
			continue
		}
		u := hex4(lit[i+2 : i+6])
		switch {
		case u >= 0xD800 && u <= 0xDBFF:
			if i+12 <= len(lit) && lit[i+6] == '\\' && lit[i+7] == 'u' {
				if low := hex4(lit[i+8 : i+12]); low >= 0xDC00 && low <= 0xDFFF {
					i += 11 // the pair
					continue
				}
			}
			return string(lit[i : i+6])
		case u >= 0xDC00 && u <= 0xDFFF:
			return string(lit[i : i+6])
		}
		i += 5
	}
	return ""
}

// hex4 is the value of the four hex digits of a \u escape (valid: lit passed json.Valid).
func hex4(b []byte) uint64 {
	u, _ := strconv.ParseUint(string(b), 16, 16)
	return u
}

// jsonKind names the type of the JSON value that raw (valid JSON, leading space allowed) starts.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
