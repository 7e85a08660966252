package record

// Usage is `pipelinectl help record`.
const Usage = `pipelinectl record get KEY: read the idempotency record of KEY.

  Status, owner (the fencing token of the last attempt), attempt, the lock's end and the
  TTL as times, the payload's sha256 and the stored result's size. The id is
  <key prefix>#KEY; the key prefix is the output <Pipeline>KeyPrefix (else the
  pipeline's name) unless --key-prefix says otherwise. --id RAW_ID takes the id as the
  table holds it.

pipelinectl record release KEY: free a stuck INPROGRESS record so that the next delivery
of KEY runs at once (as the next attempt).

  The release is the consumer's own: the lock is reset on the condition that the record
  is still INPROGRESS and held by the owner read just before, so an attempt that took the
  record over meanwhile is never released. Refused for a COMPLETED record (its effect has
  run), an expired or already released one, and for a live lock unless --force, naming
  its owner and when the lock runs out.

  --id RAW_ID          the record's partition key value, instead of KEY
  --sort-key VALUE     with --id on a table with a sort key: the sort key value
  --tenant TENANT      the tenant of KEY on a table with a sort key (composite layout)
  --key-prefix PREFIX  the consumer's IDEMPOTENCY_KEY_PREFIX (default: output <Pipeline>KeyPrefix, else the pipeline name)
  --force              (release) release a live lock: its owner may still be running the
                       effect, and the next delivery runs it again concurrently; it prints
                       a WARNING naming the live owner and when its lock would have run out
  --output json        (get) the record as one JSON document
`
