package consume

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// invoice is a work item's payload as a user's consumer reads it.
type invoice struct {
	Customer string `json:"customer"`
	Cents    int    `json:"cents"`
}

func (i invoice) Validate() error {
	if i.Cents <= 0 {
		return errors.New("cents must be above 0")
	}
	return nil
}

// dispatched is the body the dispatcher sends for one item: the same type it encodes with.
func dispatched(t *testing.T, key string, payload string) string {
	t.Helper()
	b, err := json.Marshal(msgkey.DispatchMessage[json.RawMessage]{IdempotencyKey: key, Job: "billing", Occurrence: "2026-11-25T03:00:00Z",
		ItemID: "item-" + key, Payload: json.RawMessage(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// consume.JSON decodes each body into the effect's type, through DynamoDB Local: a
// dispatcher message reaches the effect typed (payload, occurrence); a payload of the wrong
// shape and one its type's Validate refuses go to the DLQ at once with their codes, the effect
// not run, and the rest of the batch goes on.
func TestJSONEffect(t *testing.T) {
	var got []msgkey.DispatchMessage[invoice]
	hs := newHarness(t, nil, func(*slog.Logger) Effect {
		return JSON(func(_ context.Context, msg Message, m msgkey.DispatchMessage[invoice]) ([]byte, error) {
			got = append(got, m)
			return nil, nil
		})
	})
	dl := &fakeDeadLetter{}
	hs.h.WithDeadLetter(dl)
	failed, recs, _, metrics := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
		record("good", dispatched(t, "inv-1", `{"customer":"acme","cents":1200}`)),
		record("shape", dispatched(t, "inv-2", `{"customer":"acme","cents":"twelve"}`)),
		record("refused", dispatched(t, "inv-3", `{"customer":"acme","cents":0}`)),
	}})
	if len(failed) != 0 || len(got) != 1 || got[0].Payload != (invoice{"acme", 1200}) || got[0].ItemID != "item-inv-1" || got[0].Job != "billing" {
		t.Fatalf("failed %v, effect saw %+v", failed, got)
	}
	if at, err := got[0].OccurrenceTime(); err != nil || at.Hour() != 3 {
		t.Errorf("OccurrenceTime = %v, %v", at, err)
	}
	for id, want := range map[string][2]string{
		"shape":   {string(CodeBodyMismatch), `the body does not decode into msgkey.DispatchMessage[github.com/idempotent-sqs/pipeline/functions/consume.invoice]: field "payload.cents" is JSON string, not int`},
		"refused": {string(CodeBodyInvalid), "refuses the body: cents must be above 0"},
	} {
		d, ok := dl.byID()[id]
		if !ok || d.code != want[0] || !strings.Contains(d.reason, want[1]) {
			t.Errorf("%s: dead-lettered %+v (ok %v), want code %s and %q", id, d, ok, want[0], want[1])
		}
		if recs[id]["outcome"] != telemetry.OutcomeInvalidInput || recs[id]["deadLettered"] != true {
			t.Errorf("%s: line %v", id, recs[id])
		}
	}
	if metrics["Processed"] != 1 || metrics["InvalidInput"] != 2 || metrics["DeadLettered"] != 2 {
		t.Errorf("metrics %v", metrics)
	}
}

// order validates through a pointer receiver.
type order struct{ ID string }

func (o *order) Validate() error {
	if o.ID == "" {
		return errors.New("id is empty")
	}
	return nil
}

// What JSON decides for bodies the consumer's key extraction lets through (a key in an
// attribute, say): each bad body is a BodyError with its code, which is ErrInvalidInput.
func TestDecodeBodyDecisions(t *testing.T) {
	for _, tc := range []struct {
		body, code, reason string
	}{
		{`{"ID":"o-1"}`, "", ""},
		{`{"ID":"o-1","extra":true}`, "", ""}, // fields the type lacks are ignored
		{``, string(CodeBodyNotJSON), "the body is not JSON: EOF"},
		{`not json`, string(CodeBodyNotJSON), "the body is not JSON: invalid character 'o' in literal null"},
		{`{"ID":"o-1"`, string(CodeBodyNotJSON), "the body is not JSON: unexpected EOF"},
		{`{"ID":"o-1"} {"ID":"o-2"}`, string(CodeBodyNotJSON), "the body holds more than one JSON value"},
		{`{"ID":7}`, string(CodeBodyMismatch), `field "ID" is JSON number, not string`},
		{`[1,2]`, string(CodeBodyMismatch), "the body does not decode into consume.order"},
		{`{"ID":""}`, string(CodeBodyInvalid), "consume.order refuses the body: id is empty"},
		{`null`, string(CodeBodyInvalid), "id is empty"}, // a struct T: null leaves it zero, which Validate refuses
	} {
		_, err := decodeBody[order](tc.body)
		var be *BodyError
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%q: %v, want it decoded", tc.body, err)
		case tc.code != "" && (!errors.As(err, &be) || string(be.Code) != tc.code || !strings.Contains(be.Reason, tc.reason) || !errors.Is(err, ErrInvalidInput)):
			t.Errorf("%q: %v, want a BodyError %s with %q that is ErrInvalidInput", tc.body, err, tc.code, tc.reason)
		}
	}
}

// Nil pointers never reach Validate (which would panic, and the batch would retry the record
// instead of dead-lettering it): a null body for a pointer T is bad input, and a dispatcher
// message of a pointer payload type without a payload is not validated.
func TestDecodeBodyNilPointers(t *testing.T) {
	_, err := decodeBody[*order](`null`)
	var be *BodyError
	if !errors.As(err, &be) || be.Code != CodeBodyInvalid || be.Reason != "the body is null, not a *consume.order" {
		t.Errorf("null into *order: %v", err)
	}
	if _, err := decodeBody[*order](`{"ID":""}`); !errors.As(err, &be) || be.Code != CodeBodyInvalid {
		t.Errorf("*order refusing: %v", err)
	}
	m, err := decodeBody[msgkey.DispatchMessage[*invoice]](`{"idempotencyKey":"k","itemId":"i"}`)
	if err != nil || m.Payload != nil {
		t.Errorf("no payload: %+v, %v", m, err)
	}
	if _, err := decodeBody[msgkey.DispatchMessage[*invoice]](`{"idempotencyKey":"k","payload":{"cents":0}}`); !errors.As(err, &be) || be.Code != CodeBodyInvalid {
		t.Errorf("a payload *invoice refuses: %v", err)
	}
}
