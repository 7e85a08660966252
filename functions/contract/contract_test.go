package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/functions/contract"
)

func TestParseSource(t *testing.T) {
	tests := []struct {
		in, kind, name, err string
	}{
		{in: "body:idempotencyKey", kind: "body", name: "idempotencyKey"},
		{in: "body:order id", kind: "body", name: "order id"},
		{in: "body:a:b", kind: "body", name: "a:b"},
		{in: "attribute:Order.Key-1_x", kind: "attribute", name: "Order.Key-1_x"},
		{in: "idempotencyKey", err: `invalid key source "idempotencyKey": want "body:<json field>" or "attribute:<message attribute name>"`},
		{in: "header:Key", err: `invalid key source "header:Key": unknown kind "header", want "body:<json field>" or "attribute:<message attribute name>"`},
		{in: "Body:key", err: `unknown kind "Body"`},
		{in: "group", err: `invalid key source "group": want "body:<json field>"`},
		{in: "body:", err: `invalid key source "body:": empty body name`},
		{in: "body:" + strings.Repeat("é", 200), err: "body name is 400 bytes, longer than 256"},
		{in: "body:\xff", err: "body name is not valid UTF-8"},
		{in: "attribute:order id", err: `attribute name has ' ' at byte 5: SQS allows only A-Za-z0-9, '_', '-' and '.'`},
		{in: "attribute:.key", err: "attribute name starts or ends with '.', which SQS does not allow"},
		{in: "attribute:key.", err: "attribute name starts or ends with '.', which SQS does not allow"},
		{in: "attribute:a..b", err: "attribute name contains '..', which SQS does not allow"},
		{in: "attribute:Amazon.x", err: `attribute names starting with "AWS." or "Amazon." are reserved by SQS`},
	}
	for _, tt := range tests {
		kind, name, err := contract.ParseSource(tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseSource(%.30q) = %v, want %s:%s", tt.in, err, tt.kind, tt.name)
		case tt.err == "" && (kind != tt.kind || name != tt.name):
			t.Errorf("ParseSource(%.30q) = %q, %q, want %q, %q", tt.in, kind, name, tt.kind, tt.name)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, contract.ErrSource)):
			t.Errorf("ParseSource(%.30q) = %q, %q, %v; want an error wrapping ErrSource with %q", tt.in, kind, name, err, tt.err)
		}
	}
}

func TestParseTenantSource(t *testing.T) {
	if kind, name, err := contract.ParseTenantSource("group"); err != nil || kind != contract.TenantGroup || name != contract.TenantGroup {
		t.Errorf(`ParseTenantSource("group") = %q, %q, %v`, kind, name, err)
	}
	if kind, name, err := contract.ParseTenantSource("attribute:tenant"); err != nil || kind != "attribute" || name != "tenant" {
		t.Errorf(`ParseTenantSource("attribute:tenant") = %q, %q, %v`, kind, name, err)
	}
	for in, want := range map[string]string{
		"tenant":       `invalid key source "tenant": want "body:<json field>", "attribute:<message attribute name>" or "group" (the MessageGroupId)`,
		"Group":        `or "group"`,
		"attribute:.x": "attribute name starts or ends with '.'",
	} {
		if _, _, err := contract.ParseTenantSource(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTenantSource(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestCheckKeyPrefix(t *testing.T) {
	for _, ok := range []string{"orders", "orders v2", "bestellungen-ä", strings.Repeat("p", 1024)} {
		if err := contract.CheckKeyPrefix(ok); err != nil {
			t.Errorf("CheckKeyPrefix(%.20q) = %v, want nil", ok, err)
		}
	}
	for in, want := range map[string]string{
		"":                        "empty key prefix",
		"a#b":                     `key prefix contains "#", the separator of the record id`,
		strings.Repeat("p", 1025): "key prefix is 1025 bytes, longer than 1024",
		"a\xffb":                  "key prefix is not valid UTF-8",
	} {
		if err := contract.CheckKeyPrefix(in); err == nil || err.Error() != want {
			t.Errorf("CheckKeyPrefix(%.20q) = %v, want %q", in, err, want)
		}
	}
}

func TestCheckKeyAttributes(t *testing.T) {
	if err := contract.CheckPartitionKey("id"); err != nil {
		t.Errorf(`CheckPartitionKey("id") = %v`, err)
	}
	if err := contract.CheckSortKey("sk", "id"); err != nil {
		t.Errorf(`CheckSortKey("sk", "id") = %v`, err)
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{contract.CheckPartitionKey(""), "empty partition key attribute name"},
		{contract.CheckPartitionKey(strings.Repeat("p", 256)), "partition key attribute name is 256 bytes, longer than DynamoDB's 255"},
		{contract.CheckPartitionKey("a\xff"), "partition key attribute name is not valid UTF-8"},
		{contract.CheckPartitionKey("status"), `partition key attribute "status" is one of expiration, in_progress_expiration, status, data, validation, owner, attempt, result_dropped: ` +
			`the key attributes need names of their own, or every write would change the record's key`},
		{contract.CheckSortKey("pk", "pk"), `sort key attribute "pk" is one of pk, expiration,`},
		{contract.CheckSortKey("expiration", "id"), `sort key attribute "expiration" is one of id, expiration,`},
		{contract.CheckSortKey("", "id"), "empty sort key attribute name"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("got %v, want %q", tt.err, tt.want)
		}
	}
}
