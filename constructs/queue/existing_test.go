package queue

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

var (
	// byArn imports a FIFO queue and DLQ of another account by ARN (FIFO read from the
	// names), with a KMS key for each.
	byArn fixture
	// byName imports a standard queue and DLQ of the stack's account by name, one key for both.
	byName fixture
	// byToken imports queues whose names are CloudFormation parameters; Fifo is given.
	byToken fixture
	imports []*fixture
)

const otherAccountKey = "arn:aws:kms:eu-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"

func newImports(app awscdk.App) {
	imp := func(name string, props func(awscdk.Stack, *fixture) *ExistingProcessingQueueProps) fixture {
		f := fixture{name: name, stack: cdktest.NewStack(app, name)}
		f.q = ImportProcessingQueue(f.stack, "Orders", props(f.stack, &f))
		f.role = awsiam.NewRole(f.stack, jsii.String("Consumer"), &awsiam.RoleProps{
			AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		})
		f.q.Queue().GrantConsumeMessages(f.role)
		f.q.DeadLetterQueue().GrantSendMessages(f.role)
		return f
	}
	byArn = imp("ImportByArn", func(stack awscdk.Stack, f *fixture) *ExistingProcessingQueueProps {
		f.key = awskms.Key_FromKeyArn(stack, jsii.String("Key"), jsii.String(otherAccountKey))
		return &ExistingProcessingQueueProps{
			QueueArn:                "arn:aws:sqs:eu-west-1:210987654321:orders.fifo",
			DeadLetterQueueArn:      "arn:aws:sqs:eu-west-1:210987654321:orders-dlq.fifo",
			VisibilityTimeout:       6 * time.Minute,
			RetentionPeriod:         4 * 24 * time.Hour,
			MaxReceiveCount:         5,
			EncryptionKey:           f.key,
			DeadLetterEncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("DeadLetterKey"), jsii.String(otherAccountKey+"-dlq")),
		}
	})
	byName = imp("ImportByName", func(stack awscdk.Stack, f *fixture) *ExistingProcessingQueueProps {
		f.key = awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
		return &ExistingProcessingQueueProps{
			QueueName: "orders", DeadLetterQueueName: "orders-dlq",
			VisibilityTimeout: 3 * time.Minute, RetentionPeriod: 24 * time.Hour, EncryptionKey: f.key,
		}
	})
	byToken = imp("ImportByToken", func(stack awscdk.Stack, _ *fixture) *ExistingProcessingQueueProps {
		param := func(id string) string {
			return *awscdk.NewCfnParameter(stack, jsii.String(id), &awscdk.CfnParameterProps{Type: jsii.String("String")}).ValueAsString()
		}
		return &ExistingProcessingQueueProps{
			QueueName: param("QueueName"), DeadLetterQueueArn: param("DeadLetterQueueArn"), Fifo: jsii.Bool(true),
			VisibilityTimeout: 30 * time.Second, RetentionPeriod: 14 * 24 * time.Hour,
		}
	})
	imports = []*fixture{&byArn, &byName, &byToken}
}

// An import creates no queue and no queue policy (the resources are the stand-in role, its
// policy, and byName's own key).
func TestImportCreatesNothing(t *testing.T) {
	for _, f := range imports {
		t.Run(f.name, func(t *testing.T) {
			cdktest.Must(t, "queues", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(0)) })
			cdktest.Must(t, "queue policies", func() { f.tmpl.ResourceCountIs(jsii.String("AWS::SQS::QueuePolicy"), jsii.Number(0)) })
		})
	}
}

// The accessors report the props (and the FIFO type read from the names), and the imported
// queues are the ones named, each with its own key.
func TestImportAccessors(t *testing.T) {
	tests := []struct {
		f                       *fixture
		fifo                    bool
		visibility, retention   time.Duration
		maxReceive              int
		queueArn, dlqURL        string
		queueKey, deadLetterKey string
	}{{
		&byArn, true, 6 * time.Minute, 4 * 24 * time.Hour, 5,
		`"arn:aws:sqs:eu-west-1:210987654321:orders.fifo"`,
		`{"Fn::Join":["",["https://sqs.eu-west-1.",{"Ref":"AWS::URLSuffix"},"/210987654321/orders-dlq.fifo"]]}`,
		`"` + otherAccountKey + `"`, `"` + otherAccountKey + `-dlq"`,
	}, {
		&byName, false, 3 * time.Minute, 24 * time.Hour, 0,
		`{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":sqs:eu-west-1:123456789012:orders"]]}`,
		`{"Fn::Join":["",["https://sqs.eu-west-1.",{"Ref":"AWS::URLSuffix"},"/123456789012/orders-dlq"]]}`,
		"", "",
	}, {
		&byToken, true, 30 * time.Second, 14 * 24 * time.Hour, 0,
		`{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":sqs:eu-west-1:123456789012:",{"Ref":"QueueName"}]]}`,
		"", "null", "null",
	}}
	for _, tt := range tests {
		t.Run(tt.f.name, func(t *testing.T) {
			q, s := tt.f.q, tt.f.stack
			if q.Fifo() != tt.fifo || q.VisibilityTimeout() != tt.visibility || q.RetentionPeriod() != tt.retention || q.MaxReceiveCount() != tt.maxReceive {
				t.Errorf("Fifo, VisibilityTimeout, RetentionPeriod, MaxReceiveCount = %v, %v, %v, %d; want %v, %v, %v, %d",
					q.Fifo(), q.VisibilityTimeout(), q.RetentionPeriod(), q.MaxReceiveCount(), tt.fifo, tt.visibility, tt.retention, tt.maxReceive)
			}
			if got := q.MaxMessageSize(); got != DefaultMaxMessageSize {
				t.Errorf("MaxMessageSize = %d, want SQS's default %d when not given", got, DefaultMaxMessageSize)
			}
			if got := q.DeadLetterRetentionPeriod(); got != 14*24*time.Hour {
				t.Errorf("DeadLetterRetentionPeriod = %v, want SQS's maximum 336h when not given", got)
			}
			if *q.Queue().Fifo() != tt.fifo || *q.DeadLetterQueue().Fifo() != tt.fifo {
				t.Errorf("imported queues' Fifo = %v, %v; want %v", *q.Queue().Fifo(), *q.DeadLetterQueue().Fifo(), tt.fifo)
			}
			if id := *q.Queue().Node().Id() + "," + *q.DeadLetterQueue().Node().Id(); id != "Resource,DeadLetterQueue" {
				t.Errorf("construct ids = %s, want Resource,DeadLetterQueue", id)
			}
			if got := cdktest.JSON(s.Resolve(q.Queue().QueueArn())); got != tt.queueArn {
				t.Errorf("QueueArn = %s, want %s", got, tt.queueArn)
			}
			if got := cdktest.JSON(s.Resolve(q.DeadLetterQueue().QueueUrl())); tt.dlqURL != "" && got != tt.dlqURL {
				t.Errorf("DLQ QueueUrl = %s, want %s", got, tt.dlqURL)
			}
			keyOf := func(k awskms.IKey) string {
				if k == nil {
					return "null"
				}
				return cdktest.JSON(s.Resolve(k.KeyArn()))
			}
			wantQueueKey, wantDLQKey := tt.queueKey, tt.deadLetterKey
			if tt.f.key != nil && wantQueueKey == "" { // byName: the stack's own key, on both queues
				wantQueueKey = keyOf(tt.f.key)
				wantDLQKey = wantQueueKey
			}
			if got := keyOf(q.Queue().EncryptionMasterKey()); got != wantQueueKey {
				t.Errorf("queue key = %s, want %s", got, wantQueueKey)
			}
			if got := keyOf(q.DeadLetterQueue().EncryptionMasterKey()); got != wantDLQKey {
				t.Errorf("DLQ key = %s, want %s (DeadLetterEncryptionKey defaults to EncryptionKey)", got, wantDLQKey)
			}
		})
	}
}

// One case per validation message of ImportProcessingQueue.
func TestImportValidation(t *testing.T) {
	const arn = "arn:aws:sqs:eu-west-1:123456789012:"
	valid := func(p ExistingProcessingQueueProps) ExistingProcessingQueueProps {
		if p.QueueArn == "" && p.QueueName == "" {
			p.QueueName = "orders"
		}
		if p.DeadLetterQueueArn == "" && p.DeadLetterQueueName == "" {
			p.DeadLetterQueueName = "orders-dlq"
			if strings.HasSuffix(p.QueueName+p.QueueArn, ".fifo") {
				p.DeadLetterQueueName += ".fifo"
			}
		}
		if p.VisibilityTimeout == 0 {
			p.VisibilityTimeout = time.Minute
		}
		if p.RetentionPeriod == 0 {
			p.RetentionPeriod = time.Hour
		}
		return p
	}
	param := *awscdk.NewCfnParameter(scratch, jsii.String("Name"), &awscdk.CfnParameterProps{Type: jsii.String("String")}).ValueAsString()
	tests := []struct {
		name  string
		props ExistingProcessingQueueProps
		want  []string
	}{
		{"no queue", ExistingProcessingQueueProps{DeadLetterQueueName: "dlq", VisibilityTimeout: time.Minute, RetentionPeriod: time.Hour},
			[]string{"QueueArn: neither QueueArn nor QueueName is set; give the existing queue's ARN, or its name for a queue in the stack's account and region"}},
		{"no DLQ", ExistingProcessingQueueProps{QueueName: "orders", VisibilityTimeout: time.Minute, RetentionPeriod: time.Hour},
			[]string{"DeadLetterQueueArn: neither DeadLetterQueueArn nor DeadLetterQueueName is set"}},
		{"ARN and name", valid(ExistingProcessingQueueProps{QueueArn: arn + "orders", QueueName: "orders"}),
			[]string{"QueueArn: both QueueArn and QueueName are set; give one of them"}},
		{"DLQ ARN and name", valid(ExistingProcessingQueueProps{DeadLetterQueueArn: arn + "dlq", DeadLetterQueueName: "dlq"}),
			[]string{"DeadLetterQueueArn: both DeadLetterQueueArn and DeadLetterQueueName are set"}},
		{"not a queue ARN", valid(ExistingProcessingQueueProps{QueueArn: "arn:aws:dynamodb:eu-west-1:123456789012:table/orders"}),
			[]string{`QueueArn: got "arn:aws:dynamodb:eu-west-1:123456789012:table/orders"; want arn:<partition>:sqs:<region>:<account>:<queue name>`}},
		{"queue in another region", valid(ExistingProcessingQueueProps{QueueArn: "arn:aws:sqs:us-east-1:123456789012:orders"}),
			[]string{`QueueArn: got "arn:aws:sqs:us-east-1:123456789012:orders"; the queue is in us-east-1 and the stack in eu-west-1; ` +
				`a Lambda event source reads a queue in its own region, so deploy the stack to us-east-1 or use a queue in eu-west-1`}},
		{"bad name", valid(ExistingProcessingQueueProps{QueueName: "orders.eu"}),
			[]string{`QueueName: got "orders.eu"; not an SQS queue name: letters, digits, '-' and '_' (plus .fifo on a FIFO queue)`}},
		{"bad name in ARN", valid(ExistingProcessingQueueProps{DeadLetterQueueArn: arn + strings.Repeat("q", 81)}),
			[]string{"DeadLetterQueueArn", "(81 characters); SQS queue names are at most 80 characters, .fifo included"}},
		{"DLQ of another type", valid(ExistingProcessingQueueProps{QueueName: "orders.fifo", DeadLetterQueueName: "orders-dlq"}),
			[]string{`DeadLetterQueueArn: the source queue "orders.fifo" is a FIFO queue and its DLQ "orders-dlq" a standard queue; SQS requires a DLQ of the source queue's type`}},
		{"Fifo against the name", valid(ExistingProcessingQueueProps{QueueName: "orders", Fifo: jsii.Bool(true)}),
			[]string{`Fifo: got true; the queue "orders" is a standard queue (a FIFO queue's name ends in .fifo); leave Fifo nil to derive it from the name`}},
		{"Fifo against the DLQ's name", valid(ExistingProcessingQueueProps{QueueName: param, DeadLetterQueueArn: arn + "dlq.fifo", Fifo: jsii.Bool(false)}),
			[]string{`Fifo: got false; the queue "dlq.fifo" is a FIFO queue`}},
		{"type unknown", valid(ExistingProcessingQueueProps{QueueName: param, DeadLetterQueueName: param}),
			[]string{"Fifo: not set, and both queue names are tokens, so the queue type cannot be read from them; set Fifo to jsii.Bool(true) for FIFO queues or jsii.Bool(false)"}},
		{"no visibility timeout", ExistingProcessingQueueProps{QueueName: "orders", DeadLetterQueueName: "dlq", RetentionPeriod: time.Hour},
			[]string{"VisibilityTimeout: not set; give the existing queue's own VisibilityTimeout (CDK cannot read it from an imported queue, and the consumer construct checks its settings against it)"}},
		{"no retention", ExistingProcessingQueueProps{QueueName: "orders", DeadLetterQueueName: "dlq", VisibilityTimeout: time.Minute},
			[]string{"RetentionPeriod: not set; give the existing queue's own RetentionPeriod"}},
		{"visibility above 12h", valid(ExistingProcessingQueueProps{VisibilityTimeout: 13 * time.Hour}),
			[]string{"VisibilityTimeout: got 13h0m0s; SQS takes 1s to 12h0m0s; give the existing queue's own value"}},
		{"retention below a minute", valid(ExistingProcessingQueueProps{RetentionPeriod: 30 * time.Second}),
			[]string{"RetentionPeriod: got 30s; SQS takes 1m0s to 336h0m0s"}},
		{"fractional visibility", valid(ExistingProcessingQueueProps{VisibilityTimeout: 1500 * time.Millisecond}),
			[]string{"VisibilityTimeout: got 1.5s; SQS takes whole seconds"}},
		{"DLQ retention above 14 days", valid(ExistingProcessingQueueProps{DeadLetterRetentionPeriod: 15 * 24 * time.Hour}),
			[]string{"DeadLetterRetentionPeriod: got 360h0m0s; must be between 1m0s and 336h0m0s (0 means the default)"}},
		{"message size above SQS's 1 MiB", valid(ExistingProcessingQueueProps{MaxMessageSize: 2 << 20}),
			[]string{"MaxMessageSize: got 2097152; SQS takes 1024 to 1048576 bytes (1 KiB to 1 MiB; 0 means 262144)"}},
		{"max receive count", valid(ExistingProcessingQueueProps{MaxReceiveCount: 1001}),
			[]string{"MaxReceiveCount: got 1001; must be 1 to 1000, the queue's redrive maxReceiveCount (0: not given)"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			id := fmt.Sprintf("Existing%d", i)
			cdktest.ExpectProblemIn(t, `ExistingProcessingQueue "Scratch/`+id+`"`, func() { ImportProcessingQueue(scratch, id, &props) }, tt.want...)
		})
	}
	cdktest.ExpectProblem(t, func() { ImportProcessingQueue(scratch, "NilProps", nil) }, "neither QueueArn nor QueueName is set")
}

// Limits pass, tokens are not judged, and an environment-agnostic stack has no region to
// compare an ARN's region with.
func TestImportValidationAccepts(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Accepts")
	param := *awscdk.NewCfnParameter(stack, jsii.String("Arn"), &awscdk.CfnParameterProps{Type: jsii.String("String")}).ValueAsString()
	for i, p := range []ExistingProcessingQueueProps{
		{QueueName: strings.Repeat("q", 75) + ".fifo", DeadLetterQueueName: "d.fifo", VisibilityTimeout: 12 * time.Hour, RetentionPeriod: 14 * 24 * time.Hour, MaxReceiveCount: 1000},
		{QueueArn: "arn:aws-us-gov:sqs:eu-west-1:123456789012:" + strings.Repeat("q", 80), DeadLetterQueueName: "d", VisibilityTimeout: time.Second, RetentionPeriod: time.Minute, MaxReceiveCount: 1},
		{QueueArn: param, DeadLetterQueueName: "d", VisibilityTimeout: time.Minute, RetentionPeriod: time.Hour},                          // type from the DLQ's name
		{QueueArn: param, DeadLetterQueueArn: param, Fifo: jsii.Bool(false), VisibilityTimeout: time.Minute, RetentionPeriod: time.Hour}, // type given
	} {
		p := p
		if q := ImportProcessingQueue(stack, fmt.Sprintf("Valid%d", i), &p); q.Fifo() != (i == 0) {
			t.Errorf("case %d: Fifo() = %v", i, q.Fifo())
		}
	}
	agnostic := awscdk.NewStack(cdktest.NewApp(), jsii.String("Agnostic"), nil)
	ImportProcessingQueue(agnostic, "OtherRegion", &ExistingProcessingQueueProps{
		QueueArn: "arn:aws:sqs:us-east-1:123456789012:orders", DeadLetterQueueArn: "arn:aws:sqs:us-east-1:123456789012:orders-dlq",
		VisibilityTimeout: time.Minute, RetentionPeriod: time.Hour,
	})
}

// The imported queues' keys reach the grants: consuming the queue includes kms:Decrypt on the
// queue's key, sending to the DLQ kms:Encrypt and kms:GenerateDataKey on the DLQ's key.
func TestImportKeysReachTheGrants(t *testing.T) {
	for _, tt := range []struct {
		f                *fixture
		queueKey, dlqKey string
	}{
		{&byArn, `"` + otherAccountKey + `"`, `"` + otherAccountKey + `-dlq"`},
		{&byName, cdktest.JSON(byName.stack.Resolve(byName.key.KeyArn())), cdktest.JSON(byName.stack.Resolve(byName.key.KeyArn()))},
	} {
		t.Run(tt.f.name, func(t *testing.T) {
			granted := Granted(tt.f.tmpl)
			queueArn := cdktest.JSON(tt.f.stack.Resolve(tt.f.q.Queue().QueueArn()))
			dlqArn := cdktest.JSON(tt.f.stack.Resolve(tt.f.q.DeadLetterQueue().QueueArn()))
			for _, want := range []string{
				"sqs:ReceiveMessage " + queueArn, "sqs:DeleteMessage " + queueArn, "kms:Decrypt " + tt.queueKey,
				"sqs:SendMessage " + dlqArn, "kms:Encrypt " + tt.dlqKey, "kms:GenerateDataKey* " + tt.dlqKey,
			} {
				if !granted[want] {
					t.Errorf("not granted: %s; granted: %v", want, granted)
				}
			}
		})
	}
}

// Granted returns every "<action> <resource as JSON>" the template's IAM policies allow. It
// is exported for the external tests (consumer_test.go).
func Granted(tmpl assertions.Template) map[string]bool {
	granted := map[string]bool{}
	for _, r := range *tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := (*r)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			st := st.(map[string]any)
			actions, ok := st["Action"].([]any)
			if !ok {
				actions = []any{st["Action"]}
			}
			for _, a := range actions {
				granted[a.(string)+" "+cdktest.JSON(st["Resource"])] = true
			}
		}
	}
	return granted
}
