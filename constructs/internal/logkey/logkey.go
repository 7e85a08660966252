// Package logkey lets CloudWatch Logs use a customer managed key for one log group, as a log
// group under such a key needs: the consumer's and dispatcher's log groups (constructs/internal/gofn)
// and the flow logs of pipeline.NewIsolatedVpc.
//
// Each log group gets a key policy statement of its own whose encryption context condition
// names that log group, not every log group of the account. A log group's ARN cannot be
// referenced from the policy (the log group needs the key first, so the reference would be a
// cycle), and these log groups have no fixed name (a fixed name under RETAIN makes the next
// deploy after a destroy fail on the retained group). The condition therefore uses the name
// CloudFormation gives a log group without LogGroupName, "<stack name>-<logical id>-<random
// suffix>": stack name and logical id are known at synth, only the suffix is a wildcard.
package logkey

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

// Actions are what CloudWatch Logs does with the key of a log group: encrypt and decrypt its
// events, re-encrypt them when the key changes, and describe the key when it is associated.
var Actions = []string{
	"kms:Encrypt", "kms:Decrypt", "kms:ReEncryptFrom", "kms:ReEncryptTo",
	"kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:DescribeKey",
}

// Allow adds to key's policy a statement that lets CloudWatch Logs (the service principal of
// the log group's region) use key for logGroup only, and reports whether it could: a key
// imported into the app has a policy CDK cannot change, and the caller then tells the user
// what it must allow (Requirement).
func Allow(logGroup awslogs.LogGroup, key awskms.IKey) bool {
	stack := awscdk.Stack_Of(logGroup)
	res := key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("logs."+*stack.Region()+".amazonaws.com"), nil)},
		Actions:    jsii.Strings(Actions...),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"ArnLike": map[string]any{"kms:EncryptionContext:aws:logs:arn": Pattern(logGroup)}},
	}), jsii.Bool(true))
	return *res.StatementAdded
}

// Pattern is the ARN pattern of logGroup's encryption context: arn:<partition>:logs:<region>:
// <account>:log-group:<stack name>-<logical id>-*.
func Pattern(logGroup awslogs.LogGroup) *string {
	stack := awscdk.Stack_Of(logGroup)
	cfn := logGroup.Node().DefaultChild().(awscdk.CfnElement)
	return stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("logs"),
		Resource:     jsii.String("log-group"),
		ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{stack.StackName(), jsii.String("-"), cfn.LogicalId(), jsii.String("-*")}),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
}

// Requirement says what the policy of an imported key must allow for a log group under it.
const Requirement = "its key policy must let logs.<region>.amazonaws.com use it (kms:Encrypt, kms:Decrypt, kms:ReEncrypt*, " +
	"kms:GenerateDataKey*, kms:DescribeKey) with the encryption context kms:EncryptionContext:aws:logs:arn matching the log group " +
	"(CloudFormation names it <stack name>-<logical id>-<suffix>), or creating the log group fails"
