package msgkey

import (
	"fmt"
	"reflect"
	"time"
)

// DispatchMessage is the JSON body of every message the dispatcher (functions/dispatch)
// sends, one per work item and scheduled occurrence, shared by both sides: the dispatcher
// encodes it, and a consumer decodes it (consume.JSON with DispatchMessage[YourPayload]).
// P is the type of the work item's payload; json.RawMessage keeps it as sent.
type DispatchMessage[P any] struct {
	// IdempotencyKey is the message's key, DispatchKey(Job, Occurrence, ItemID): the same
	// for every delivery, retry and re-dispatch of this item in this occurrence.
	IdempotencyKey string `json:"idempotencyKey"`
	// Job is the dispatcher's JOB_NAME.
	Job string `json:"job"`
	// Occurrence is the scheduled occurrence the run was for, RFC 3339 in UTC to the whole
	// minute (OccurrenceTime parses it). Its JSON name is "period", the name it had when keys
	// were derived from a configurable period, so consumers that read it keep working.
	Occurrence string `json:"period"`
	// ItemID is the work item's id.
	ItemID string `json:"itemId"`
	// Payload is the work item's payload; absent when the item has none.
	Payload P `json:"payload,omitempty"`
}

// OccurrenceTime is Occurrence as a time.
func (m DispatchMessage[P]) OccurrenceTime() (time.Time, error) {
	t, err := time.Parse(time.RFC3339, m.Occurrence)
	if err != nil {
		return time.Time{}, fmt.Errorf("occurrence %q: %w", m.Occurrence, err)
	}
	return t, nil
}

// Validate runs the payload's own Validate, when P (or *P) has one, so that consume.JSON
// refuses a payload its type refuses. A pointer P without a payload (nil) is not validated:
// the item had none.
func (m DispatchMessage[P]) Validate() error {
	if v := reflect.ValueOf(&m.Payload).Elem(); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	if v, ok := any(m.Payload).(interface{ Validate() error }); ok {
		return v.Validate()
	}
	if v, ok := any(&m.Payload).(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
