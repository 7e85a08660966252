package table

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// Outputs adds the stack output pipelinectl reads the table by (contract.OutTableName,
// "IdempotencyTableName"): for a table pipelines share. pipeline.Outputs adds each
// pipeline's own, which pipelinectl reads first; a stack needs this one only for the
// record commands without --pipeline. Once per stack.
func Outputs(stack awscdk.Stack, t IdempotencyTable) {
	awscdk.NewCfnOutput(stack, jsii.String(contract.OutTableName), &awscdk.CfnOutputProps{
		Value: t.Table().TableName(), Description: jsii.String("DynamoDB idempotency table"),
	})
}
