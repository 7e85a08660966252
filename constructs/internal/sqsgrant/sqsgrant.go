// Package sqsgrant grants what sending to an SQS queue needs, and nothing more. CDK's
// IQueue.GrantSendMessages also grants kms:Encrypt, kms:ReEncrypt* and kms:GenerateDataKey*
// on a queue's customer managed key, none of which sending uses; a reviewer reads each of
// them as a key the function may use for anything.
package sqsgrant

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// SendActions are the SQS actions of CDK's GrantSendMessages: what a producer calls.
var SendActions = []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}

// KeyActions are what SQS asks KMS for when it encrypts a message a producer sends to a
// queue with a customer managed key (the SQS developer guide's producer permissions).
var KeyActions = []string{"kms:GenerateDataKey", "kms:Decrypt"}

// Send lets grantee send to q: the SQS actions given (none: key use only) on the queue and,
// when key is not nil, KeyActions on the key, only through SQS in q's stack's region
// (kms:ViaService). The grants go to the grantee's identity policy.
func Send(q awssqs.IQueue, key awskms.IKey, grantee awsiam.IGrantable, sqsActions ...string) {
	if len(sqsActions) > 0 {
		awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee: grantee, Actions: jsii.Strings(sqsActions...), ResourceArns: jsii.Strings(*q.QueueArn()),
		})
	}
	if key != nil {
		awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee:      grantee,
			Actions:      jsii.Strings(KeyActions...),
			ResourceArns: jsii.Strings(*key.KeyArn()),
			Conditions: &map[string]*map[string]any{"StringEquals": {
				"kms:ViaService": "sqs." + *awscdk.Stack_Of(q).Region() + ".amazonaws.com",
			}},
		})
	}
}
