package table

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// An import creates no table and no key: the stack's only resources are the granted role
// and its policy.
func TestImportCreatesNothing(t *testing.T) {
	for _, f := range imports {
		t.Run(f.name, func(t *testing.T) {
			for typ, n := range map[string]float64{"AWS::DynamoDB::Table": 0, "AWS::KMS::Key": 0, "AWS::IAM::Role": 1, "AWS::IAM::Policy": 1} {
				cdktest.Must(t, typ, func() { f.tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
			}
		})
	}
}

// The imported table is the one named: by name in the stack's account and region, by ARN
// as given, by token as the parameter.
func TestImportNamesTheTable(t *testing.T) {
	for _, tt := range []struct {
		f         *fixture
		name, arn string
	}{
		{&powertools, `"powertools-idempotency"`, `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":dynamodb:eu-west-1:123456789012:table/powertools-idempotency"]]}`},
		{&byArn, `"orders-idempotency"`, `"arn:aws:dynamodb:eu-west-1:210987654321:table/orders-idempotency"`},
		{&byToken, `{"Ref":"TableName"}`, `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":dynamodb:eu-west-1:123456789012:table/",{"Ref":"TableName"}]]}`},
	} {
		t.Run(tt.f.name, func(t *testing.T) {
			tbl := tt.f.t.Table()
			if got := cdktest.JSON(tt.f.stack.Resolve(tbl.TableName())); got != tt.name {
				t.Errorf("TableName = %s, want %s", got, tt.name)
			}
			if got := cdktest.JSON(tt.f.stack.Resolve(tbl.TableArn())); got != tt.arn {
				t.Errorf("TableArn = %s, want %s", got, tt.arn)
			}
		})
	}
}

// One case per validation message of ImportIdempotencyTable.
func TestImportValidation(t *testing.T) {
	const existing = "a table keyed on it cannot hold idempotency records; use another table (NewIdempotencyTable creates one)"
	type importCase struct {
		name  string
		props ExistingIdempotencyTableProps
		want  []string
	}
	tests := []importCase{
		{"neither name nor ARN", ExistingIdempotencyTableProps{},
			[]string{"TableName: neither TableName nor TableArn is set; give the existing table's name, or its ARN for a table in another account"}},
		{"name and ARN", ExistingIdempotencyTableProps{TableName: "t12", TableArn: "arn:aws:dynamodb:eu-west-1:123456789012:table/t12"},
			[]string{"TableArn: both TableName and TableArn are set; give one of them"}},
		{"name too short", ExistingIdempotencyTableProps{TableName: "ab"},
			[]string{`TableName: got "ab" (2 characters); DynamoDB table names are 3 to 255 characters`}},
		{"name characters", ExistingIdempotencyTableProps{TableName: "orders idempotency"},
			[]string{`TableName: got "orders idempotency"; use only letters, digits, '_', '-' and '.'`}},
		{"not a table ARN", ExistingIdempotencyTableProps{TableArn: "arn:aws:sqs:eu-west-1:123456789012:orders"},
			[]string{`TableArn: got "arn:aws:sqs:eu-west-1:123456789012:orders"; want arn:<partition>:dynamodb:<region>:<account>:table/<name>`}},
		{"ARN in another region", ExistingIdempotencyTableProps{TableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/t12"},
			[]string{`TableArn: got "arn:aws:dynamodb:us-east-1:123456789012:table/t12"; the table is in us-east-1 and the stack in eu-west-1; ` +
				`the consumer calls DynamoDB in its own region, so use a table in eu-west-1 (a global table's replica there)`}},
		{"ARN with a bad name", ExistingIdempotencyTableProps{TableArn: "arn:aws:dynamodb:eu-west-1:123456789012:table/a"},
			[]string{`TableName: got "a" (1 characters); DynamoDB table names are 3 to 255 characters`}},
		{"partition key too long", ExistingIdempotencyTableProps{TableName: "t12", PartitionKey: strings.Repeat("p", 256)},
			[]string{"PartitionKey", "(256 bytes); key attribute names are at most 255 bytes"}},
		{"partition key not UTF-8", ExistingIdempotencyTableProps{TableName: "t12", PartitionKey: "p\xffk"},
			[]string{`PartitionKey: got "p\xffk"; key attribute names are UTF-8`}},
		{"sort key too long", ExistingIdempotencyTableProps{TableName: "t12", SortKey: strings.Repeat("s", 256)},
			[]string{"SortKey", "(256 bytes); key attribute names are at most 255 bytes"}},
		{"sort key is the default partition key", ExistingIdempotencyTableProps{TableName: "t12", SortKey: "id"},
			[]string{`SortKey: got "id"; it is the partition key; give the table's sort key attribute, or leave SortKey empty for a partition-key-only table`}},
		{"sort key is the partition key", ExistingIdempotencyTableProps{TableName: "t12", PartitionKey: "pk", SortKey: "pk"},
			[]string{`SortKey: got "pk"; it is the partition key`}},
	}
	for _, name := range idempotency.ReservedAttrs() {
		for _, prop := range []string{"PartitionKey", "SortKey"} {
			p := ExistingIdempotencyTableProps{TableName: "t12"}
			if prop == "PartitionKey" {
				p.PartitionKey = name
			} else {
				p.SortKey = name
			}
			tests = append(tests, importCase{prop + " is the record attribute " + name, p, []string{fmt.Sprintf(
				`%s: got %q; the idempotency record writes an attribute of that name (it writes expiration, in_progress_expiration, status, data, `+
					`validation, owner, attempt, result_dropped), so every consumer invocation would fail; %s`, prop, name, existing)}})
		}
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			id := fmt.Sprintf("Existing%d", i)
			cdktest.ExpectProblemIn(t, `ExistingIdempotencyTable "Scratch/`+id+`"`, func() { ImportIdempotencyTable(scratch, id, &props) }, tt.want...)
		})
	}
	cdktest.ExpectProblem(t, func() { ImportIdempotencyTable(scratch, "NilProps", nil) }, "neither TableName nor TableArn is set")
}

// Values at the limits pass, and unresolved tokens (names, ARNs, key names) are not judged:
// the consumer checks the key names when it starts.
func TestImportValidationAccepts(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Accepts")
	param := func(id string) string {
		return *awscdk.NewCfnParameter(stack, jsii.String(id), &awscdk.CfnParameterProps{Type: jsii.String("String")}).ValueAsString()
	}
	for i, p := range []ExistingIdempotencyTableProps{
		{TableName: "abc", PartitionKey: strings.Repeat("p", 255), SortKey: strings.Repeat("s", 255)},
		{TableName: strings.Repeat("t", 255), PartitionKey: "tenant", SortKey: "id"},
		{TableArn: "arn:aws-cn:dynamodb:eu-west-1:123456789012:table/t.1_2-3"},
		{TableArn: param("Arn"), PartitionKey: param("Partition"), SortKey: param("Sort")},
		{TableName: *awscdk.Fn_ImportValue(jsii.String("shared-idempotency-table")), PartitionKey: "expiration-is-not-this"},
	} {
		p := p
		ImportIdempotencyTable(stack, fmt.Sprintf("Valid%d", i), &p)
	}
	// An environment-agnostic stack has no region to compare an ARN's region with.
	agnostic := awscdk.NewStack(cdktest.NewApp(), jsii.String("Agnostic"), nil)
	ImportIdempotencyTable(agnostic, "OtherRegion", &ExistingIdempotencyTableProps{TableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/t12"})
}

// An imported table the user says has TTL elsewhere (or off) is a synth warning naming the
// attribute the store writes and the fix; "expiration" and "" (unknown) are not.
func TestImportedTableTTLWarning(t *testing.T) {
	for _, tc := range []struct {
		ttl  string
		warn bool
	}{{"ttl", true}, {"off", true}, {TimeToLiveAttr, false}, {"", false}} {
		stack := cdktest.NewStack(cdktest.NewApp(), "Ttl")
		ImportIdempotencyTable(stack, "Idempotency", &ExistingIdempotencyTableProps{TableName: "powertools-idempotency", TimeToLiveAttribute: tc.ttl})
		var warnings []string
		for _, m := range *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
			warnings = append(warnings, fmt.Sprint(m.Entry.Data))
		}
		want := fmt.Sprintf("the table's time to live is %q (TimeToLiveAttribute), but the idempotency store writes each record's expiry to \"expiration\": "+
			"completed records would never be removed", tc.ttl)
		switch {
		case tc.warn && (len(warnings) != 1 || !strings.Contains(warnings[0], want) || !strings.Contains(warnings[0], "AttributeName=expiration") ||
			!strings.Contains(warnings[0], WarningImportedTableTTL)):
			t.Errorf("TimeToLiveAttribute %q: warnings %q, want one with %q", tc.ttl, warnings, want)
		case !tc.warn && len(warnings) != 0:
			t.Errorf("TimeToLiveAttribute %q: warnings %q, want none", tc.ttl, warnings)
		}
	}
}

// A cap above DynamoDB's default per-table quota is a synth warning (the quota throttles
// first); a cap within it is not; nor is a provisioned maximum within it, while one above is.
func TestCapOverTheQuotaWarns(t *testing.T) {
	for _, tc := range []struct {
		max  int
		warn bool
	}{{54286, true}, {40000, false}} {
		stack := cdktest.NewStack(cdktest.NewApp(), "Provisioned")
		NewIdempotencyTable(stack, "Idempotency", &IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 5, MaxWriteUnits: tc.max}})
		var warnings []string
		for _, m := range *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
			warnings = append(warnings, fmt.Sprint(m.Entry.Data))
		}
		want := fmt.Sprintf("ProvisionedCapacity's maximum (%d write, ", tc.max)
		if got := len(warnings) == 1 && strings.Contains(warnings[0], want) && strings.Contains(warnings[0], WarningCapOverQuota); got != tc.warn {
			t.Errorf("provisioned maximum %d: warnings %q, want a warning: %v", tc.max, warnings, tc.warn)
		}
	}
	for _, tc := range []struct {
		cap  OnDemandThroughputCap
		warn bool
	}{{OnDemandThroughputCap{WriteUnits: 50000}, true}, {OnDemandThroughputCap{ReadUnits: 40001}, true}, {OnDemandThroughputCap{WriteUnits: 40000}, false}} {
		stack := cdktest.NewStack(cdktest.NewApp(), "Capped")
		NewIdempotencyTable(stack, "Idempotency", &IdempotencyTableProps{MaxOnDemandThroughput: &tc.cap})
		var warnings []string
		for _, m := range *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
			warnings = append(warnings, fmt.Sprint(m.Entry.Data))
		}
		want := fmt.Sprintf("MaxOnDemandThroughput %+v is over DynamoDB's default quota of 40000 request units a second per table, which throttles first", tc.cap)
		switch {
		case tc.warn && (len(warnings) != 1 || !strings.Contains(warnings[0], want) || !strings.Contains(warnings[0], WarningCapOverQuota)):
			t.Errorf("cap %+v: warnings %q, want one with %q", tc.cap, warnings, want)
		case !tc.warn && len(warnings) != 0:
			t.Errorf("cap %+v: warnings %q, want none", tc.cap, warnings)
		}
	}
}
