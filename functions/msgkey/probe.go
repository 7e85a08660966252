package msgkey

import "github.com/idempotent-sqs/pipeline/functions/contract"

// A probe is a message that proves a pipeline works without running its business effect:
// `pipelinectl verify` sends one to the queue, and asks the dispatcher to send one. The
// consumer takes it through the idempotency record of ProbeKeyPrefix+id with a no-op; keys
// with that prefix are reserved for probes. constructs/heartbeat's schedule sends one every
// few minutes.
const (
	// Deprecated: use contract.AttrProbe, where every sender and the consumer agree on it.
	AttrProbe = contract.AttrProbe
	// Deprecated: use contract.ProbeKeyPrefix.
	ProbeKeyPrefix = contract.ProbeKeyPrefix
)

// ProbeIDRule is what ValidProbeID accepts, as error messages say it.
const ProbeIDRule = "a probe id is 1 to 64 letters, digits, '-', '_', '.' and ':'"

// ValidProbeID reports a probe id the consumer and dispatcher accept: 1 to 64 ASCII letters,
// digits, '-', '_', '.' and ':' (pipelinectl verify's ids, and the heartbeat's
// "heartbeat-<scheduled time>", e.g. heartbeat-2026-11-25T03:05:00Z).
func ValidProbeID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':') {
			return false
		}
	}
	return true
}
