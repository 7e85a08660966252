package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/table"
)

// OrdersStackProps names the resources that exist before this stack.
type OrdersStackProps struct {
	awscdk.StackProps
	// IdempotencyTableName is the existing idempotency table.
	IdempotencyTableName string
	// AlarmTopicArn is the existing SNS topic alarms notify. If it is encrypted, its key
	// must let CloudWatch use it (see monitoring.PipelineMonitoringProps.Topic).
	AlarmTopicArn string
	// Entry is the consumer's main package; default functions/orders, relative to the
	// directory `cdk` runs in (this example's root).
	Entry string
}

// OrdersStack is the orders pipeline and the orders table its consumer writes.
type OrdersStack struct {
	awscdk.Stack
	Pipeline pipeline.Pipeline
	Orders   awsdynamodb.Table
}

// NewOrdersStack builds the stack.
func NewOrdersStack(scope constructs.Construct, id string, props *OrdersStackProps) *OrdersStack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	entry := props.Entry
	if entry == "" {
		entry = "functions/orders"
	}
	orders := awsdynamodb.NewTable(stack, jsii.String("OrdersTable"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("orderId"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	// The compliance packs ask for every table in AWS Backup. Your own resources are yours to
	// decide: back the table up (as table.IdempotencyTableProps.BackupRetention does for the
	// idempotency table), or record why not, where a reviewer reads it.
	cdknag.NagSuppressions_AddResourceSuppressions(orders, &[]*cdknag.NagPackSuppression{
		{Id: jsii.String("NIST.800.53.R5-DynamoDBInBackupPlan"), Reason: jsii.String(ordersBackupReason)},
		{Id: jsii.String("HIPAA.Security-DynamoDBInBackupPlan"), Reason: jsii.String(ordersBackupReason)},
	}, jsii.Bool(false))
	p := pipeline.NewPipeline(stack, "Orders", &pipeline.PipelineProps{
		Table: table.ImportIdempotencyTable(stack, "Idempotency", &table.ExistingIdempotencyTableProps{
			TableName: props.IdempotencyTableName,
		}),
		MonitoringProps: &monitoring.PipelineMonitoringProps{
			Topic: awssns.Topic_FromTopicArn(stack, jsii.String("OnCall"), jsii.String(props.AlarmTopicArn)),
		},
		Consumer: &consumer.IdempotentConsumerProps{
			Function: function.Options{
				Entry:       entry,
				Environment: map[string]string{"ORDERS_TABLE_NAME": *orders.TableName()},
			},
		},
	})
	// The effect's one call, and nothing more.
	orders.Grant(p.Consumer().Function(), jsii.String("dynamodb:UpdateItem"))
	// The outputs pipelinectl finds the pipeline by (pipelinectl status --stack Orders, dlq
	// inspect --pipeline Orders, record get): the queues, the consumer, its key prefix and
	// record TTL, the table, the composite alarm. The table's own output serves the record
	// commands without --pipeline.
	pipeline.Outputs(stack, "Orders", p)
	table.Outputs(stack, p.Table())
	return &OrdersStack{Stack: stack, Pipeline: p, Orders: orders}
}

// ordersBackupReason is the example's reason for its orders table outside AWS Backup.
const ordersBackupReason = "example: point-in-time recovery is on (35 days of restore points); in a regulated account, select this table in " +
	"your AWS Backup plan instead of suppressing the rule"
