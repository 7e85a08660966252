package msgkey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxSQSIDLen is the SQS limit for MessageDeduplicationId and MessageGroupId.
const MaxSQSIDLen = 128

// sqsIDChar reports whether SQS accepts b in a MessageDeduplicationId or MessageGroupId:
// alphanumerics and the punctuation !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~, which together are
// exactly the printable ASCII characters except space.
func sqsIDChar(b byte) bool { return b > ' ' && b <= '~' }

func validSQSID(s string) (bad int, ok bool) {
	for i := 0; i < len(s); i++ {
		if !sqsIDChar(s[i]) {
			return i, false
		}
	}
	return 0, true
}

// DeduplicationID returns a valid SQS MessageDeduplicationId for key: the key itself when it
// already is one (1-128 characters of the allowed alphabet), so the id stays readable in the
// console, otherwise the lowercase hex SHA-256 of the key (64 characters). It is deterministic,
// so every send of the same key carries the same id and SQS's 5-minute deduplication window
// drops the repeats. A key that is already 64 hex digits maps to itself; that another key
// hashes to exactly that string is a SHA-256 preimage, which is not a practical concern.
func DeduplicationID(key string) string {
	if _, ok := validSQSID(key); ok && key != "" && len(key) <= MaxSQSIDLen {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ErrInvalidGroupID is wrapped by every error ValidateGroupID returns.
var ErrInvalidGroupID = errors.New("invalid SQS MessageGroupId")

// ValidateGroupID checks the SQS rules for a MessageGroupId: 1-128 characters, each an ASCII
// letter or digit or one of !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~. Group ids are not hashed like
// deduplication ids: the group is the ordering unit a user chose and must stay recognizable.
func ValidateGroupID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidGroupID)
	case len(id) > MaxSQSIDLen:
		return fmt.Errorf("%w %.20q...: %d characters, longer than %d", ErrInvalidGroupID, id, len(id), MaxSQSIDLen)
	}
	if i, ok := validSQSID(id); !ok {
		_, size := utf8.DecodeRuneInString(id[i:])
		return fmt.Errorf("%w %q: %q at byte %d is not allowed; want ASCII letters, digits and punctuation",
			ErrInvalidGroupID, id, id[i:i+size], i)
	}
	return nil
}
