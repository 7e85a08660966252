// Package dlq is `pipelinectl dlq inspect` and `dlq redrive`: what is in a dead-letter
// queue, and moving it back once the cause is fixed.
//
// A redrive plans first (planner: which messages move, which stay by rule: bad input,
// older than the record TTL, behind those in a FIFO group), then moves with SQS's message
// move task where it can, else message by message (mover: receive, send, delete, each
// journaled so that a rerun after Ctrl-C or a network cut neither loses nor sends again
// what an earlier run moved). The summary says what is where and how to resume; the audit
// trail keeps what each --yes run did.
package dlq
