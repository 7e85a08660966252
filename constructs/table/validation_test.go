package table

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// One case per validation message: each names the prop, the value and the fix.
func TestValidation(t *testing.T) {
	type validationCase struct {
		name  string
		props IdempotencyTableProps
		want  []string
	}
	tests := []validationCase{
		{"backup retention under a day", IdempotencyTableProps{BackupRetention: time.Hour},
			[]string{"BackupRetention: got 1h0m0s; use whole days from 24h (1 day) to 876000h (36,500 days, AWS Backup's limit), or 0 for no AWS Backup plan"}},
		{"backup retention in part days", IdempotencyTableProps{BackupRetention: 36 * time.Hour},
			[]string{"BackupRetention: got 36h0m0s; use whole days"}},
		{"table name too short", IdempotencyTableProps{TableName: "ab"},
			[]string{"TableName", `"ab" (2 characters)`, "3 to 255 characters"}},
		{"table name too long", IdempotencyTableProps{TableName: strings.Repeat("t", 256)},
			[]string{"TableName", "(256 characters)", "3 to 255 characters"}},
		{"table name characters", IdempotencyTableProps{TableName: "orders/idempotency"},
			[]string{"TableName", `"orders/idempotency"`, "letters, digits, '_', '-' and '.'"}},
		{"sort key too long", IdempotencyTableProps{SortKey: strings.Repeat("k", 256)},
			[]string{"SortKey", "(256 bytes)", "at most 255 bytes"}},
		{"sort key not UTF-8", IdempotencyTableProps{SortKey: "s\xffk"},
			[]string{`SortKey: got "s\xffk"; key attribute names are UTF-8`}},
		{"sort key is the partition key", IdempotencyTableProps{SortKey: "id"},
			[]string{`SortKey: got "id"; it is the partition key; pick another name, e.g. "sk"`}},
		{"destroy with deletion protection", IdempotencyTableProps{RemovalPolicy: awscdk.RemovalPolicy_DESTROY},
			[]string{"RemovalPolicy", "got DESTROY", "DisableDeletionProtection: true"}},
		{"snapshot", IdempotencyTableProps{RemovalPolicy: awscdk.RemovalPolicy_SNAPSHOT},
			[]string{"RemovalPolicy", "got SNAPSHOT", "no snapshot deletion policy"}},
		{"logical id with a hyphen", IdempotencyTableProps{LogicalID: "Orders-Table"},
			[]string{`LogicalID: got "Orders-Table"; CloudFormation logical ids are 1-255 letters (A-Z, a-z) and digits`}},
		{"provisioned without write units", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{}},
			[]string{"ProvisionedCapacity.MinWriteUnits: got 0; use at least 1 capacity unit: the writes per second of your quiet hours (2 per new message) divided by the target utilization"}},
		{"provisioned without a write maximum", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 5}},
			[]string{"ProvisionedCapacity.MaxWriteUnits: got 0; use at least 1 capacity unit, and at least ProvisionedCapacity.MinWriteUnits: it bounds what auto scaling provisions (and the bill)"}},
		{"provisioned max below min", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 50, MaxWriteUnits: 10}},
			[]string{"ProvisionedCapacity.MaxWriteUnits: 10 is below ProvisionedCapacity.MinWriteUnits 50; auto scaling needs a maximum at least the minimum"}},
		{"provisioned reads max below min", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, MinReadUnits: 5, MaxReadUnits: 2}},
			[]string{"ProvisionedCapacity.MaxReadUnits: 2 is below ProvisionedCapacity.MinReadUnits 5"}},
		{"provisioned reads min only", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, MinReadUnits: 5}},
			[]string{"ProvisionedCapacity.MaxReadUnits: got 0; use at least 1 capacity unit, and at least ProvisionedCapacity.MinReadUnits"}},
		{"provisioned negative read units", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, MinReadUnits: -1, MaxReadUnits: 3}},
			[]string{"ProvisionedCapacity.MinReadUnits: got -1; use at least 1 capacity unit: the consumer reads nothing; 0 and 0 give the defaults 1 and 10"}},
		{"on-demand cap with provisioned capacity", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1}, MaxOnDemandThroughput: &OnDemandThroughputCap{WriteUnits: 100}},
			[]string{"MaxOnDemandThroughput: got {WriteUnits:100 ReadUnits:0}; a cap applies to an on-demand table, and ProvisionedCapacity makes it provisioned: its MaxWriteUnits and MaxReadUnits already bound the bill; drop one of the two"}},
		{"on-demand cap of nothing", IdempotencyTableProps{MaxOnDemandThroughput: &OnDemandThroughputCap{}},
			[]string{"MaxOnDemandThroughput: got {WriteUnits:0 ReadUnits:0}; set WriteUnits, ReadUnits or both (at least 1 request unit a second), or leave MaxOnDemandThroughput nil for no cap"}},
		{"on-demand cap negative writes", IdempotencyTableProps{MaxOnDemandThroughput: &OnDemandThroughputCap{WriteUnits: -1, ReadUnits: 5}},
			[]string{"MaxOnDemandThroughput.WriteUnits: got -1; use at least 1 request unit a second (about 2 a second per new message a second at your peak), or 0 to leave it uncapped"}},
		{"on-demand cap negative reads", IdempotencyTableProps{MaxOnDemandThroughput: &OnDemandThroughputCap{WriteUnits: 10, ReadUnits: -5}},
			[]string{"MaxOnDemandThroughput.ReadUnits: got -5; use at least 1 request unit a second (the consumer reads nothing), or 0 to leave it uncapped"}},
		{"provisioned target too low", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, TargetUtilizationPercent: 10}},
			[]string{"ProvisionedCapacity.TargetUtilizationPercent: got 10; Application Auto Scaling tracks a target from 20 to 90 percent; 0 gives the default 70"}},
		{"provisioned target too high", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, TargetUtilizationPercent: 95}},
			[]string{"ProvisionedCapacity.TargetUtilizationPercent: got 95; Application Auto Scaling tracks a target from 20 to 90 percent"}},
		{"provisioned from a number token", IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: tokenInt(), MaxWriteUnits: 100}},
			[]string{"ProvisionedCapacity.MinWriteUnits: got -9223372036854775808, which looks like a number token (a CfnParameter's value): capacity cannot be a token, it is checked at synth; give the number"}},
		{"unknown removal policy", IdempotencyTableProps{RemovalPolicy: "KEEP"},
			[]string{"RemovalPolicy", `got "KEEP"`, "use awscdk.RemovalPolicy_RETAIN"}},
	}
	// The consumer refuses every attribute the idempotency record writes as its sort key
	// (IDEMPOTENCY_SORT_KEY): such a table would fail every invocation.
	for _, name := range idempotency.ReservedAttrs() {
		tests = append(tests, validationCase{"sort key is the record attribute " + name, IdempotencyTableProps{SortKey: name}, []string{fmt.Sprintf(
			`SortKey: got %q; the idempotency record writes an attribute of that name (it writes expiration, in_progress_expiration, status, data, `+
				`validation, owner, attempt, result_dropped), so every consumer invocation would fail; pick another name, e.g. "sk"`, name)}})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			cdktest.ExpectProblem(t, func() { NewIdempotencyTable(scratch, fmt.Sprintf("Invalid%d", i), &props) }, tt.want...)
		})
	}
}

// Every problem is reported at once, and nothing is created before the panic.
func TestValidationCollectsEveryProblem(t *testing.T) {
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("expected a *validate.Error")
		}
		if len(verr.Problems) != 3 || verr.Construct != `IdempotencyTable "Scratch/AllWrong"` {
			t.Errorf("want 3 problems for IdempotencyTable \"Scratch/AllWrong\", got %s", verr.Error())
		}
		if scratch.Node().TryFindChild(strPtr("AllWrong")) != nil {
			t.Error("the construct was created before validation failed")
		}
	}()
	NewIdempotencyTable(scratch, "AllWrong", &IdempotencyTableProps{TableName: "x", SortKey: "id", RemovalPolicy: awscdk.RemovalPolicy_SNAPSHOT})
}

// Limits and the policies DynamoDB supports pass, and unresolved tokens are not judged.
func TestValidationAccepts(t *testing.T) {
	for i, p := range []IdempotencyTableProps{
		{TableName: "abc", SortKey: strings.Repeat("k", 255)},
		{TableName: strings.Repeat("t", 255), RemovalPolicy: awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE},
		{RemovalPolicy: awscdk.RemovalPolicy_DESTROY, DisableDeletionProtection: true},
		{TableName: *awscdk.Fn_Ref(strPtr("AWS::StackName"))},
		{SortKey: *awscdk.Fn_ImportValue(strPtr("sort-key-name"))}, // the consumer checks it when it starts
		{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 1, MaxWriteUnits: 1, MinReadUnits: 1, MaxReadUnits: 1, TargetUtilizationPercent: 20}},
		{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 40000, MaxWriteUnits: 40000, TargetUtilizationPercent: 90}},
	} {
		p := p
		NewIdempotencyTable(scratch, fmt.Sprintf("Valid%d", i), &p)
	}
}

func strPtr(s string) *string { return &s }

// tokenInt is what a user gets converting a CfnParameter's ValueAsNumber to an int.
func tokenInt() int {
	p := awscdk.NewCfnParameter(scratch, strPtr("Capacity"), &awscdk.CfnParameterProps{Type: strPtr("Number")})
	return int(*p.ValueAsNumber())
}
