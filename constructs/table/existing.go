package table

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/idempotency/layout"
)

// ExistingIdempotencyTableProps describes a DynamoDB table created outside this stack (by
// hand, by another stack, by Powertools for AWS Lambda's own constructs) that is to hold
// idempotency records. Give TableName or TableArn, not both.
//
// CDK cannot read an imported table's settings, so what this package cannot check is the
// caller's to keep true:
//   - the key attributes are strings (type S) named PartitionKey and SortKey;
//   - time to live is on the attribute "expiration" (TimeToLiveAttr), where the idempotency
//     store writes each record's expiry in epoch seconds. With TTL on another attribute, or
//     off, completed records are never removed: duplicates stay blocked and the table grows;
//   - the table is in the stack's region: the consumer calls DynamoDB in its own region. A
//     table in another account also needs a resource-based policy that admits the consumer's
//     role (GrantIdempotency writes the role's identity policy only).
type ExistingIdempotencyTableProps struct {
	// TableName is the table's name: 3-255 characters of letters, digits, '_', '-' and '.'.
	// It may be a token (a CfnParameter, an SSM parameter, another stack's output); only a
	// resolved name is validated. The table is taken to be in the stack's account and region.
	TableName string

	// TableArn is the table's ARN, arn:<partition>:dynamodb:<region>:<account>:table/<name>,
	// for a table in another account. It may be a token; only a resolved ARN is validated.
	TableArn string

	// PartitionKey is the name of the table's partition key attribute (a string). It reaches
	// the consumer as IDEMPOTENCY_PARTITION_KEY. At most 255 bytes of UTF-8, and none of the
	// attributes the idempotency record writes (layout.ReservedAttrs). It may be a
	// token; then only the consumer checks it, when it starts.
	// Default: "id" (PartitionKeyAttr), as in a table made by Powertools for AWS Lambda.
	PartitionKey string

	// SortKey is the name of the table's sort key attribute (a string), "" when the table has
	// none. With a sort key the key is composite: the tenant is the partition, the
	// idempotency key the sort key (IDEMPOTENCY_SORT_KEY). At most 255 bytes of UTF-8, not
	// PartitionKey, none of layout.ReservedAttrs. It may be a token, like PartitionKey.
	// Default: "" (partition key only).
	SortKey string

	// EncryptionKey is the table's customer managed KMS key, if it has one. GrantIdempotency
	// then also grants use of the key through DynamoDB; without it, a consumer of a table
	// encrypted with a customer managed key is denied on every record.
	// Default: nil (the table uses an AWS owned or AWS managed key).
	EncryptionKey awskms.IKey

	// TimeToLiveAttribute is the attribute the table's time to live is on, as you know it
	// ("off" when TTL is off). Anything but "expiration" (TimeToLiveAttr) is a synth warning
	// (WarningImportedTableTTL): the store writes each record's expiry there, so records
	// would never expire. Default "": unknown, and not checked.
	TimeToLiveAttribute string
}

// WarningImportedTableTTL is the id of the synth warning for an imported table whose time to
// live is not on TimeToLiveAttr: acknowledge it (awscdk.Annotations_Of(scope)
// .AcknowledgeWarning) if records that never expire are what you want.
const WarningImportedTableTTL = "@idempotent-sqs/pipeline:imported-table-ttl"

// tableArnPattern is a resolved DynamoDB table ARN: partition, region, account, name.
var tableArnPattern = regexp.MustCompile(`^arn:(aws[a-z-]*):dynamodb:([a-z0-9-]+):(\d{12}):table/(.+)$`)

type existingTable struct {
	constructs.Construct
	table        awsdynamodb.ITable
	partitionKey string
	sortKey      string
	key          awskms.IKey
}

var _ IdempotencyTable = (*existingTable)(nil)

// ImportIdempotencyTable returns an IdempotencyTable for an existing table: a construct
// scope/id whose Table (construct id "Resource") is the imported table. It creates no
// resource. A table created by Powertools for AWS Lambda (partition key "id", TTL on
// "expiration") works as is with every default:
//
//	t := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
//		TableName: "powertools-idempotency",
//	})
//
// The result goes wherever a table from NewIdempotencyTable does (the consumer's Table
// prop). Because the stack does not own the table, it neither sets its TTL nor can check
// it: see ExistingIdempotencyTableProps. Invalid props panic with a *validate.Error, before
// anything is created.
func ImportIdempotencyTable(scope constructs.Construct, id string, props *ExistingIdempotencyTableProps) IdempotencyTable {
	var p ExistingIdempotencyTableProps
	if props != nil {
		p = *props
	}
	if p.PartitionKey == "" {
		p.PartitionKey = PartitionKeyAttr
	}
	v := validate.NewIn("ExistingIdempotencyTable", scope, id)
	p.check(v, scope)
	v.Check()

	t := &existingTable{partitionKey: p.PartitionKey, sortKey: p.SortKey, key: p.EncryptionKey}
	constructs.NewConstruct_Override(t, scope, jsii.String(id))
	attrs := &awsdynamodb.TableAttributes{EncryptionKey: p.EncryptionKey}
	if p.TableArn != "" {
		attrs.TableArn = jsii.String(p.TableArn)
	} else {
		attrs.TableName = jsii.String(p.TableName)
	}
	t.table = awsdynamodb.Table_FromTableAttributes(t, jsii.String("Resource"), attrs)
	if ttl := p.TimeToLiveAttribute; ttl != "" && ttl != TimeToLiveAttr {
		awscdk.Annotations_Of(t).AddWarningV2(jsii.String(WarningImportedTableTTL), jsii.String(fmt.Sprintf(
			"the table's time to live is %q (TimeToLiveAttribute), but the idempotency store writes each record's expiry to %q: completed records "+
				"would never be removed, so their keys stay duplicates for ever and the table grows. Turn TTL on %q (aws dynamodb update-time-to-live "+
				"--time-to-live-specification Enabled=true,AttributeName=%s), or acknowledge this warning (Annotations_Of(scope).AcknowledgeWarning(%q, reason))",
			ttl, TimeToLiveAttr, TimeToLiveAttr, TimeToLiveAttr, WarningImportedTableTTL)))
	}
	return t
}

func (p ExistingIdempotencyTableProps) check(v *validate.Problems, scope constructs.Construct) {
	switch {
	case p.TableName == "" && p.TableArn == "":
		v.Addf("TableName", "neither TableName nor TableArn is set; give the existing table's name, or its ARN for a table in another account")
	case p.TableName != "" && p.TableArn != "":
		v.Addf("TableArn", "both TableName and TableArn are set; give one of them")
	case p.TableName != "":
		checkTableName(v, p.TableName)
	case !validate.Unresolved(p.TableArn):
		m := tableArnPattern.FindStringSubmatch(p.TableArn)
		if m == nil {
			v.Add("TableArn", fmt.Sprintf("%q", p.TableArn), "want arn:<partition>:dynamodb:<region>:<account>:table/<name>")
			break
		}
		if region := *awscdk.Stack_Of(scope).Region(); !validate.Unresolved(region) && m[2] != region {
			v.Add("TableArn", fmt.Sprintf("%q", p.TableArn), fmt.Sprintf(
				"the table is in %s and the stack in %s; the consumer calls DynamoDB in its own region, so use a table in %s (a global table's replica there)",
				m[2], region, region))
		}
		checkTableName(v, m[4])
	}
	const existing = "a table keyed on it cannot hold idempotency records; use another table (NewIdempotencyTable creates one)"
	checkKeyName(v, "PartitionKey", p.PartitionKey, existing)
	if p.SortKey != "" {
		checkKeyName(v, "SortKey", p.SortKey, existing)
		if p.SortKey == p.PartitionKey {
			v.Add("SortKey", fmt.Sprintf("%q", p.SortKey), "it is the partition key; give the table's sort key attribute, or leave SortKey empty for a partition-key-only table")
		}
	}
}

// checkTableName applies DynamoDB's rules for a table name to a resolved name.
func checkTableName(v *validate.Problems, n string) {
	if validate.Unresolved(n) {
		return
	}
	switch {
	case len(n) < minTableName || len(n) > maxTableName:
		v.Add("TableName", fmt.Sprintf("%q (%d characters)", n, len(n)), fmt.Sprintf("DynamoDB table names are %d to %d characters", minTableName, maxTableName))
	case !tableNameChars.MatchString(n):
		v.Add("TableName", fmt.Sprintf("%q", n), "use only letters, digits, '_', '-' and '.'")
	}
}

// checkKeyName applies the consumer's rules for a key attribute name (functions/consume
// refuses the same names at start) to a resolved name; fix ends the message for a name
// that collides with an attribute of the idempotency record.
func checkKeyName(v *validate.Problems, prop, name, fix string) {
	if validate.Unresolved(name) {
		return
	}
	switch {
	case len(name) > maxKeyName:
		v.Add(prop, fmt.Sprintf("%q (%d bytes)", name, len(name)), fmt.Sprintf("key attribute names are at most %d bytes", maxKeyName))
	case !utf8.ValidString(name):
		v.Add(prop, fmt.Sprintf("%q", name), "key attribute names are UTF-8")
	case reserved(name):
		v.Add(prop, fmt.Sprintf("%q", name), fmt.Sprintf("the idempotency record writes an attribute of that name (it writes %s), so every consumer invocation would fail; %s",
			reservedList(), fix))
	}
}

func (t *existingTable) GrantIdempotency(grantee awsiam.IGrantable) awsiam.Grant {
	return grantIdempotency(grantee, t.table, t.key)
}

func (t *existingTable) Table() awsdynamodb.ITable   { return t.table }
func (t *existingTable) PartitionKeyName() string    { return t.partitionKey }
func (t *existingTable) SortKeyName() string         { return t.sortKey }
func (t *existingTable) TimeToLiveAttribute() string { return layout.AttrExpiration }
