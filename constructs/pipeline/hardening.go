package pipeline

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/constructs/internal/logkey"
	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// Hardening turns on, for what a pipeline creates, the controls that regulated reviews
// (cdk-nag's NIST 800-53 R5, PCI DSS 3.2.1 and HIPAA Security packs) ask for and that cost
// money or change the network, so the defaults leave them off with a written reason:
//
//   - the consumer and dispatcher run in Vpc's subnets (NewIsolatedVpc makes one whose
//     isolated subnets reach DynamoDB and SQS through endpoints, and nothing else), in a
//     security group of the pipeline that allows outbound HTTPS only and no inbound traffic;
//   - their log groups are encrypted with a customer managed key whose policy lets
//     CloudWatch Logs use it for those log groups only;
//   - each has reserved concurrency (the consumer its MaxConcurrency, or in provisioned mode
//     its ProvisionedPollers.Maximum x 10; the dispatcher DispatcherReservedConcurrency), so
//     neither can starve or be starved by other functions;
//   - the table the pipeline creates is in an AWS Backup plan.
//
// The data stores' encryption is PipelineProps.EncryptionKey's: set it as well for a
// customer managed key on the table, the queues and the backups (the reference app's
// hardened stage does). A part's own props win over these settings: a consumer given its
// own Vpc keeps its own SecurityGroups. docs/compliance.md states what it costs a month.
type Hardening struct {
	// Vpc the functions run in. It must reach DynamoDB and SQS: gateway and interface
	// endpoints (NewIsolatedVpc) or a NAT gateway. Required.
	Vpc awsec2.IVpc
	// VpcSubnets of Vpc the functions use. Default: the isolated subnets.
	VpcSubnets *awsec2.SubnetSelection
	// LogKey encrypts the functions' log groups. Default: PipelineProps.EncryptionKey, else
	// a new key (rotation on) for this pipeline.
	LogKey awskms.IKey
	// BackupRetention of the daily AWS Backup of the table the pipeline creates: whole days
	// from 1 to 36,500 (AWS Backup's limit). An existing Table keeps its own backups, so
	// setting this with Table is an error. Default DefaultHardenedBackupRetention.
	BackupRetention time.Duration
}

// Hardening defaults.
const (
	DefaultHardenedBackupRetention = 35 * 24 * time.Hour
	// DispatcherReservedConcurrency: a run is one invocation, two while Lambda retries one.
	DispatcherReservedConcurrency = 2
)

// placement is where a function goes: its own Vpc if its props give one, else h's.
func (h *Hardening) placement(vpc awsec2.IVpc, subnets *awsec2.SubnetSelection) (awsec2.IVpc, *awsec2.SubnetSelection) {
	if vpc != nil {
		return vpc, subnets
	}
	if h.VpcSubnets != nil {
		return h.Vpc, h.VpcSubnets
	}
	return h.Vpc, &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
}

// maxBackupRetention is AWS Backup's longest retention, 36,500 days.
const maxBackupRetention = 36500 * 24 * time.Hour

func (h *Hardening) check(v *validate.Problems, props *PipelineProps) {
	if h.Vpc == nil {
		v.Add("Hardening.Vpc", "nil", "give the VPC the functions run in (pipeline.NewIsolatedVpc makes one with the endpoints they need)")
	}
	if r := h.BackupRetention; r != 0 && (r < 24*time.Hour || r > maxBackupRetention || r%(24*time.Hour) != 0) {
		v.Add("Hardening.BackupRetention", r, "use whole days from 24h (1 day) to 876000h (36,500 days, AWS Backup's limit), or leave it 0 for the default 35 days")
	}
	if h.BackupRetention != 0 && props.Table != nil {
		v.Add("Hardening.BackupRetention", h.BackupRetention, "Table is an existing table, whose backups are its owner's: leave BackupRetention 0, "+
			"or set BackupRetention in the IdempotencyTableProps of the table where it is created")
	}
}

// securityGroup is the security group of the pipeline's functions in the hardened VPC: no
// inbound rule (nothing calls them over the network), outbound HTTPS only, which is all the
// AWS APIs they call need. In NewIsolatedVpc's subnets HTTPS reaches only its endpoints;
// DNS goes to the VPC's resolver, which security groups do not filter.
func (h *Hardening) securityGroup(p constructs.Construct) awsec2.ISecurityGroup {
	sg := awsec2.NewSecurityGroup(p, jsii.String("FunctionSecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              h.Vpc,
		Description:      jsii.String("Functions of " + *p.Node().Path() + ": outbound HTTPS to the AWS APIs they call, no inbound"),
		AllowAllOutbound: jsii.Bool(false),
	})
	sg.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS to DynamoDB and SQS (their endpoints in an isolated VPC)"), nil)
	return sg
}

// isolatedVpcCidr is NewIsolatedVpc's address range.
const isolatedVpcCidr = "10.0.0.0/16"

// NewIsolatedVpc makes a VPC for hardened pipelines: isolated subnets in two availability
// zones (no internet gateway, no NAT), a DynamoDB gateway endpoint, an SQS interface
// endpoint, and flow logs of rejected traffic to a log group under key (nil: CloudWatch Logs'
// own encryption), whose policy then lets CloudWatch Logs use it for that log group.
//
// The functions reach exactly the two services they call. They need no other endpoint:
// Lambda delivers their logs (and the EMF metrics in them) and their X-Ray segments itself,
// outside the function's network; they call no KMS API themselves (SQS and DynamoDB use the
// keys on their behalf) and no STS API (Lambda gives them their role's credentials).
func NewIsolatedVpc(scope constructs.Construct, id string, key awskms.IKey) awsec2.Vpc {
	vpc := awsec2.NewVpc(scope, jsii.String(id), &awsec2.VpcProps{
		IpAddresses: awsec2.IpAddresses_Cidr(jsii.String(isolatedVpcCidr)),
		MaxAzs:      jsii.Number(2),
		NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name: jsii.String("Isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED, CidrMask: jsii.Number(24),
		}},
		RestrictDefaultSecurityGroup: jsii.Bool(true),
	})
	logs := awslogs.NewLogGroup(vpc, jsii.String("FlowLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_YEAR,
		EncryptionKey: key,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	if key == nil {
		nag.Suppress(logs, false, "CloudWatch Logs encrypts the log group with a key it manages; pass a key to NewIsolatedVpc for a customer managed one",
			nag.IDs("CloudWatchLogGroupEncrypted", nag.Compliance...)...)
	} else if !logkey.Allow(logs, key) {
		awscdk.Annotations_Of(vpc).AddWarningV2(jsii.String("@idempotent-sqs/pipeline:log-group-key-policy"),
			jsii.String("NewIsolatedVpc's key is an imported key: for the flow logs' log group, "+logkey.Requirement))
	}
	flowLog := vpc.AddFlowLog(jsii.String("FlowLog"), &awsec2.FlowLogOptions{
		Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(logs, nil),
		TrafficType: awsec2.FlowLogTrafficType_REJECT,
	})
	if role, ok := flowLog.Node().TryFindChild(jsii.String("IAMRole")).(constructs.IConstruct); ok && role != nil {
		nag.SuppressRolePolicy(role, "CDK writes the flow log role's grant (logs:CreateLogStream, PutLogEvents, DescribeLogStreams on this "+
			"one log group) as this AWS::IAM::Policy, attached to that one role and versioned with the stack's template; a customer "+
			"managed policy would hold the same statement and could also be attached to other principals",
			nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	}
	vpc.AddGatewayEndpoint(jsii.String("DynamoDB"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(),
	})
	sqs := vpc.AddInterfaceEndpoint(jsii.String("SQS"), &awsec2.InterfaceVpcEndpointOptions{
		Service: awsec2.InterfaceVpcEndpointAwsService_SQS(),
		Open:    jsii.Bool(false),
	})
	// HTTPS from inside the VPC only, by its literal range (a reference to the VPC's CIDR
	// attribute is not something a reviewer or cdk-nag can read).
	sqs.Connections().AllowFrom(awsec2.Peer_Ipv4(jsii.String(isolatedVpcCidr)), awsec2.Port_Tcp(jsii.Number(443)),
		jsii.String("HTTPS to SQS from the VPC's functions"))
	// CDK adds, at stack level, the provider function of the custom resource that strips the
	// default security group's rules: checkov checks it as any function.
	stack := awscdk.Stack_Of(vpc)
	if provider, ok := stack.Node().TryFindChild(jsii.String("Custom::VpcRestrictDefaultSGCustomResourceProvider")).(constructs.IConstruct); ok && provider != nil {
		if handler, ok := provider.Node().TryFindChild(jsii.String("Handler")).(awscdk.CfnResource); ok {
			checkov.Add(handler, checkov.CDKProviderDLQ, checkov.CDKProviderConcurrency, checkov.CDKProviderVPC)
		}
	}
	return vpc
}
