package consume

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// The JSON escapes "\ud800", "\udbff" and "\udfff" are lone UTF-16 surrogates, which
// encoding/json decodes to U+FFFD like the genuine "\ufffd": before msgkey rejected them,
// these four messages all had the key "order-\uFFFD" and shared one idempotency record, so
// only one of them ever ran its effect. Each lone one is bad input now; "\ufffd" is a key.
var surrogateBodies = map[string]string{
	"lone-high":      `{"idempotencyKey":"order-\ud800"}`,
	"lone-high-last": `{"idempotencyKey":"order-\udbff"}`,
	"lone-low":       `{"idempotencyKey":"order-\udfff"}`,
	"replacement":    `{"idempotencyKey":"order-\ufffd"}`,
}

var loneSurrogateIDs = []string{"lone-high", "lone-high-last", "lone-low"}

func surrogateEvent() events.SQSEvent {
	var ev events.SQSEvent
	for _, id := range append([]string{"replacement"}, loneSurrogateIDs...) {
		ev.Records = append(ev.Records, record(id, surrogateBodies[id]))
	}
	return ev
}

// tableIDs returns every partition key value in table, sorted, read from DynamoDB Local.
func tableIDs(t *testing.T, table string) []string {
	t.Helper()
	out, err := srv.Client().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	var ids []string
	for _, item := range out.Items {
		id, _ := item["id"].(*types.AttributeValueMemberS)
		if id == nil {
			t.Fatalf("item without a string id: %v", item)
		}
		ids = append(ids, id.Value)
	}
	sort.Strings(ids)
	return ids
}

// checkLoneSurrogateLine checks the record line of a message rejected for a lone surrogate.
func checkLoneSurrogateLine(t *testing.T, id string, line map[string]any) {
	t.Helper()
	reason, _ := line["reason"].(string)
	if line["outcome"] != telemetry.OutcomeInvalidInput || line["reasonCode"] != string(msgkey.CodeValueInvalid) ||
		!strings.Contains(reason, "lone surrogate escape") || line["idempotencyKey"] != "" {
		t.Errorf("%s (%s): line %v, want outcome invalid_input, reasonCode value_invalid, a reason naming the lone surrogate escape and no key",
			id, surrogateBodies[id], line)
	}
}

func TestLoneSurrogateKeysAreInvalidInput(t *testing.T) {
	t.Run("reported for the redrive policy", func(t *testing.T) {
		hs := newHarness(t, nil, nil)
		failed, recs, effects, metrics := hs.invoke(surrogateEvent())

		if !reflect.DeepEqual(failed, loneSurrogateIDs) {
			t.Errorf("failed = %v, want the three lone surrogates %v", failed, loneSurrogateIDs)
		}
		for _, id := range loneSurrogateIDs {
			checkLoneSurrogateLine(t, id, recs[id])
		}
		if r := recs["replacement"]; r["outcome"] != telemetry.OutcomeProcessed || r["idempotencyKey"] != "order-\uFFFD" {
			t.Errorf("replacement: line %v, want processed with key order-\\uFFFD", r)
		}
		if !reflect.DeepEqual(effects, []string{"order-\uFFFD"}) {
			t.Errorf("effects = %q, want only order-\\uFFFD", effects)
		}
		if metrics["InvalidInput"] != 3 || metrics["Processed"] != 1 || metrics["Failed"] != 3 || metrics["Duplicate"] != 0 {
			t.Errorf("metrics = %v", metrics)
		}
		// One record, the genuine U+FFFD's: the lone surrogates reached no record at all, so
		// none of them can be taken for (or block) another message's key.
		if ids := tableIDs(t, hs.table); !reflect.DeepEqual(ids, []string{"consumer#order-\uFFFD"}) {
			t.Errorf("records %q, want only consumer#order-\\uFFFD", ids)
		}

		// Redelivered, each lone surrogate is rejected again (not taken as a duplicate of the
		// processed key), and the genuine one is a duplicate of itself.
		failed, recs, effects, _ = hs.invoke(surrogateEvent())
		if !reflect.DeepEqual(failed, loneSurrogateIDs) || len(effects) != 0 || recs["replacement"]["outcome"] != telemetry.OutcomeDuplicate {
			t.Errorf("redelivery: failed %v effects %q replacement %v", failed, effects, recs["replacement"])
		}
	})

	t.Run("dead-lettered at first receive", func(t *testing.T) {
		hs := newHarness(t, nil, nil)
		dl := &fakeDeadLetter{}
		hs.h.WithDeadLetter(dl)
		ev := surrogateEvent()
		failed, recs, effects, metrics := hs.invoke(ev)

		if len(failed) != 0 {
			t.Errorf("failed = %v, want none: the lone surrogates are in the DLQ", failed)
		}
		got := dl.byID()
		if len(dl.got) != len(loneSurrogateIDs) {
			t.Errorf("dead-lettered %d records, want %d", len(dl.got), len(loneSurrogateIDs))
		}
		for _, id := range loneSurrogateIDs {
			d, ok := got[id]
			if !ok || d.code != string(msgkey.CodeValueInvalid) || !strings.Contains(d.reason, "lone surrogate escape") ||
				d.rec.Body != surrogateBodies[id] {
				t.Errorf("%s: dead-lettered %+v (ok %v), want code value_invalid, the lone surrogate in the reason, the body unchanged", id, d, ok)
			}
			checkLoneSurrogateLine(t, id, recs[id])
			if recs[id]["deadLettered"] != true {
				t.Errorf("%s: line %v, want deadLettered=true", id, recs[id])
			}
		}
		if !reflect.DeepEqual(effects, []string{"order-\uFFFD"}) || metrics["DeadLettered"] != 3 || metrics["Processed"] != 1 {
			t.Errorf("effects %q metrics %v", effects, metrics)
		}
		if ids := tableIDs(t, hs.table); !reflect.DeepEqual(ids, []string{"consumer#order-\uFFFD"}) {
			t.Errorf("records %q, want only consumer#order-\\uFFFD", ids)
		}
	})

	// The tenant is a key part too: with a composite key, tenants that differ only in a lone
	// surrogate would share a partition.
	t.Run("tenant", func(t *testing.T) {
		hs := newHarness(t, map[string]string{"IDEMPOTENCY_SORT_KEY": "sk", "IDEMPOTENCY_TENANT_SOURCE": "body:tenant"}, nil)
		failed, recs, effects, _ := hs.invoke(events.SQSEvent{Records: []events.SQSMessage{
			record("t-lone", `{"idempotencyKey":"k","tenant":"acme-\udc00"}`),
			record("t-replacement", `{"idempotencyKey":"k","tenant":"acme-\ufffd"}`)}})
		if !reflect.DeepEqual(failed, []string{"t-lone"}) || !reflect.DeepEqual(effects, []string{"k"}) {
			t.Errorf("failed %v effects %q, want t-lone failed and one effect", failed, effects)
		}
		reason, _ := recs["t-lone"]["reason"].(string)
		if recs["t-lone"]["outcome"] != telemetry.OutcomeInvalidInput || !strings.Contains(reason, `body field "tenant" contains the lone surrogate escape \udc00`) {
			t.Errorf("t-lone: line %v", recs["t-lone"])
		}
		if ids := tableIDs(t, hs.table); !reflect.DeepEqual(ids, []string{"consumer#acme-\uFFFD"}) {
			t.Errorf("records %q, want only consumer#acme-\\uFFFD", ids)
		}
	})
}
