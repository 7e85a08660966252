// Package table provides IdempotencyTable: the DynamoDB table the idempotency store
// (functions/idempotency) keeps its records in, with the Powertools for AWS Lambda layout
// (partition key "id", TTL attribute "expiration") so functions in other languages can share
// it.
//
// Secure, durable defaults: on-demand billing (ProvisionedCapacity for provisioned capacity
// with auto scaling, cheaper at a steady load: docs/capacity.md), TTL on, point-in-time
// recovery on, deletion protection on, encrypted with the AWS managed key (or your KMS
// key), and retained when removed from the stack. GrantIdempotency gives a function exactly
// the one item action the store uses (UpdateItem: acquire, complete and release are each one
// conditional update, and nothing is read), plus use of the KMS key through DynamoDB when the
// table has a customer managed key.
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
//
// # An existing table
//
// ImportIdempotencyTable takes a table the stack does not own, by name or ARN, with its key
// attribute names and its customer managed key, and returns the same IdempotencyTable
// interface: the consumer gets the table's name, its partition key name
// (IDEMPOTENCY_PARTITION_KEY) and sort key name, and the same exact grant. A table created
// by Powertools for AWS Lambda (partition key "id", TTL on "expiration") works with the
// defaults:
//
//	t := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
//		TableName: "powertools-idempotency",
//	})
//
// The idempotency store writes each record's expiry to "expiration" (epoch seconds), so the
// existing table's time to live must be on that attribute. CDK cannot read an imported
// table's settings, so nothing checks this at synth: with TTL off or on another attribute,
// completed records are never removed.
//
// # Tokens
//
// Names (TableName, TableArn, SortKey, PartitionKey) may be tokens, such as a CfnParameter's
// value or another stack's export: validation skips what it cannot judge before deploy. The
// removal policy cannot be a token.
package table
