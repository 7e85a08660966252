// Package layout names the attributes of an idempotency record in its DynamoDB table (the
// Powertools layout plus owner and attempt): the default partition key and the attributes
// every record writes. Package idempotency, which writes the records, takes its names from
// here; the CDK constructs hold a table to them at synth. It imports nothing, so a CDK app
// checks a table's layout without linking the DynamoDB SDK.
package layout

import "slices"

// DefaultPartitionKeyAttr is the table's partition key attribute unless configured.
const DefaultPartitionKeyAttr = "id"

// Names of the record's attributes.
const (
	AttrExpiration     = "expiration"
	AttrLockExpiration = "in_progress_expiration"
	AttrStatus         = "status"
	AttrData           = "data"
	AttrValidation     = "validation"
	AttrOwner          = "owner"
	AttrAttempt        = "attempt"
	// AttrResultDropped marks a COMPLETED record whose result could not be stored; its value
	// is the result's size in bytes. Other runtimes ignore it: the Powertools attributes keep
	// their meaning, the record just has no `data`.
	AttrResultDropped = "result_dropped"
)

var reserved = []string{
	AttrExpiration, AttrLockExpiration, AttrStatus, AttrData, AttrValidation, AttrOwner, AttrAttempt,
	AttrResultDropped,
}

// ReservedAttrs are the names of every attribute a record writes besides its key attributes,
// in a new slice. A table's key attributes need other names, or every write would try to
// change the record's own key.
func ReservedAttrs() []string { return slices.Clone(reserved) }
