package idempotency

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// ReservedAttrs is exactly what records hold besides the key, read back from DynamoDB Local
// in every state: in progress (seen from inside the handler), completed with a stored result
// and a payload hash, and completed with the result dropped.
func TestReservedAttrsAreWhatRecordsWrite(t *testing.T) {
	table := newTable(t, "")
	g, err := New(srv.Client(WithoutSDKRetries), Config{TableName: table, StoreResult: true, ValidatePayload: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	scan := func(ctx context.Context) {
		out, err := srv.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			for name := range item {
				seen[name] = true
			}
		}
	}
	for key, result := range map[string][]byte{"stored": []byte("ok"), "dropped": bytes.Repeat([]byte("x"), 410*1024)} {
		res, err := g.Run(t.Context(), Request{Key: key, Payload: []byte(key)}, func(ctx context.Context) ([]byte, error) {
			scan(ctx)
			return result, nil
		})
		if err != nil || res.ResultDropped != (key == "dropped") {
			t.Fatalf("Run(%s) = %+v, %v", key, res, err)
		}
	}
	scan(t.Context())
	delete(seen, DefaultPartitionKeyAttr)
	got := slices.Sorted(maps.Keys(seen))
	if want := slices.Sorted(slices.Values(ReservedAttrs())); !slices.Equal(got, want) {
		t.Errorf("records hold %v besides the key, ReservedAttrs() = %v", got, want)
	}
}

// New refuses every reserved name as either key attribute, naming the field and the value.
func TestNewRefusesEveryReservedAttrAsKey(t *testing.T) {
	for _, name := range ReservedAttrs() {
		for field, cfg := range map[string]Config{
			"PartitionKeyAttr": {TableName: "t", PartitionKeyAttr: name},
			"SortKeyAttr":      {TableName: "t", SortKeyAttr: name},
		} {
			_, err := New(&dynamodb.Client{}, cfg)
			want := "Config." + field + ` = "` + name + `" is an attribute the idempotency record writes: the table's key attributes need other names (the default partition key is "id")`
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
				t.Errorf("New with %s %q = %v, want ErrInvalidConfig with %q", field, name, err, want)
			}
		}
	}
}

// The list is the caller's to change.
func TestReservedAttrsReturnsACopy(t *testing.T) {
	ReservedAttrs()[0] = "sk"
	if slices.Contains(ReservedAttrs(), "sk") {
		t.Error("changing the returned slice changed ReservedAttrs")
	}
}
