// Package msgkey holds the pipeline's rules for idempotency keys and SQS identifiers, shared by
// the dispatcher (which derives keys) and the consumer (which extracts them):
//
//   - Source and ParseSource name where a consumer finds a message's key: a top-level field of
//     the JSON body ("body:idempotencyKey") or a String message attribute
//     ("attribute:IdempotencyKey"). Source.Extract returns the key or an *InputError whose
//     Reason says, for the log, what is wrong with the message. Such a message is bad input
//     that no retry can fix: the consumer moves it to the dead-letter queue at its first
//     receive (Code and Reason in the copy's DeadLetterReason attribute) rather than drop it.
//     Only without a dead-letter queue URL, or when that send fails, does it report a failed
//     record and leave the move to the queue's redrive policy, after maxReceiveCount receives.
//   - DispatchKey derives a deterministic, collision-free key from a job name, a scheduled
//     occurrence (the scheduled time in UTC to the minute) and an item id, so a scheduler that
//     fires twice for the same occurrence produces the same keys and two occurrences never
//     share one.
//   - DeduplicationID and ValidateGroupID apply the SQS FIFO rules for MessageDeduplicationId
//     and MessageGroupId.
//
// Keys are taken verbatim: nothing is trimmed, case-folded or normalized, because two
// producers that disagree about whitespace or case must not have their messages silently
// merged (or split) by the consumer. What is rejected instead is a value that cannot be a
// sensible key: empty, whitespace only, not a JSON string, invalid UTF-8, a lone UTF-16
// surrogate escape such as \ud800 (decoders turn it into U+FFFD, which would merge distinct
// keys), or longer than MaxKeyBytes.
//
// Typical consumer use:
//
//	src, err := msgkey.ParseSource(os.Getenv("IDEMPOTENCY_KEY_SOURCE")) // once, at cold start
//	...
//	key, err := src.Extract(msg, 262144)
//	var bad *msgkey.InputError
//	if errors.As(err, &bad) {
//		log.Warn("bad input", "reason", bad.Reason)
//	}
package msgkey
