package table

import (
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

func TestResourceCounts(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			cdktest.Must(t, "tables", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
			cdktest.Must(t, "policies", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::IAM::Policy"), jsii.Number(1)) })
			keys := 0
			if f.key != nil {
				keys = 1 // the fixture's own key; the construct creates none
			}
			cdktest.Must(t, "keys", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(float64(keys))) })
			plans := 0
			if f.props != nil && f.props.BackupRetention > 0 {
				plans = 1
			}
			cdktest.Must(t, "backup plans", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::Backup::BackupPlan"), jsii.Number(float64(plans))) })
		})
	}
}

// BackupRetention puts the table in an AWS Backup plan of its own: a daily rule kept that
// long, in a retained vault under the table's key, selecting exactly this table.
func TestBackupPlan(t *testing.T) {
	f := custom
	cdktest.Must(t, "daily rule kept 90 days", func() {
		f.tmpl.HasResourceProperties(jsii.String("AWS::Backup::BackupPlan"), map[string]any{"BackupPlan": map[string]any{
			"BackupPlanRule": []any{assertions.Match_ObjectLike(&map[string]any{
				"RuleName": "Daily", "ScheduleExpression": "cron(0 3 * * ? *)", "Lifecycle": map[string]any{"DeleteAfterDays": 90},
			})},
		}})
	})
	cdktest.Must(t, "vault under the table's key, retained", func() {
		f.tmpl.HasResource(jsii.String("AWS::Backup::BackupVault"), map[string]any{
			"Properties":     assertions.Match_ObjectLike(&map[string]any{"EncryptionKeyArn": map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(f.stack, f.key), "Arn"}}}),
			"DeletionPolicy": "Retain",
		})
	})
	cdktest.Must(t, "selection of this table", func() {
		f.tmpl.HasResourceProperties(jsii.String("AWS::Backup::BackupSelection"), map[string]any{"BackupSelection": assertions.Match_ObjectLike(&map[string]any{
			"Resources": []any{map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(f.stack, f.t.Table()), "Arn"}}},
		})})
	})
}

func TestTableResource(t *testing.T) {
	exact := func(v any) assertions.Matcher { return assertions.Match_Exact(v) }
	tests := []struct {
		f      *fixture
		want   map[string]any
		policy string
	}{{
		f: &def,
		want: map[string]any{
			"KeySchema":                        exact([]any{map[string]any{"AttributeName": "id", "KeyType": "HASH"}}),
			"AttributeDefinitions":             exact([]any{map[string]any{"AttributeName": "id", "AttributeType": "S"}}),
			"BillingMode":                      "PAY_PER_REQUEST",
			"TimeToLiveSpecification":          exact(map[string]any{"AttributeName": "expiration", "Enabled": true}),
			"PointInTimeRecoverySpecification": exact(map[string]any{"PointInTimeRecoveryEnabled": true}),
			"DeletionProtectionEnabled":        true,
			"SSESpecification":                 exact(map[string]any{"SSEEnabled": true}),
			"TableName":                        assertions.Match_Absent(),
			"ProvisionedThroughput":            assertions.Match_Absent(),
			"OnDemandThroughput":               assertions.Match_Absent(),
		},
		policy: "Retain",
	}, {
		f: &custom,
		want: map[string]any{
			"TableName": "orders-idempotency",
			"KeySchema": exact([]any{
				map[string]any{"AttributeName": "id", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
			}),
			"AttributeDefinitions": exact([]any{
				map[string]any{"AttributeName": "id", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			}),
			"BillingMode":                      "PAY_PER_REQUEST",
			"OnDemandThroughput":               exact(map[string]any{"MaxWriteRequestUnits": 2000}),
			"TimeToLiveSpecification":          exact(map[string]any{"AttributeName": "expiration", "Enabled": true}),
			"PointInTimeRecoverySpecification": exact(map[string]any{"PointInTimeRecoveryEnabled": true}),
			"DeletionProtectionEnabled":        false,
			"SSESpecification": exact(map[string]any{
				"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": custom.stack.Resolve(custom.key.KeyArn()),
			}),
		},
		policy: "Delete",
	}, {
		f: &provisioned,
		want: map[string]any{
			"BillingMode":           assertions.Match_Absent(), // CloudFormation's default: PROVISIONED
			"ProvisionedThroughput": exact(map[string]any{"WriteCapacityUnits": 5, "ReadCapacityUnits": 1}),
		},
		policy: "Retain",
	}, {
		f: &noPITR,
		want: map[string]any{
			"PointInTimeRecoverySpecification": exact(map[string]any{"PointInTimeRecoveryEnabled": false}),
			"DeletionProtectionEnabled":        true,
		},
		policy: "Retain",
	}}
	for _, tt := range tests {
		t.Run(tt.f.name, func(t *testing.T) {
			id := cdktest.LogicalID(tt.f.stack, tt.f.t.Table())
			found := tt.f.tmpl.FindResources(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"Properties":          assertions.Match_ObjectLike(&tt.want),
				"DeletionPolicy":      tt.policy,
				"UpdateReplacePolicy": tt.policy,
			})
			if _, ok := (*found)[id]; !ok {
				actual := (*tt.f.tmpl.ToJSON())["Resources"].(map[string]any)[id]
				t.Errorf("table %s does not match %s with DeletionPolicy %s; it is:\n%s", id, cdktest.JSON(tt.want), tt.policy, cdktest.JSON(actual))
			}
		})
	}
}

// policyStatements returns the statements of the policy attached to the fixture's role.
func policyStatements(t *testing.T, f *fixture) []map[string]any {
	t.Helper()
	roleID := cdktest.LogicalID(f.stack, f.role)
	found := f.tmpl.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Properties": assertions.Match_ObjectLike(&map[string]any{"Roles": []any{map[string]any{"Ref": roleID}}}),
	})
	if len(*found) != 1 {
		t.Fatalf("want one policy on role %s, found %d", roleID, len(*found))
	}
	var out []map[string]any
	for _, r := range *found {
		doc := (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	return out
}

func actions(s map[string]any) []string {
	var out []string
	switch a := s["Action"].(type) {
	case string:
		out = []string{a}
	case []any:
		for _, x := range a {
			out = append(out, x.(string))
		}
	}
	slices.Sort(out)
	return out
}

// The grant is exactly the store's one item action on the table's ARN (no index ARN, no scan or
// query, no DescribeTable), plus the key through DynamoDB with a customer managed key.
func TestGrantIdempotencyIsExact(t *testing.T) {
	itemActions := []string{"dynamodb:UpdateItem"}
	keyActions := []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}
	for _, f := range append(fixtures, imports...) {
		t.Run(f.name, func(t *testing.T) {
			if !*f.grant.Success() {
				t.Error("grant did not succeed")
			}
			statements := policyStatements(t, f)
			want := 1
			if f.key != nil {
				want = 2
			}
			if len(statements) != want {
				t.Fatalf("want %d statements, got %s", want, cdktest.JSON(statements))
			}
			table := statements[0]
			if got := actions(table); !slices.Equal(got, itemActions) {
				t.Errorf("table actions = %v, want %v", got, itemActions)
			}
			tableArn := cdktest.JSON(f.stack.Resolve(f.t.Table().TableArn()))
			if table["Effect"] != "Allow" || cdktest.JSON(table["Resource"]) != tableArn || table["Condition"] != nil {
				t.Errorf("table statement = %s, want Allow on %s only", cdktest.JSON(table), tableArn)
			}
			if f.key == nil {
				return
			}
			key := statements[1]
			if got := actions(key); !slices.Equal(got, keyActions) {
				t.Errorf("key actions = %v, want %v", got, keyActions)
			}
			wantCond := map[string]any{"StringEquals": map[string]any{"kms:ViaService": "dynamodb.eu-west-1.amazonaws.com"}}
			if keyArn := cdktest.JSON(f.stack.Resolve(f.key.KeyArn())); cdktest.JSON(key["Resource"]) != keyArn || cdktest.JSON(key["Condition"]) != cdktest.JSON(wantCond) {
				t.Errorf("key statement = %s, want Allow on %s with %s", cdktest.JSON(key), keyArn, cdktest.JSON(wantCond))
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	for _, tt := range []struct {
		f                     *fixture
		partitionKey, sortKey string
	}{{&def, "id", ""}, {&custom, "id", "sk"}, {&powertools, "id", ""}, {&byArn, "pk", "sk"}, {&byToken, "id", ""}} {
		t.Run(tt.f.name, func(t *testing.T) {
			tbl := tt.f.t
			if tbl.PartitionKeyName() != tt.partitionKey || tbl.SortKeyName() != tt.sortKey || tbl.TimeToLiveAttribute() != "expiration" {
				t.Errorf("PartitionKeyName, SortKeyName, TimeToLiveAttribute = %q, %q, %q; want %q, %q, \"expiration\"",
					tbl.PartitionKeyName(), tbl.SortKeyName(), tbl.TimeToLiveAttribute(), tt.partitionKey, tt.sortKey)
			}
			if id := *tbl.Table().Node().Id(); id != "Resource" {
				t.Errorf("Table() construct id = %q, want Resource", id)
			}
		})
	}
}

// checkov's CKV_AWS_119 wants a customer managed key: the table records it as skipped, with
// the reason, only while it uses the AWS managed key.
func TestCheckovSkipOnlyWithAWSManagedKey(t *testing.T) {
	for _, f := range fixtures {
		got := cdktest.CheckovSkips(f.tmpl, cdktest.LogicalID(f.stack, f.t.Table()))
		want := []string{"CKV_AWS_119"}
		if f.key != nil {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: checkov skips = %v, want %v", f.name, got, want)
		}
	}
}

// Provisioned capacity scales writes and reads with one target tracking policy each, at the
// bounds and target given (reads and target at their defaults here); an on-demand table
// has no scaling resources.
func TestProvisionedCapacityAutoScaling(t *testing.T) {
	for _, f := range fixtures {
		want := 0
		if f == &provisioned {
			want = 2
		}
		cdktest.Must(t, f.name+" scalable targets", func() {
			f.tmpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(float64(want)))
		})
		cdktest.Must(t, f.name+" scaling policies", func() {
			f.tmpl.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), jsii.Number(float64(want)))
		})
	}
	f := provisioned
	tableID := cdktest.LogicalID(f.stack, f.t.Table())
	for _, tt := range []struct {
		dimension, metric string
		min, max          int
	}{
		{"dynamodb:table:WriteCapacityUnits", "DynamoDBWriteCapacityUtilization", 5, 500},
		{"dynamodb:table:ReadCapacityUnits", "DynamoDBReadCapacityUtilization", DefaultMinReadUnits, DefaultMaxReadUnits},
	} {
		targets := f.tmpl.FindResources(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]any{
			"Properties": assertions.Match_ObjectLike(&map[string]any{
				"ScalableDimension": tt.dimension, "ServiceNamespace": "dynamodb",
				"MinCapacity": tt.min, "MaxCapacity": tt.max,
				"ResourceId": map[string]any{"Fn::Join": []any{"", []any{"table/", map[string]any{"Ref": tableID}}}},
			}),
		})
		if len(*targets) != 1 {
			t.Errorf("want one scalable target %s %d..%d on table/%s; the template has:\n%s", tt.dimension, tt.min, tt.max, tableID,
				cdktest.JSON(f.tmpl.FindResources(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), nil)))
			continue
		}
		for targetID := range *targets {
			cdktest.Must(t, tt.metric+" policy", func() {
				f.tmpl.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]any{
					"PolicyType":      "TargetTrackingScaling",
					"ScalingTargetId": map[string]any{"Ref": targetID},
					"TargetTrackingScalingPolicyConfiguration": assertions.Match_ObjectLike(&map[string]any{
						"TargetValue":                   DefaultTargetUtilizationPercent,
						"PredefinedMetricSpecification": map[string]any{"PredefinedMetricType": tt.metric},
					}),
				})
			})
		}
	}
}
