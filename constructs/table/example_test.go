package table_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
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
