package msgkey

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes bounds a key (and a tenant id) in bytes. DynamoDB limits a partition key value
// to 2048 bytes and a sort key value to 1024. With a simple key the item id is
// "<prefix>#<key>"; with a composite key the key is the sort key and the tenant is part of the
// partition key "<prefix>#<tenant>". 512 bytes fits the sort key with half its room to spare
// and leaves 1535 bytes of partition key for the prefix, so no prefix a construct accepts can
// push a valid key over a DynamoDB limit. It is also far above any real key (UUIDs are 36
// bytes, DispatchKey results are typically under 100).
const MaxKeyBytes = 512

// ValidateKey reports (as a *KeyError) a key that is empty, only whitespace, not valid UTF-8
// or longer than MaxKeyBytes. Anything else is a valid key, taken verbatim.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return &KeyError{Code: CodeValueEmpty, Problem: "is empty"}
	case len(key) > MaxKeyBytes:
		return &KeyError{Code: CodeValueTooLong, Problem: fmt.Sprintf("is %d bytes, longer than the limit of %d", len(key), MaxKeyBytes)}
	case !utf8.ValidString(key):
		return &KeyError{Code: CodeValueInvalid, Problem: "is not valid UTF-8"}
	case strings.TrimSpace(key) == "":
		return &KeyError{Code: CodeValueEmpty, Problem: "is only whitespace"}
	}
	return nil
}

// dispatchSep joins the parts of a DispatchKey; escape makes sure it never occurs inside one.
const dispatchSep = "#"

var escaper = strings.NewReplacer("%", "%25", "#", "%23")

// DispatchKey returns the idempotency key of one work item of one scheduled occurrence of a
// job: "<job>#<occurrence>#<itemID>", each part with '%' written as "%25" and '#' as "%23".
// The dispatcher passes the occurrence as the schedule's scheduled time in UTC truncated to
// the minute, RFC 3339 (e.g. "2025-03-30T00:30:00Z"): distinct occurrences are distinct
// minutes, so they never share a key, while a retried or repeated invocation of one
// occurrence derives the same key. (A coarser unit, such as the UTC day, would merge runs:
// across a daylight-saving change two daily runs can fall on one UTC day.)
//
// The escape makes the mapping injective: the escaped parts contain no '#', so the key splits
// back into exactly one triple, and the escape itself is reversible. Without it ("a#b","c","d")
// and ("a","b#c","d") would share a key and one item would be silently skipped as a duplicate.
// The result is deterministic, readable in logs, and usually a valid DeduplicationID as is.
// Callers should check it with ValidateKey (long parts can exceed MaxKeyBytes).
func DispatchKey(job, occurrence, itemID string) string {
	return escaper.Replace(job) + dispatchSep + escaper.Replace(occurrence) + dispatchSep + escaper.Replace(itemID)
}
