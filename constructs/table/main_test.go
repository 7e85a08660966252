package table

import (
	"os"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

// fixture is one stack with one IdempotencyTable and a role (the stand-in for a consumer
// function) given GrantIdempotency.
type fixture struct {
	name  string
	stack awscdk.Stack
	t     IdempotencyTable
	props *IdempotencyTableProps
	role  awsiam.Role
	grant awsiam.Grant
	key   awskms.IKey
	// imported: t comes from ImportIdempotencyTable, and the stack creates no table or key.
	imported bool
	tmpl     assertions.Template
}

var (
	// def uses nil props: every default.
	def fixture
	// custom overrides every prop but PITR and provisioned capacity: named, composite key,
	// customer managed key, destroyed with the stack, an on-demand write cap.
	custom fixture
	// noPITR turns point-in-time recovery off; cdk-nag must flag exactly that.
	noPITR fixture
	// provisioned has provisioned capacity with auto scaling, read units and target left
	// to their defaults.
	provisioned fixture

	fixtures []*fixture

	// powertools imports a table made by Powertools for AWS Lambda by name, with every
	// default (partition key "id", no sort key, no key).
	powertools fixture
	// byArn imports a composite-key table keyed on pk/sk by ARN, with its customer managed key.
	byArn fixture
	// byToken imports a table whose name is a CloudFormation parameter.
	byToken fixture
	imports []*fixture
	// scratch is a never-synthesized stack for validation tests, which panic before they
	// create anything.
	scratch awscdk.Stack
)

func TestMain(m *testing.M) {
	app := cdktest.NewApp()

	def = newFixture(app, "Default", func(awscdk.Stack, *fixture) *IdempotencyTableProps { return nil })
	custom = newFixture(app, "Custom", func(stack awscdk.Stack, f *fixture) *IdempotencyTableProps {
		f.key = awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
		return &IdempotencyTableProps{
			TableName:                 "orders-idempotency",
			SortKey:                   "sk",
			RemovalPolicy:             awscdk.RemovalPolicy_DESTROY,
			DisableDeletionProtection: true,
			EncryptionKey:             f.key,
			BackupRetention:           90 * 24 * time.Hour,
			MaxOnDemandThroughput:     &OnDemandThroughputCap{WriteUnits: 2000},
		}
	})
	noPITR = newFixture(app, "NoPITR", func(awscdk.Stack, *fixture) *IdempotencyTableProps {
		return &IdempotencyTableProps{DisablePointInTimeRecovery: true}
	})
	provisioned = newFixture(app, "Provisioned", func(awscdk.Stack, *fixture) *IdempotencyTableProps {
		return &IdempotencyTableProps{ProvisionedCapacity: &ProvisionedCapacity{MinWriteUnits: 5, MaxWriteUnits: 500}}
	})
	fixtures = []*fixture{&def, &custom, &noPITR, &provisioned}
	powertools = newImport(app, "Powertools", func(awscdk.Stack, *fixture) *ExistingIdempotencyTableProps {
		return &ExistingIdempotencyTableProps{TableName: "powertools-idempotency"}
	})
	byArn = newImport(app, "ByArn", func(stack awscdk.Stack, f *fixture) *ExistingIdempotencyTableProps {
		f.key = awskms.Key_FromKeyArn(stack, jsii.String("Key"), jsii.String("arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"))
		return &ExistingIdempotencyTableProps{
			TableArn:      "arn:aws:dynamodb:eu-west-1:210987654321:table/orders-idempotency",
			PartitionKey:  "pk",
			SortKey:       "sk",
			EncryptionKey: f.key,
		}
	})
	byToken = newImport(app, "ByToken", func(stack awscdk.Stack, f *fixture) *ExistingIdempotencyTableProps {
		name := awscdk.NewCfnParameter(stack, jsii.String("TableName"), &awscdk.CfnParameterProps{Type: jsii.String("String")})
		return &ExistingIdempotencyTableProps{TableName: *name.ValueAsString()}
	})
	imports = []*fixture{&powertools, &byArn, &byToken}

	cdktest.AddNagPacks(app)
	for _, f := range append(fixtures, imports...) {
		f.tmpl = assertions.Template_FromStack(f.stack, nil)
	}

	scratch = cdktest.NewStack(cdktest.NewApp(), "Scratch")
	os.Exit(jsiitest.Run(m))
}

func newFixture(app awscdk.App, name string, props func(awscdk.Stack, *fixture) *IdempotencyTableProps) fixture {
	f := fixture{name: name, stack: cdktest.NewStack(app, name)}
	f.props = props(f.stack, &f)
	f.t = NewIdempotencyTable(f.stack, "Idempotency", f.props)
	f.grantRole()
	return f
}

// grantRole gives the fixture a role and grants it the table.
func (f *fixture) grantRole() {
	f.role = awsiam.NewRole(f.stack, jsii.String("Consumer"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	f.grant = f.t.GrantIdempotency(f.role)
	nag.Suppress(f.role, true, "test fixture: the grantee stands for the consumer's role, which constructs/internal/gofn builds and documents",
		nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
}

func newImport(app awscdk.App, name string, props func(awscdk.Stack, *fixture) *ExistingIdempotencyTableProps) fixture {
	f := fixture{name: name, stack: cdktest.NewStack(app, name), imported: true}
	f.t = ImportIdempotencyTable(f.stack, "Idempotency", props(f.stack, &f))
	f.grantRole()
	return f
}
