package table

import (
	"os"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
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
	key   awskms.Key
	tmpl  assertions.Template
}

var (
	// def uses nil props: every default.
	def fixture
	// custom overrides every prop but PITR: named, composite key, customer managed key,
	// destroyed with the stack.
	custom fixture
	// noPITR turns point-in-time recovery off; cdk-nag must flag exactly that.
	noPITR fixture

	fixtures []*fixture
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
		}
	})
	noPITR = newFixture(app, "NoPITR", func(awscdk.Stack, *fixture) *IdempotencyTableProps {
		return &IdempotencyTableProps{DisablePointInTimeRecovery: true}
	})
	fixtures = []*fixture{&def, &custom, &noPITR}

	cdktest.AddNagPacks(app)
	for _, f := range fixtures {
		f.tmpl = assertions.Template_FromStack(f.stack, nil)
	}

	scratch = cdktest.NewStack(cdktest.NewApp(), "Scratch")
	os.Exit(m.Run())
}

func newFixture(app awscdk.App, name string, props func(awscdk.Stack, *fixture) *IdempotencyTableProps) fixture {
	f := fixture{name: name, stack: cdktest.NewStack(app, name)}
	f.props = props(f.stack, &f)
	f.t = NewIdempotencyTable(f.stack, "Idempotency", f.props)
	f.role = awsiam.NewRole(f.stack, jsii.String("Consumer"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	f.grant = f.t.GrantIdempotency(f.role)
	return f
}
