// Command app is a corpus of the shapes CDK users give an SQS consumer, one stack each, in
// one app (one synth), written as the public examples write them and changed in nothing for
// the local kit. Each stack's functions run the same aws-lambda-go handler
// (functions/echo), built the way that stack's kind of app builds it:
//   - Alias: a GoFunction deployed through its current version and an alias "live", the
//     queue mapped onto the alias (alias.AddEventSource);
//   - Go1x: a prebuilt binary named main on the go1.x runtime (bin/go1x, built by the app's
//     own build step), mapped by NewEventSourceMapping onto the function's ARN;
//   - Zip: a prebuilt bootstrap in a zip file (bin/echo.zip) on provided.al2023;
//   - Filtered: a GoFunction whose SqsEventSource has filter criteria on the JSON body;
//   - Arm64: a GoFunction for arm64, the cheaper architecture most production Go Lambdas use;
//   - Names: a queue and a table with the physical names the app gives them, the table
//     named to the function as a plain string, and the DLQ read by a consumer of its own;
//   - Versioned: a queue mapped onto a function's current version;
//   - ByArn: a queue mapped onto a function the app refers to by its ARN;
//   - Fanout: SNS to SQS, a topic the app names with queues subscribed, raw and in SNS's
//     envelope, and two with filter policies on a message attribute, each read by a function;
//   - Uploads: S3 to SNS to SQS to Lambda, a bucket's new objects under a prefix published
//     to a topic that a function's queue is subscribed to;
//   - Broken: a function that fails at every start (a table it requires is missing);
//   - Shared and Reader: cross-stack references, a queue of one stack read by a function of
//     another (CDK exports its ARN from Shared and imports it in Reader);
//   - Nested: a nested stack holding the queue, the function and the mapping, given the
//     parent's table (a parameter of the nested stack) and giving the parent its queue's URL
//     (an output of the nested stack), and a function of it reading a queue of the parent;
//   - Layered: a function with a layer of its own;
//   - Settings: a function whose environment holds a value read from Systems Manager at
//     deploy time and the ARN of a Secrets Manager secret.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3notifications"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsssm"
	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	app := awscdk.NewApp(nil)
	NewAlias(app, "Alias")
	NewGo1x(app, "Go1x")
	NewZip(app, "Zip")
	NewFiltered(app, "Filtered")
	NewArm64(app, "Arm64")
	NewNames(app, "Names")
	NewVersioned(app, "Versioned")
	NewByArn(app, "ByArn")
	NewFanout(app, "Fanout")
	NewUploads(app, "Uploads")
	NewBroken(app, "Broken")
	shared := NewShared(app, "Shared")
	NewReader(app, "Reader", shared)
	NewNested(app, "Nested", shared)
	NewLayered(app, "Layered")
	NewSettings(app, "Settings")
	app.Synth(nil)
}

// prebuilt is a function whose code is the bootstrap the app's build step wrote (bin/zip).
func prebuilt(stack awscdk.Stack, id string) awslambda.Function { return prebuiltIn(stack, id) }

func prebuiltIn(scope constructs.Construct, id string) awslambda.Function {
	return awslambda.NewFunction(scope, jsii.String(id), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Handler:      jsii.String("bootstrap"),
		Architecture: awslambda.Architecture_X86_64(),
		Code:         awslambda.Code_FromAsset(jsii.String("bin/zip"), nil),
	})
}

// NewVersioned maps a queue onto a function's current version.
func NewVersioned(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	prebuilt(stack, "Pinned").CurrentVersion().AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Jobs", nil), nil))
	return stack
}

// NewByArn maps a queue onto a function the app refers to by its ARN, as one passed in from
// elsewhere in the app is.
func NewByArn(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := prebuilt(stack, "Target")
	byArn := awslambda.Function_FromFunctionAttributes(stack, jsii.String("Imported"), &awslambda.FunctionAttributes{
		FunctionArn:     fn.FunctionArn(),
		SameEnvironment: jsii.Bool(true),
	})
	awslambda.NewEventSourceMapping(stack, jsii.String("Mapping"), &awslambda.EventSourceMappingProps{
		Target:         byArn,
		EventSourceArn: queueWithDLQ(stack, "Jobs", nil).QueueArn(),
	})
	return stack
}

func queueWithDLQ(stack awscdk.Stack, id string, props *awssqs.QueueProps) awssqs.Queue {
	if props == nil {
		props = &awssqs.QueueProps{}
	}
	dlq := awssqs.NewQueue(stack, jsii.String(id+"DLQ"), nil)
	props.DeadLetterQueue = &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(2)}
	return awssqs.NewQueue(stack, jsii.String(id), props)
}

func echo(stack awscdk.Stack, id string, props *awscdklambdagoalpha.GoFunctionProps) awscdklambdagoalpha.GoFunction {
	if props == nil {
		props = &awscdklambdagoalpha.GoFunctionProps{}
	}
	props.Entry = jsii.String("functions/echo")
	return awscdklambdagoalpha.NewGoFunction(stack, jsii.String(id), props)
}

// NewAlias maps a queue onto the alias "live" of a GoFunction's current version.
func NewAlias(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := echo(stack, "Worker", nil)
	alias := awslambda.NewAlias(stack, jsii.String("Live"), &awslambda.AliasProps{
		AliasName: jsii.String("live"),
		Version:   fn.CurrentVersion(),
	})
	alias.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Jobs", nil), &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(5),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	return stack
}

// NewGo1x runs a binary built before 2024's way: runtime go1.x, handler main.
func NewGo1x(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := awslambda.NewFunction(stack, jsii.String("Legacy"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_GO_1_X(),
		Handler: jsii.String("main"),
		Code:    awslambda.Code_FromAsset(jsii.String("bin/go1x"), nil),
	})
	awslambda.NewEventSourceMapping(stack, jsii.String("Mapping"), &awslambda.EventSourceMappingProps{
		Target:         fn,
		EventSourceArn: queueWithDLQ(stack, "Work", nil).QueueArn(),
		BatchSize:      jsii.Number(10),
	})
	return stack
}

// NewZip runs a bootstrap the app's build zipped.
func NewZip(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := awslambda.NewFunction(stack, jsii.String("Zipped"), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Handler:      jsii.String("bootstrap"),
		Architecture: awslambda.Architecture_X86_64(),
		Code:         awslambda.Code_FromAsset(jsii.String("bin/echo.zip"), nil),
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Inbox", nil), &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	return stack
}

// NewFiltered delivers only orders: the mapping's filter criteria match on the JSON body.
func NewFiltered(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := echo(stack, "Orders", nil)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Events", nil), &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true),
		Filters: &[]*map[string]interface{}{
			awslambda.FilterCriteria_Filter(&map[string]interface{}{
				"body": map[string]interface{}{"type": awslambda.FilterRule_IsEqual(jsii.String("order"))},
			}),
		},
	}))
	return stack
}

// NewArm64 is a GoFunction for arm64.
func NewArm64(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := echo(stack, "Graviton", &awscdklambdagoalpha.GoFunctionProps{Architecture: awslambda.Architecture_ARM_64()})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Tasks", nil), nil))
	return stack
}

// NewNames keeps the physical names the app gives, and reads its DLQ with a function of its own.
func NewNames(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	table := awsdynamodb.NewTable(stack, jsii.String("Seen"), &awsdynamodb.TableProps{
		TableName:    jsii.String("corpus-seen"),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	dlq := awssqs.NewQueue(stack, jsii.String("OrdersDLQ"), &awssqs.QueueProps{QueueName: jsii.String("corpus-orders-dlq")})
	queue := awssqs.NewQueue(stack, jsii.String("Orders"), &awssqs.QueueProps{
		QueueName:       jsii.String("corpus-orders"),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(2)},
	})
	fn := echo(stack, "Recorder", &awscdklambdagoalpha.GoFunctionProps{
		Environment: &map[string]*string{"SEEN_TABLE": jsii.String("corpus-seen")}, // the name, as a plain string
	})
	table.GrantWriteData(fn)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{ReportBatchItemFailures: jsii.Bool(true)}))
	echo(stack, "DeadLetters", nil).AddEventSource(awslambdaeventsources.NewSqsEventSource(dlq, nil))
	return stack
}

// NewFanout is SNS to SQS: a topic the app names, and two queues subscribed to it, one with
// raw message delivery and one with SNS's JSON envelope, each read by a function.
func NewFanout(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	topic := awssns.NewTopic(stack, jsii.String("Events"), &awssns.TopicProps{TopicName: jsii.String("corpus-events")})
	raw, wrapped := queueWithDLQ(stack, "Raw", nil), queueWithDLQ(stack, "Wrapped", nil)
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(raw, &awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true)}))
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(wrapped, nil))
	prebuilt(stack, "RawReader").AddEventSource(awslambdaeventsources.NewSqsEventSource(raw, nil))
	prebuilt(stack, "WrappedReader").AddEventSource(awslambdaeventsources.NewSqsEventSource(wrapped, nil))
	// Two more with filter policies on the message attribute kind: one takes orders only, the
	// other every kind that starts with "te".
	picky, tested := queueWithDLQ(stack, "Picky", nil), queueWithDLQ(stack, "Tested", nil)
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(picky, &awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true),
		FilterPolicy: &map[string]awssns.SubscriptionFilter{"kind": awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{Allowlist: jsii.Strings("order")})}}))
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(tested, &awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true),
		FilterPolicy: &map[string]awssns.SubscriptionFilter{"kind": awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{MatchPrefixes: jsii.Strings("te")})}}))
	prebuilt(stack, "PickyReader").AddEventSource(awslambdaeventsources.NewSqsEventSource(picky, nil))
	prebuilt(stack, "TestedReader").AddEventSource(awslambdaeventsources.NewSqsEventSource(tested, nil))
	awscdk.NewCfnOutput(stack, jsii.String("TopicArn"), &awscdk.CfnOutputProps{Value: topic.TopicArn()})
	return stack
}

// NewUploads is S3 to SNS to SQS to Lambda: a bucket whose new objects under uploads/ are
// published to a topic, to which the reader's queue is subscribed.
func NewUploads(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	bucket := awss3.NewBucket(stack, jsii.String("Inbox"), &awss3.BucketProps{
		EnforceSSL:        jsii.Bool(true),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
	})
	topic := awssns.NewTopic(stack, jsii.String("Uploaded"), nil)
	bucket.AddEventNotification(awss3.EventType_OBJECT_CREATED, awss3notifications.NewSnsDestination(topic),
		&awss3.NotificationKeyFilter{Prefix: jsii.String("uploads/")})
	queue := queueWithDLQ(stack, "Work", nil)
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(queue, nil))
	prebuilt(stack, "Reader").AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, nil))
	awscdk.NewCfnOutput(stack, jsii.String("BucketName"), &awscdk.CfnOutputProps{Value: bucket.BucketName()})
	return stack
}

// NewBroken is a function that fails at every start: it requires a table that does not
// exist, named as a plain string.
func NewBroken(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	fn := prebuilt(stack, "Crashing")
	fn.AddEnvironment(jsii.String("REQUIRED_TABLE"), jsii.String("corpus-absent"), nil)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Jobs", nil), nil))
	return stack
}

// SharedStack is a stack that other stacks of the app use a queue and a table of.
type SharedStack struct {
	awscdk.Stack
	Queue    awssqs.Queue
	Registry awsdynamodb.Table
}

// NewShared holds a queue (with its DLQ) that another stack reads, and a table that a
// function of another stack's nested stack requires.
func NewShared(scope constructs.Construct, id string) *SharedStack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	registry := awsdynamodb.NewTable(stack, jsii.String("Registry"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	return &SharedStack{Stack: stack, Queue: queueWithDLQ(stack, "Requests", nil), Registry: registry}
}

// NewReader reads the shared stack's queue with a function of its own: CDK writes the
// queue's ARN as an export of Shared and an Fn::ImportValue here.
func NewReader(scope constructs.Construct, id string, shared *SharedStack) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	stack.AddDependency(shared.Stack, nil)
	prebuilt(stack, "Handler").AddEventSource(awslambdaeventsources.NewSqsEventSource(shared.Queue, nil))
	return stack
}

// NewNested puts the pipeline in a nested stack: the parent holds the table, which the
// nested stack's function writes to, and outputs the nested stack's queue URL. The function
// also requires the shared stack's table at init: CDK exports its name from Shared and
// imports it in the nested stack's template.
func NewNested(scope constructs.Construct, id string, shared *SharedStack) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	table := awsdynamodb.NewTable(stack, jsii.String("Ledger"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	inner := awscdk.NewNestedStack(stack, jsii.String("Workers"), nil)
	queue := queueWithDLQ(inner, "Jobs", nil)
	fn := awslambda.NewFunction(inner, jsii.String("Writer"), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Handler:      jsii.String("bootstrap"),
		Architecture: awslambda.Architecture_X86_64(),
		Code:         awslambda.Code_FromAsset(jsii.String("bin/zip"), nil),
		Environment:  &map[string]*string{"SEEN_TABLE": table.TableName(), "REQUIRED_TABLE": shared.Registry.TableName()},
	})
	table.GrantWriteData(fn)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, nil))
	// And the other way: a queue of the parent read by a function of the nested stack (CDK
	// passes the queue's ARN as a parameter of the nested stack).
	inbox := queueWithDLQ(stack, "Inbox", nil)
	prebuiltIn(inner, "Reader").AddEventSource(awslambdaeventsources.NewSqsEventSource(inbox, nil))
	awscdk.NewCfnOutput(stack, jsii.String("JobsUrl"), &awscdk.CfnOutputProps{Value: queue.QueueUrl()})
	awscdk.NewCfnOutput(stack, jsii.String("LedgerName"), &awscdk.CfnOutputProps{Value: table.TableName()})
	return stack
}

// NewLayered gives its function a layer (files the function would find under /opt).
func NewLayered(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	layer := awslambda.NewLayerVersion(stack, jsii.String("Shared"), &awslambda.LayerVersionProps{
		Code:               awslambda.Code_FromAsset(jsii.String("layer"), nil),
		CompatibleRuntimes: &[]awslambda.Runtime{awslambda.Runtime_PROVIDED_AL2023()},
	})
	fn := prebuilt(stack, "WithLayer")
	fn.AddLayers(layer)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Jobs", nil), nil))
	return stack
}

// NewSettings gives its function a value read from Systems Manager at deploy time and the
// ARN of a secret, as functions take their settings.
func NewSettings(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	secret := awssecretsmanager.NewSecret(stack, jsii.String("ApiKey"), nil)
	fn := prebuilt(stack, "Configured")
	fn.AddEnvironment(jsii.String("GREETING"), awsssm.StringParameter_ValueForStringParameter(stack, jsii.String("/corpus/greeting"), nil), nil)
	fn.AddEnvironment(jsii.String("API_KEY_ARN"), secret.SecretArn(), nil)
	secret.GrantRead(fn, nil)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queueWithDLQ(stack, "Jobs", nil), nil))
	return stack
}
