package msgkey

import "fmt"

// Code classifies an *InputError for metrics, alarms and tests; its values are stable, unlike
// the wording of Reason.
type Code string

// Codes of InputError and KeyError.
const (
	CodeEmptyBody      Code = "empty_body"      // the message body is empty
	CodeBodyTooLarge   Code = "body_too_large"  // the body exceeds the configured maximum
	CodeBodyNotJSON    Code = "body_not_json"   // body source: not JSON (or not UTF-8)
	CodeBodyNotObject  Code = "body_not_object" // body source: JSON, but not an object
	CodeValueMissing   Code = "value_missing"   // field or attribute absent (or attribute without value)
	CodeValueAmbiguous Code = "value_ambiguous" // body field present more than once
	CodeValueWrongType Code = "value_wrong_type"
	CodeValueEmpty     Code = "value_empty"    // empty or whitespace only
	CodeValueTooLong   Code = "value_too_long" // longer than MaxKeyBytes
	CodeValueInvalid   Code = "value_invalid"  // not valid UTF-8, or a lone surrogate escape in the JSON
)

// InputError reports a message that does not carry a usable value at its Source. It is bad
// input, not a transient failure: retrying the same message gives the same error.
type InputError struct {
	Source Source // where the value was looked for
	Code   Code   // stable classification
	Reason string // human-readable, names the field or attribute and what is wrong
}

func (e *InputError) Error() string {
	return fmt.Sprintf("bad input (%s): %s", e.Source, e.Reason)
}

// KeyError is returned by ValidateKey.
type KeyError struct {
	Code    Code
	Problem string // e.g. `is 600 bytes, longer than the limit of 512`
}

func (e *KeyError) Error() string { return "invalid idempotency key: value " + e.Problem }
