package table

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
)

// IdempotencyTable is the DynamoDB table of idempotency records.
type IdempotencyTable interface {
	constructs.IConstruct
	// Table is the table (construct id "Resource", an AWS::DynamoDB::Table).
	Table() awsdynamodb.ITable
	// PartitionKeyName is the partition key attribute: "id" for a table NewIdempotencyTable
	// creates, ExistingIdempotencyTableProps.PartitionKey for an imported one. The consumer
	// passes it to the runtime as IDEMPOTENCY_PARTITION_KEY.
	PartitionKeyName() string
	// SortKeyName is the sort key attribute, "" unless the key is composite.
	SortKeyName() string
	// TimeToLiveAttribute is the TTL attribute, "expiration".
	TimeToLiveAttribute() string
	// GrantIdempotency grants exactly dynamodb:UpdateItem (the only call the idempotency
	// store makes) on the table, and with a customer managed key kms:Decrypt, Encrypt, GenerateDataKey and
	// DescribeKey on that key, only through DynamoDB in the table's region (kms:ViaService).
	// The grant goes to the grantee's identity policy: for an imported table in another
	// account, the table's resource-based policy (and the key's policy) must admit the
	// grantee too.
	GrantIdempotency(grantee awsiam.IGrantable) awsiam.Grant
}

// itemActions are the calls the idempotency store makes: acquire, complete and release are
// each one conditional UpdateItem (functions/idempotency; docs/design.md, "Cost floor"), and
// it never reads, puts or deletes. Granting GetItem, PutItem or DeleteItem as well would only
// widen what a compromised function could do to other consumers' records.
var itemActions = []string{"dynamodb:UpdateItem"}

// keyActions are what DynamoDB asks KMS for on the caller's behalf with a customer managed
// key: the read/write set CDK's Table grants use, without its wildcards (ReEncrypt* and the
// GenerateDataKey* variants serve key migration and client-side encryption, not item calls).
var keyActions = []string{"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"}

type idempotencyTable struct {
	constructs.Construct
	table awsdynamodb.Table
	s     settings
}

var _ IdempotencyTable = (*idempotencyTable)(nil)

// NewIdempotencyTable creates the table. props may be nil (every default). Invalid props
// panic with a *validate.Error, before anything is created.
func NewIdempotencyTable(scope constructs.Construct, id string, props *IdempotencyTableProps) IdempotencyTable {
	s := resolve(scope, id, props)
	// Override registers t itself as the jsii construct, so t can be passed anywhere a
	// construct is expected (Stack.Of, as a scope).
	t := &idempotencyTable{s: s}
	constructs.NewConstruct_Override(t, scope, jsii.String(id))
	t.table = awsdynamodb.NewTable(t, jsii.String("Resource"), s.tableProps())
	if c := s.onDemandCap; c != nil && s.provisioned == nil && max(c.WriteUnits, c.ReadUnits) > DefaultTableQuota {
		awscdk.Annotations_Of(t).AddWarningV2(jsii.String(WarningCapOverQuota), jsii.String(fmt.Sprintf(
			"MaxOnDemandThroughput %+v is over DynamoDB's default quota of %d request units a second per table, which throttles first: "+
				"raise the account's table-level throughput quota (Service Quotas) before you count on the cap, or lower the cap", *c, DefaultTableQuota)))
	}
	if c := s.provisioned; c != nil && max(c.MaxWriteUnits, c.MaxReadUnits) > DefaultTableQuota {
		awscdk.Annotations_Of(t).AddWarningV2(jsii.String(WarningCapOverQuota), jsii.String(fmt.Sprintf(
			"ProvisionedCapacity's maximum (%d write, %d read units) is over DynamoDB's default quota of %d capacity units a second per table: "+
				"auto scaling stops at the quota unless the account's is raised (Service Quotas)", c.MaxWriteUnits, c.MaxReadUnits, DefaultTableQuota)))
	}
	if s.encryptionKey == nil {
		checkov.Add(t.table, checkov.TableAWSManagedKey)
	}
	if c := s.provisioned; c != nil {
		t.autoScale(c)
	}
	if s.logicalID != "" {
		t.table.Node().DefaultChild().(awscdk.CfnResource).OverrideLogicalId(jsii.String(s.logicalID))
	}
	switch {
	case s.backupRetention > 0:
		t.backup(s)
	case s.pointInTimeRecovery:
		nag.Suppress(t.table, false, "point-in-time recovery is on: continuous backups with 35 days of restore points (AwsSolutions-DDB3 "+
			"holds); the records it protects expire with their TTL and are rebuilt by processing again; an AWS Backup plan adds copies in a "+
			"separate vault at backup storage prices: set BackupRetention (the hardened profile does)",
			nag.IDs("DynamoDBInBackupPlan", nag.NIST, nag.HIPAA)...)
	}
	return t
}

// autoScale has Application Auto Scaling keep the table's write and read capacity between
// c's bounds at its target utilization (a scalable target and a target tracking policy
// each, under DynamoDB's service-linked role: no IAM resource in the stack).
func (t *idempotencyTable) autoScale(c *ProvisionedCapacity) {
	target := &awsdynamodb.UtilizationScalingProps{TargetUtilizationPercent: jsii.Number(float64(c.TargetUtilizationPercent))}
	t.table.AutoScaleWriteCapacity(&awsdynamodb.EnableScalingProps{
		MinCapacity: jsii.Number(float64(c.MinWriteUnits)), MaxCapacity: jsii.Number(float64(c.MaxWriteUnits)),
	}).ScaleOnUtilization(target)
	t.table.AutoScaleReadCapacity(&awsdynamodb.EnableScalingProps{
		MinCapacity: jsii.Number(float64(c.MinReadUnits)), MaxCapacity: jsii.Number(float64(c.MaxReadUnits)),
	}).ScaleOnUtilization(target)
}

// backup puts the table in an AWS Backup plan of its own: a daily backup kept
// s.backupRetention, in a vault of its own that outlives the stack.
func (t *idempotencyTable) backup(s settings) {
	vault := awsbackup.NewBackupVault(t, jsii.String("BackupVault"), &awsbackup.BackupVaultProps{
		EncryptionKey: s.encryptionKey,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	if s.encryptionKey == nil {
		checkov.Add(vault, checkov.BackupVaultAWSManagedKey)
	}
	plan := awsbackup.NewBackupPlan(t, jsii.String("BackupPlan"), &awsbackup.BackupPlanProps{
		BackupVault: vault,
		BackupPlanRules: &[]awsbackup.BackupPlanRule{awsbackup.NewBackupPlanRule(&awsbackup.BackupPlanRuleProps{
			RuleName:           jsii.String("Daily"),
			ScheduleExpression: awsevents.Schedule_Cron(&awsevents.CronOptions{Hour: jsii.String("3"), Minute: jsii.String("0")}),
			DeleteAfter:        awscdk.Duration_Days(jsii.Number(s.backupRetention.Hours() / 24)),
		})},
	})
	selection := plan.AddSelection(jsii.String("Table"), &awsbackup.BackupSelectionOptions{
		Resources: &[]awsbackup.BackupResource{awsbackup.BackupResource_FromDynamoDbTable(t.table)},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(selection, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-IAM4"),
		Reason: jsii.String("the role AWS Backup assumes for this selection has AWS's AWSBackupServiceRolePolicyForBackup, the service role " +
			"policy AWS maintains for what a backup job does on each resource type; the selection limits the plan to this one table"),
		AppliesTo: &[]any{"Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup"},
	}}, jsii.Bool(true))
}

// tableProps is the one place settings become jsii props.
func (s settings) tableProps() *awsdynamodb.TableProps {
	p := &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(PartitionKeyAttr), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(TimeToLiveAttr),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(s.pointInTimeRecovery),
		},
		DeletionProtection: jsii.Bool(s.deletionProtection),
		RemovalPolicy:      s.removalPolicy,
		Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
	}
	if c := s.provisioned; c != nil {
		p.BillingMode = awsdynamodb.BillingMode_PROVISIONED
		p.WriteCapacity = jsii.Number(float64(c.MinWriteUnits))
		p.ReadCapacity = jsii.Number(float64(c.MinReadUnits))
	}
	if c := s.onDemandCap; c != nil && s.provisioned == nil {
		if c.WriteUnits > 0 {
			p.MaxWriteRequestUnits = jsii.Number(float64(c.WriteUnits))
		}
		if c.ReadUnits > 0 {
			p.MaxReadRequestUnits = jsii.Number(float64(c.ReadUnits))
		}
	}
	if s.tableName != "" {
		p.TableName = jsii.String(s.tableName)
	}
	if s.sortKey != "" {
		p.SortKey = &awsdynamodb.Attribute{Name: jsii.String(s.sortKey), Type: awsdynamodb.AttributeType_STRING}
	}
	if s.encryptionKey != nil {
		p.Encryption = awsdynamodb.TableEncryption_CUSTOMER_MANAGED
		p.EncryptionKey = s.encryptionKey
	}
	return p
}

func (t *idempotencyTable) GrantIdempotency(grantee awsiam.IGrantable) awsiam.Grant {
	return grantIdempotency(grantee, t.table, t.s.encryptionKey)
}

// grantIdempotency grants grantee the store's item actions on table and, with a customer
// managed key, the key's actions only through DynamoDB in the table's region.
func grantIdempotency(grantee awsiam.IGrantable, table awsdynamodb.ITable, key awskms.IKey) awsiam.Grant {
	grant := awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(itemActions...),
		ResourceArns: jsii.Strings(*table.TableArn()),
	})
	if key != nil {
		viaDynamoDB := "dynamodb." + *table.Env().Region + ".amazonaws.com"
		grant = grant.Combine(awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
			Grantee:      grantee,
			Actions:      jsii.Strings(keyActions...),
			ResourceArns: jsii.Strings(*key.KeyArn()),
			Conditions:   &map[string]*map[string]any{"StringEquals": {"kms:ViaService": viaDynamoDB}},
		}))
	}
	return grant
}

func (t *idempotencyTable) Table() awsdynamodb.ITable   { return t.table }
func (t *idempotencyTable) PartitionKeyName() string    { return PartitionKeyAttr }
func (t *idempotencyTable) SortKeyName() string         { return t.s.sortKey }
func (t *idempotencyTable) TimeToLiveAttribute() string { return TimeToLiveAttr }
