// Package checkov records, on the resources the constructs create, the checkov checks that do
// not apply to them and why, as checkov's own in-template suppression (resource Metadata
// "checkov": {"skip": [{"id", "comment"}]}). checkov then counts each one as skipped, with its
// reason, instead of the check vanishing from a global skip list: a reviewer sees the reason on
// the resource, and a resource the reason does not fit (a queue with a customer managed key, a
// function with reserved concurrency) is checked as usual, because the construct that knows
// skips only where the reason holds.
package checkov

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Skip is one checkov check that does not apply to a resource, with the reason a reviewer
// would otherwise ask for.
type Skip struct {
	ID     string
	Reason string
}

// The skips the constructs use. Each reason holds only under the condition its name states;
// the constructs skip a check only where that condition is true.
var (
	// QueueSQSManagedEncryption: the queue is encrypted with SSE-SQS.
	QueueSQSManagedEncryption = Skip{"CKV_AWS_27", "Encrypted with SSE-SQS (SqsManagedSseEnabled); the check recognises only KmsMasterKeyId. The AWS managed alias/aws/sqs key cannot be used by EventBridge Scheduler or CloudWatch delivering to a queue, so SSE-SQS is the safe default; an EncryptionKey prop switches to a customer managed key."}
	// TableAWSManagedKey: the table is encrypted with the AWS managed key.
	TableAWSManagedKey = Skip{"CKV_AWS_119", "Encrypted with the AWS managed key (DynamoDB's default); IdempotencyTableProps.EncryptionKey selects a customer managed key for those who need key policies or their own rotation."}
	// FunctionNoDLQ: the function is invoked by an SQS event source, or asynchronously with
	// an on-failure destination.
	FunctionNoDLQ = Skip{"CKV_AWS_116", "A function DLQ never fires for a consumer (its SQS event source invokes it synchronously; the queue's redrive DLQ is the failure path), and a dispatcher's asynchronous failures go to an alarmed on-failure destination queue, which carries more context than a function DLQ."}
	// FunctionNoReservedConcurrency: concurrency is bounded elsewhere.
	FunctionNoReservedConcurrency = Skip{"CKV_AWS_115", "A consumer's concurrency is capped by its event source mapping (its MaximumConcurrency, or in provisioned mode its maximum pollers x 10), which, unlike reserved concurrency, does not throttle SQS polling into extra receives; a dispatcher runs once per schedule tick."}
	// FunctionNoVPC: the function reaches only regional AWS APIs.
	FunctionNoVPC = Skip{"CKV_AWS_117", "The function calls only the SQS and DynamoDB APIs, over TLS (its logs reach CloudWatch through Lambda, not through its network); there is no private resource to reach, so a VPC would add interface endpoints at a monthly cost without changing what it can reach. Vpc puts it in one (the hardened profile does, with the endpoints it needs)."}
	// FunctionPlainEnvironment: the environment holds configuration, no secrets.
	FunctionPlainEnvironment = Skip{"CKV_AWS_173", "Environment variables hold configuration only (table and queue names, durations), never secrets, so a customer managed key for them protects nothing."}
	// NetworkInterfaceActions: the role of a function in a VPC may manage network interfaces.
	NetworkInterfaceActions = Skip{"CKV_AWS_111", "A function in a VPC creates, describes and deletes its network interfaces; Lambda calls these EC2 actions before the interfaces exist, so they cannot be scoped to resources (AWS's own AWSLambdaVPCAccessExecutionRole uses * too). Every other write of this policy is scoped to a resource."}
	// BackupVaultAWSManagedKey: the vault is encrypted with AWS Backup's managed key.
	BackupVaultAWSManagedKey = Skip{"CKV_AWS_166", "Encrypted with AWS Backup's managed key because the table has none of its own; give the table an EncryptionKey and its backup vault uses it."}
	// CDKProvider: a CDK custom resource provider function (not this project's code).
	CDKProviderDLQ         = Skip{"CKV_AWS_116", "CDK's custom resource provider: CloudFormation invokes it synchronously at deploy and reports a failure as a failed stack operation; a DLQ never fires."}
	CDKProviderConcurrency = Skip{"CKV_AWS_115", "CDK's custom resource provider runs once per stack operation; reserving concurrency for it would only take capacity from the account."}
	CDKProviderVPC         = Skip{"CKV_AWS_117", "CDK's custom resource provider calls only the EC2 API at deploy time to remove the default security group's rules; it reaches nothing in the VPC."}
	// LogGroupServiceKey: the log group is encrypted with CloudWatch Logs' service key.
	LogGroupServiceKey = Skip{"CKV_AWS_158", "Encrypted by CloudWatch Logs with its service key; the logs hold message ids, idempotency keys and outcomes, not message bodies."}
)

// metadataKey is where checkov reads in-template suppressions.
const metadataKey = "checkov"

// Add records skips on resource: a CloudFormation resource, or an L2 construct whose default
// child is one. A check already recorded on the resource is not added twice.
func Add(resource constructs.IConstruct, skips ...Skip) {
	cfn := cfnResource(resource)
	var entries []map[string]string
	seen := map[string]bool{}
	if old, ok := cfn.GetMetadata(jsii.String(metadataKey)).(map[string]any); ok {
		if list, ok := old["skip"].([]any); ok {
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					id, _ := m["id"].(string)
					comment, _ := m["comment"].(string)
					entries = append(entries, map[string]string{"id": id, "comment": comment})
					seen[id] = true
				}
			}
		}
	}
	for _, s := range skips {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		entries = append(entries, map[string]string{"id": s.ID, "comment": s.Reason})
	}
	cfn.AddMetadata(jsii.String(metadataKey), map[string]any{"skip": entries})
}

func cfnResource(c constructs.IConstruct) awscdk.CfnResource {
	if cfn, ok := c.(awscdk.CfnResource); ok {
		return cfn
	}
	if cfn, ok := c.Node().DefaultChild().(awscdk.CfnResource); ok {
		return cfn
	}
	panic("checkov.Add: " + *c.Node().Path() + " is neither a CloudFormation resource nor a construct whose default child is one")
}
