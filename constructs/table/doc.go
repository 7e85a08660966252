// Package table provides IdempotencyTable: the DynamoDB table the idempotency store
// (functions/idempotency) keeps its records in, with the Powertools for AWS Lambda layout
// (partition key "id", TTL attribute "expiration") so functions in other languages can share
// it.
//
// Secure, durable defaults: on-demand billing, TTL on, point-in-time recovery on, deletion
// protection on, encrypted with the AWS managed key (or your KMS key), and retained when
// removed from the stack. GrantIdempotency gives a function exactly the one item action
// the store uses (UpdateItem: acquire, complete and release are each one conditional update,
// and nothing is read), plus use of the KMS key through DynamoDB when the table has a
// customer managed key.
//
//	t := table.NewIdempotencyTable(stack, "Idempotency", nil)
//	t.GrantIdempotency(consumerFunction)
//	// consumer env: IDEMPOTENCY_TABLE_NAME = *t.Table().TableName()
//
// With SortKey set the key is composite (tenant as partition, idempotency key as sort key):
// set IDEMPOTENCY_SORT_KEY to SortKeyName() in the consumer.
//
// Invalid props panic at synth with a *validate.Error listing every problem, each naming the
// prop, the value and the fix.
package table
