package queue

import (
	"os"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

// fixture is one stack holding one ProcessingQueue, and that stack's template.
type fixture struct {
	name  string
	stack awscdk.Stack
	q     ProcessingQueue
	props *ProcessingQueueProps
	tmpl  assertions.Template
	// key is an imported fixture's KMS key (the fixtures NewProcessingQueue builds use key).
	key awskms.IKey
	// role is an imported fixture's stand-in consumer: it consumes the queue and sends to
	// the DLQ, as the consumer construct's function does.
	role awsiam.Role
}

var (
	// standard uses nil props: every default.
	standard fixture
	// fifo is a named FIFO queue with every FIFO option and non-default numbers; its DLQ
	// keeps messages for less time than the source, which only FIFO allows.
	fifo fixture
	// kms is a standard queue with a customer KMS key, an explicit visibility timeout and a
	// queue name that is a CloudFormation parameter (an unresolved token).
	kms fixture
	// derived is a FIFO queue without a name, under ids long enough that the derived name
	// must be trimmed to fit SQS's 80 characters.
	derived fixture

	fixtures []*fixture

	nameParam awscdk.CfnParameter
	key       awskms.Key
	// nagProbe holds a plain queue without a DLQ, to prove the nag packs run.
	nagProbe awscdk.Stack
	// scratch is an app for validation tests, which panic before creating anything; it is
	// never synthesized.
	scratch awscdk.Stack
)

func TestMain(m *testing.M) {
	app := cdktest.NewApp()

	standard = newFixture(app, "Standard", "Orders", func(awscdk.Stack) *ProcessingQueueProps { return nil })
	fifo = newFixture(app, "Fifo", "Orders", func(awscdk.Stack) *ProcessingQueueProps {
		return &ProcessingQueueProps{
			Fifo:                      true,
			QueueName:                 "orders",
			ConsumerTimeout:           time.Minute,
			RetentionPeriod:           2 * 24 * time.Hour,
			DeadLetterRetentionPeriod: 24 * time.Hour,
			MaxReceiveCount:           3,
			ContentBasedDeduplication: true,
			HighThroughput:            true,
			DeadLetterRemovalPolicy:   awscdk.RemovalPolicy_DESTROY,
		}
	})
	kms = newFixture(app, "Kms", "Orders", func(stack awscdk.Stack) *ProcessingQueueProps {
		key = awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
		nameParam = awscdk.NewCfnParameter(stack, jsii.String("QueueName"), &awscdk.CfnParameterProps{Type: jsii.String("String")})
		return &ProcessingQueueProps{
			QueueName:                 *nameParam.ValueAsString(),
			ConsumerTimeout:           90 * time.Second,
			VisibilityTimeout:         15 * time.Minute,
			RetentionPeriod:           7 * 24 * time.Hour,
			DeadLetterRetentionPeriod: 14 * 24 * time.Hour,
			MaxMessageSize:            1 << 20,
			EncryptionKey:             key,
		}
	})
	derived = newFixture(app, "DerivedNameStackWithAnIdentifierLongEnoughToForceTrimming", "OrdersQueueForTheNightlyReconciliationJob", func(awscdk.Stack) *ProcessingQueueProps {
		return &ProcessingQueueProps{Fifo: true}
	})
	fixtures = []*fixture{&standard, &fifo, &kms, &derived}

	nagProbe = cdktest.NewStack(app, "NagProbe")
	awssqs.NewQueue(nagProbe, jsii.String("Plain"), nil)

	newImports(app)

	cdktest.AddNagPacks(app)
	for _, f := range append(fixtures, imports...) {
		f.tmpl = assertions.Template_FromStack(f.stack, nil)
	}

	scratch = cdktest.NewStack(cdktest.NewApp(), "Scratch")
	os.Exit(jsiitest.Run(m))
}

func newFixture(app awscdk.App, name, id string, props func(awscdk.Stack) *ProcessingQueueProps) fixture {
	stack := cdktest.NewStack(app, name)
	p := props(stack)
	return fixture{name: name, stack: stack, props: p, q: NewProcessingQueue(stack, id, p)}
}
