package msgkey

import (
	"strings"
	"testing"
)

func TestDispatchKey(t *testing.T) {
	cases := []struct{ job, occurrence, item, want string }{
		{"nightly", "2025-01-02T03:04:00Z", "item-1", "nightly#2025-01-02T03:04:00Z#item-1"},
		{"a#b", "p", "c", "a%23b#p#c"},
		{"a%23b", "p", "c", "a%2523b#p#c"},
		{"", "", "", "##"},
	}
	for _, c := range cases {
		if got := DispatchKey(c.job, c.occurrence, c.item); got != c.want {
			t.Errorf("DispatchKey(%q,%q,%q) = %q, want %q", c.job, c.occurrence, c.item, got, c.want)
		}
	}
}

// Triples that a plain strings.Join(parts, "#") would map to the same key.
func TestDispatchKeyInjective(t *testing.T) {
	triples := [][3]string{
		{"a#b", "c", "d"}, {"a", "b#c", "d"}, {"a", "b", "c#d"},
		{"a%23b", "c", "d"}, {"a#", "", "b"}, {"a", "#", "b"}, {"a", "", "#b"},
		{"%", "", ""}, {"%25", "", ""}, {"", "%", ""},
	}
	seen := map[string][3]string{}
	for _, tr := range triples {
		k := DispatchKey(tr[0], tr[1], tr[2])
		if prev, dup := seen[k]; dup {
			t.Errorf("DispatchKey(%q) == DispatchKey(%q) == %q", tr, prev, k)
		}
		seen[k] = tr
		if got := splitDispatchKey(t, k); got != tr {
			t.Errorf("key %q decodes to %q, want %q", k, got, tr)
		}
	}
}

// splitDispatchKey inverts DispatchKey; that it exists is the proof of injectivity.
func splitDispatchKey(t testing.TB, key string) [3]string {
	t.Helper()
	parts := strings.Split(key, "#")
	if len(parts) != 3 {
		t.Fatalf("key %q has %d parts, want 3", key, len(parts))
	}
	un := strings.NewReplacer("%23", "#", "%25", "%")
	return [3]string{un.Replace(parts[0]), un.Replace(parts[1]), un.Replace(parts[2])}
}
