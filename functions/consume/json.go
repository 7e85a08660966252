package consume

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
)

// Codes of the BodyError JSON reports, as the DeadLetterReason attribute and the log's reason
// code carry them.
const (
	CodeBodyNotJSON  = msgkey.CodeBodyNotJSON       // not JSON at all
	CodeBodyMismatch = msgkey.Code("body_mismatch") // JSON, but not the effect's type (a field of the wrong type)
	CodeBodyInvalid  = msgkey.Code("body_invalid")  // decoded, and refused by the type's Validate
)

// BodyError is the bad input JSON reports: a body that does not decode into the effect's
// type, or that the type's Validate refuses. It wraps ErrInvalidInput, so the message goes to
// the dead-letter queue at its first receive with DeadLetterReason "<Code>: <Reason>".
type BodyError struct {
	Code   msgkey.Code // CodeBodyNotJSON, CodeBodyMismatch or CodeBodyInvalid
	Reason string
}

func (e *BodyError) Error() string { return "bad input (body): " + e.Reason }

// Unwrap makes a BodyError an ErrInvalidInput.
func (e *BodyError) Unwrap() error { return ErrInvalidInput }

// Validator is what a body type implements to refuse content it decodes but cannot use (a
// missing field, an amount below zero): Validate's error becomes the dead-letter reason.
type Validator interface {
	Validate() error
}

// JSON returns an Effect that decodes each message's body into a T and calls effect with it:
// the start every effect on JSON bodies shares, and its one "is this bad input?" decision.
// A body that is not JSON, that does not decode into T (a field of the wrong type, a second
// JSON value after the first), or whose T (or *T) refuses it with Validate (a Validator) is
// bad input: the effect does not run and the message goes to the dead-letter queue at once
// (BodyError).
// Fields T does not have are ignored. For the dispatcher's messages T is
// msgkey.DispatchMessage[P], P the work item's payload type:
//
//	consume.Start(consume.JSON(func(ctx context.Context, msg consume.Message, m msgkey.DispatchMessage[Invoice]) ([]byte, error) {
//		return nil, bill(ctx, m.Payload)
//	}))
func JSON[T any](effect func(ctx context.Context, msg Message, body T) ([]byte, error)) Effect {
	return func(ctx context.Context, msg Message) ([]byte, error) {
		body, err := decodeBody[T](msg.Body)
		if err != nil {
			return nil, err
		}
		return effect(ctx, msg, body)
	}
}

func decodeBody[T any](raw string) (T, error) {
	var body T
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	if err := dec.Decode(&body); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			return body, &BodyError{Code: CodeBodyMismatch, Reason: fmt.Sprintf("the body does not decode into %T: field %q is JSON %s, not %s", body, typ.Field, typ.Value, typ.Type)}
		case errors.As(err, &syntax) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return body, &BodyError{Code: CodeBodyNotJSON, Reason: fmt.Sprintf("the body is not JSON: %v", err)}
		}
		return body, &BodyError{Code: CodeBodyMismatch, Reason: fmt.Sprintf("the body does not decode into %T: %v", body, err)}
	}
	if dec.More() {
		return body, &BodyError{Code: CodeBodyNotJSON, Reason: "the body holds more than one JSON value"}
	}
	if v := reflect.ValueOf(&body).Elem(); (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		// A body of JSON null: nothing to give the effect, and Validate on a nil pointer panics.
		return body, &BodyError{Code: CodeBodyInvalid, Reason: fmt.Sprintf("the body is null, not a %T", body)}
	}
	var v Validator
	switch b := any(body).(type) {
	case Validator:
		v = b
	default:
		if pb, ok := any(&body).(Validator); ok {
			v = pb
		}
	}
	if v != nil {
		if err := v.Validate(); err != nil {
			return body, &BodyError{Code: CodeBodyInvalid, Reason: fmt.Sprintf("%T refuses the body: %v", body, err)}
		}
	}
	return body, nil
}
