package dlq

// Usage is `pipelinectl help dlq`: both commands'.
const Usage = InspectUsage + "\n" + RedriveUsage

// InspectUsage is `pipelinectl dlq inspect -h`.
const InspectUsage = `pipelinectl dlq inspect: what is in a dead-letter queue, without consuming it.

  Counts (SQS's approximate ones, and what a scan received), messages grouped by
  DeadLetterReason code (the consumer's reason for bad input; "redrive policy" for
  messages SQS moved after maxReceiveCount receives), the oldest of each group, a sample
  per group (body truncated, attributes), and on a FIFO queue the message groups.

  Read-only, best effort: the scan holds each received message invisible (--hold, at most
  30 s) until the scan ends, then makes every one visible again at once. For those seconds
  another reader of the DLQ does not see them. A FIFO queue hands out the messages of a
  group only in order and none behind one in flight, so a scan sees the first messages of
  each group; the approximate count covers the rest.

  Each message's age is checked against the consumer's record TTL (the pipeline's
  RecordTTL output, or --record-ttl): a message first sent more than the TTL less 1h ago
  may have outlived its idempotency record, and is listed by id.

  The REDRIVE column says what a redrive would do, with the redrive's own rules: on FIFO a
  message behind one that stays in its group stays too, and each such group is named.
  Ctrl-C stops the scan and gives every message back at once.

  --sample N         messages shown per group (default 1, 0 for none)
  --max N            stop the scan after N messages (default 1000)
  --hold D           visibility timeout of the scan (default 30s)
  --record-ttl D     the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (default: the RecordTTL output)
  --include-invalid  plan as 'redrive --include-invalid' would; --include-expired likewise
  --output json      one JSON document on stdout: counts, every scanned message (id,
                     group, reason, times, attributes, whole body, what a redrive does)
`

// RedriveUsage is `pipelinectl dlq redrive -h`.
const RedriveUsage = `pipelinectl dlq redrive: move dead-lettered messages back once their cause is fixed.

  Dry run unless --yes: it scans, says what would move where, and changes nothing.
  Destination: the pipeline's queue (its QueueUrl output, else the DLQ's redrive-allow
  policy), or --to QUEUE_URL, a queue of the same type (standard or FIFO).
  Messages the consumer dead-lettered as bad input (any DeadLetterReason: invalid_input,
  payload_mismatch, value_missing, ...) can never succeed unchanged: they stay in the DLQ
  unless --include-invalid.
  A redrive is safe while the idempotency records live: a message whose effect completed
  is acknowledged as a duplicate. A message first sent more than the record TTL (less 1h)
  ago may have outlived its record, and would run its effect again: it stays in the DLQ,
  named, unless --include-expired. Without a known TTL (no RecordTTL output and no
  --record-ttl) ages are not checked, and the run says so.

  Standard queue: SQS's message move task (StartMessageMoveTask), waited for and reported,
  when every message moves and the scan saw them all; else receive, send, delete (a copy
  carries the first send's time in a FirstSentTimestamp attribute, where SQS's limit of
  10 attributes leaves room, so its age still counts from the first send).
  FIFO queue: the move task where the server supports it, else receive, send with the
  original group id and a deduplication id derived from the message id, delete only after
  the send succeeded: each group keeps its order and no message is lost, and a copy sent
  again within SQS's 5-minute deduplication window is dropped. A group whose message stays
  (bad input without --include-invalid) stays whole from it on; the dry run counts it so.

  Interrupted, cut off, resumed: Ctrl-C stops between messages (a send or delete under way
  finishes first), gives back what the run holds, prints the counts and the command that
  resumes, and exits 3. Receive, send, delete are journaled (--journal, default in the
  user's cache directory): a rerun deletes a message whose copy an earlier run sent instead
  of sending it again. A send that got no answer (a network cut) is sent again and named
  in the summary as possibly doubled; on a standard queue it may be: the consumer answers
  the second copy as a duplicate while its record lives. A run does not end while the DLQ
  hides messages it did not account for (a receive whose answer was lost): it waits for
  them up to the hold (30s) and moves them. A move task already running (an earlier,
  interrupted run's) is waited for, not started again.

  The summary counts what is left in the DLQ after the run's last change, or says
  "unknown" and why (the network), names every kind of call that failed with its cause,
  and names any message the run could not give back with when it reappears. Done with
  messages kept by rule (bad input, older than the record TTL), it exits 4, not 0.
  Every --yes run that moves or keeps messages (not one that finds the DLQ empty) keeps
  an audit trail (runs/ beside the journal; the summary's "audit" line names it): the
  command, each message sent (as which copy, with its body's MD5), deleted, kept and why,
  possibly doubled or not given back, and the summary; a move task's run, the task's total.
  After a first Ctrl-C the run gives back what it holds; a second one ends it at once,
  leaving those hidden until their hold runs out.

  --yes              move (default: dry run)
  --rate N           at most N messages per second, 1 to 500 (default: no limit)
  --include-invalid  move bad-input messages too (the consumer dead-letters them again
                     unless the producer or the key configuration was fixed)
  --include-expired  move messages older than the record TTL too, each named with a
                     WARNING: one whose effect had completed runs it again
  --record-ttl D     the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (default: the RecordTTL output)
  --to QUEUE         another destination of the same queue type: its URL, ARN or name
  --max N            messages the plan scans at most (default 1000); the run still checks
                     each message it moves, and the plan counts the rest as not seen
  --wait D           how long to wait for a move task (default 15m)
  --journal FILE     the journal of this DLQ's moves (default: in the cache directory);
                     the audit trails go in runs/ beside it
  --output json      the summary as one JSON document on stdout (the text goes to stderr)
`
