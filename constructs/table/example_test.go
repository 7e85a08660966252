package table_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/table"
)

// A composite-key idempotency table shared by consumers, one tenant per partition. The
// consumer function's role gets exactly dynamodb:UpdateItem; its environment names the
// table and the sort key.
func ExampleNewIdempotencyTable() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	t := table.NewIdempotencyTable(stack, "Idempotency", &table.IdempotencyTableProps{SortKey: "sk"})

	role := awsiam.NewRole(stack, jsii.String("ConsumerRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	grant := t.GrantIdempotency(role)
	env := map[string]*string{
		"IDEMPOTENCY_TABLE_NAME": t.Table().TableName(),
		"IDEMPOTENCY_SORT_KEY":   jsii.String(t.SortKeyName()),
	}

	fmt.Println(t.PartitionKeyName(), *env["IDEMPOTENCY_SORT_KEY"], t.TimeToLiveAttribute(), *grant.Success())
	// Output: id sk expiration true
}

// An idempotency table made by Powertools for AWS Lambda, imported by name: the defaults
// (partition key "id", no sort key, TTL on "expiration") are Powertools' layout, so it works
// as is. Hand it to the consumer's Table prop like a table the stack creates.
func ExampleImportIdempotencyTable() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	t := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
		TableName: "powertools-idempotency",
	})

	fmt.Println(*t.Table().TableName(), t.PartitionKeyName(), t.SortKeyName() == "", t.TimeToLiveAttribute())
	// Output: powertools-idempotency id true expiration
}

// A table of another account keyed on "pk" and "sk" and encrypted with a customer managed
// key, imported by ARN. The partition key's name reaches the consumer as
// IDEMPOTENCY_PARTITION_KEY, and GrantIdempotency covers the key (through DynamoDB only).
// The table owner's resource-based policy must admit the consumer's role as well.
func ExampleImportIdempotencyTable_byArn() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
	})
	key := awskms.Key_FromKeyArn(stack, jsii.String("TableKey"),
		jsii.String("arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"))

	t := table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
		TableArn:      "arn:aws:dynamodb:eu-west-1:210987654321:table/shared-idempotency",
		PartitionKey:  "pk",
		SortKey:       "sk",
		EncryptionKey: key,
	})
	role := awsiam.NewRole(stack, jsii.String("ConsumerRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	grant := t.GrantIdempotency(role)

	fmt.Println(*t.Table().TableName(), t.PartitionKeyName(), t.SortKeyName(), *grant.Success())
	// Output: shared-idempotency pk sk true
}
