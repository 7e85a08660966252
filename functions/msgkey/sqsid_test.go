package msgkey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

const sqsPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

func hashHex(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

func TestDeduplicationID(t *testing.T) {
	long := strings.Repeat("a", 128)
	cases := []struct{ key, want string }{
		{"order-42", "order-42"},
		{"nightly#2025-01-02T03:04:00Z#item-1", "nightly#2025-01-02T03:04:00Z#item-1"},
		{sqsPunct, sqsPunct},
		{long, long},
		{long + "a", hashHex(long + "a")},
		{"with space", hashHex("with space")},
		{"café", hashHex("café")},
		{"tab\t", hashHex("tab\t")},
		{"", hashHex("")},
	}
	for _, c := range cases {
		got := DeduplicationID(c.key)
		if got != c.want {
			t.Errorf("DeduplicationID(%q) = %q, want %q", c.key, got, c.want)
		}
		checkSQSID(t, got)
	}
}

func checkSQSID(t testing.TB, id string) {
	t.Helper()
	if id == "" || len(id) > 128 {
		t.Fatalf("id %q: length %d, want 1-128", id, len(id))
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(sqsPunct, r)) {
			t.Fatalf("id %q: character %q not in the SQS alphabet", id, r)
		}
	}
}

func TestValidateGroupID(t *testing.T) {
	for _, ok := range []string{"tenant-1", "a", strings.Repeat("g", 128), sqsPunct, "ABCxyz019"} {
		if err := ValidateGroupID(ok); err != nil {
			t.Errorf("ValidateGroupID(%q) = %v, want nil", ok, err)
		}
	}
	cases := []struct{ id, msg string }{
		{"", "invalid SQS MessageGroupId: empty"},
		{strings.Repeat("g", 129), "129 characters, longer than 128"},
		{"tenant 1", `" " at byte 6 is not allowed`},
		{"ténant", `"é" at byte 1 is not allowed`},
		{"a\nb", `"\n" at byte 1 is not allowed`},
	}
	for _, c := range cases {
		err := ValidateGroupID(c.id)
		if !errors.Is(err, ErrInvalidGroupID) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("ValidateGroupID(%q) = %v, want ErrInvalidGroupID with %q", c.id, err, c.msg)
		}
	}
}
