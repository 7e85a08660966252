package monitoring

import (
	"os"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsschedulertargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

// pipelineFixture is one stack with a small pipeline (plain CDK resources, not this
// repository's constructs) and a PipelineMonitoring watching all of it.
type pipelineFixture struct {
	stack                     awscdk.Stack
	tmpl                      assertions.Template
	mon                       PipelineMonitoring
	source, dlq               awssqs.Queue
	consumer                  awslambda.Function
	dispatcher                awslambda.Function
	schedule, groupedSchedule awsscheduler.Schedule
	group                     awsscheduler.ScheduleGroup
	scheduleDLQ, failureQueue awssqs.Queue
	table                     awsdynamodb.Table
	queueAlarms               QueueAlarms
	consumerAlarms            ConsumerAlarms
	dispatcherAlarms, grouped DispatcherAlarms
	tableAlarms               TableAlarms
	heartbeat                 awsscheduler.ISchedule
	heartbeatAlarms           HeartbeatAlarms
}

var (
	// def uses every default (with email subscriptions); custom overrides every prop and
	// brings its own topic; keyed brings an encryption key and a Slack channel.
	def, custom, keyed pipelineFixture
	// keyedKey is the key given to keyed.
	keyedKey awskms.Key
	// scratch is a never-synthesized stack for validation tests, which must panic before
	// they create anything.
	scratch struct {
		stack    awscdk.Stack
		mon      PipelineMonitoring
		queue    awssqs.IQueue
		fn       awslambda.IFunction
		table    awsdynamodb.ITable
		schedule awsscheduler.ISchedule
		// other* are further resources of each kind: a label taken by a watch of the
		// above is taken for them.
		otherQueue    awssqs.IQueue
		otherFn       awslambda.IFunction
		otherTable    awsdynamodb.ITable
		otherSchedule awsscheduler.ISchedule
	}
	customTopicArn = "arn:aws:sns:eu-west-1:123456789012:pager"
	nagProbe       awscdk.Stack
)

// Custom prop values: each differs from its default, so a test can tell them apart.
var customProps = PipelineMonitoringProps{
	DashboardName:            "orders-pipeline",
	MetricsNamespace:         "Custom/Orders",
	OldestMessageAge:         10 * time.Minute,
	QueueDepth:               50,
	AlarmPeriod:              time.Minute,
	BacklogEvaluationPeriods: 2,
	StalledConsumerPeriods:   30,
	NotifyOnOK:               true,
	RunbookURL:               "https://wiki.example.com/pipeline/runbooks",
}

func TestMain(m *testing.M) {
	app := cdktest.NewApp()

	def = buildPipeline(app, "Default", func(stack awscdk.Stack) *PipelineMonitoringProps {
		return &PipelineMonitoringProps{
			AlarmEmails:  []string{"oncall@example.com", "team@example.org"},
			TicketEmails: []string{"tickets@example.com"},
		}
	})
	custom = buildPipeline(app, "Custom", func(stack awscdk.Stack) *PipelineMonitoringProps {
		p := customProps
		p.Topic = awssns.Topic_FromTopicArn(stack, jsii.String("Pager"), jsii.String(customTopicArn))
		return &p
	})
	keyed = buildPipeline(app, "Keyed", func(stack awscdk.Stack) *PipelineMonitoringProps {
		keyedKey = awskms.NewKey(stack, jsii.String("PipelineKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
		return &PipelineMonitoringProps{
			EncryptionKey:    keyedKey,
			AlarmEmails:      []string{"oncall@example.com"},
			SlackWorkspaceId: "T0123ABCD",
			SlackChannelId:   "C0123ABCD",
		}
	})

	// The probe proves the packs run: each must flag something here.
	nagProbe = cdktest.NewStack(app, "NagProbe")
	awssns.NewTopic(nagProbe, jsii.String("PlainTopic"), nil)
	awssqs.NewQueue(nagProbe, jsii.String("PlainQueue"), nil)

	cdktest.AddNagPacks(app)
	def.tmpl = assertions.Template_FromStack(def.stack, nil)
	custom.tmpl = assertions.Template_FromStack(custom.stack, nil)
	keyed.tmpl = assertions.Template_FromStack(keyed.stack, nil)

	scratch.stack = cdktest.NewStack(cdktest.NewApp(), "Scratch")
	scratch.mon = NewPipelineMonitoring(scratch.stack, "Monitoring", &PipelineMonitoringProps{
		Topic: awssns.Topic_FromTopicArn(scratch.stack, jsii.String("Topic"), jsii.String(customTopicArn)),
	})
	scratch.queue = awssqs.Queue_FromQueueArn(scratch.stack, jsii.String("Queue"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:orders"))
	scratch.fn = awslambda.Function_FromFunctionArn(scratch.stack, jsii.String("Fn"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:function:consumer"))
	scratch.table = awsdynamodb.Table_FromTableName(scratch.stack, jsii.String("Table"), jsii.String("idempotency"))
	scratch.schedule = awsscheduler.Schedule_FromScheduleArn(scratch.stack, jsii.String("Schedule"), jsii.String("arn:aws:scheduler:eu-west-1:123456789012:schedule/default/nightly"))
	scratch.otherQueue = awssqs.Queue_FromQueueArn(scratch.stack, jsii.String("OtherQueue"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:invoices"))
	scratch.otherFn = awslambda.Function_FromFunctionArn(scratch.stack, jsii.String("OtherFn"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:function:invoicer"))
	scratch.otherTable = awsdynamodb.Table_FromTableName(scratch.stack, jsii.String("OtherTable"), jsii.String("other"))
	scratch.otherSchedule = awsscheduler.Schedule_FromScheduleArn(scratch.stack, jsii.String("OtherSchedule"), jsii.String("arn:aws:scheduler:eu-west-1:123456789012:schedule/default/weekly"))

	os.Exit(jsiitest.Run(m))
}

func buildPipeline(app awscdk.App, id string, props func(awscdk.Stack) *PipelineMonitoringProps) pipelineFixture {
	stack := cdktest.NewStack(app, id)
	f := pipelineFixture{stack: stack}

	f.dlq = newQueue(stack, "OrdersDLQ", nil)
	f.source = newQueue(stack, "Orders", &awssqs.DeadLetterQueue{Queue: f.dlq, MaxReceiveCount: jsii.Number(5)})
	f.consumer = newFunction(stack, "Consumer", nil)
	f.consumer.AddEventSource(awslambdaeventsources.NewSqsEventSource(f.source, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true),
		MetricsConfig:           &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}},
	}))
	cdknag.NagSuppressions_AddResourceSuppressions(f.consumer, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-LambdaEventSourceMappingDestination"),
		Reason: jsii.String("SQS event sources cannot have an on-failure destination; the queue's redrive policy to its DLQ is the failure path."),
	}}, jsii.Bool(true))
	cdknag.NagSuppressions_AddResourceSuppressions(f.consumer, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("Serverless-LambdaDLQ"),
		Reason: jsii.String("An SQS consumer is invoked synchronously by its event source mapping; a function DLQ applies only to asynchronous invocations. The source queue's redrive DLQ is the mechanism."),
	}}, jsii.Bool(false))

	f.failureQueue = newQueue(stack, "DispatcherFailures", nil)
	f.scheduleDLQ = newQueue(stack, "ScheduleDLQ", nil)
	f.dispatcher = newFunction(stack, "Dispatcher", f.failureQueue)
	schedulerRole := awsiam.NewRole(stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil),
	})
	f.schedule = newSchedule(stack, "Nightly", f.dispatcher, f.scheduleDLQ, nil, schedulerRole)
	f.group = awsscheduler.NewScheduleGroup(stack, jsii.String("ReportsGroup"), nil)
	f.groupedSchedule = newSchedule(stack, "Reports", f.dispatcher, f.scheduleDLQ, f.group, schedulerRole)
	cdknag.NagSuppressions_AddResourceSuppressions(schedulerRole, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("The Scheduler Lambda target grants lambda:InvokeFunction on the function and its versions/aliases (<arn>:*); the wildcard is limited to this one function."),
		AppliesTo: &[]any{&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<Dispatcher[0-9A-F]{8}\.Arn>:\*$/`)}},
	}}, jsii.Bool(true))
	nag.Suppress(schedulerRole, true, "test fixture: a stand-in for the user's own schedule role", nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	// These queues receive messages from SQS redrive, Scheduler or Lambda, never from a
	// consumer, so a redrive policy (a DLQ for the DLQ) would only move the problem. They are
	// alarmed at depth >= 1 instead.
	for _, q := range []awssqs.Queue{f.dlq, f.failureQueue, f.scheduleDLQ} {
		suppressions := []*cdknag.NagPackSuppression{{
			Id:     jsii.String("Serverless-SQSRedrivePolicy"),
			Reason: jsii.String("This queue is a dead-letter queue (SQS redrive, Scheduler DLQ or Lambda DLQ); a DLQ of its own would only move the problem. It is alarmed at depth >= 1."),
		}}
		if q != f.dlq {
			suppressions = append(suppressions, &cdknag.NagPackSuppression{
				Id:     jsii.String("AwsSolutions-SQS3"),
				Reason: jsii.String("This queue is a Scheduler DLQ / Lambda DLQ, not an SQS source queue; cdk-nag recognizes only SQS-to-SQS redrive. It is alarmed at depth >= 1."),
			})
		}
		cdknag.NagSuppressions_AddResourceSuppressions(q, &suppressions, jsii.Bool(false))
	}

	f.table = awsdynamodb.NewTable(stack, jsii.String("Idempotency"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expiration"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	nag.Suppress(f.table, false, "test fixture: a stand-in for the user's own table, which monitoring only watches", nag.IDs("DynamoDBInBackupPlan", nag.NIST, nag.HIPAA)...)

	f.mon = NewPipelineMonitoring(stack, "Monitoring", props(stack))
	f.queueAlarms = f.mon.WatchQueue("Orders", f.source, f.dlq)
	f.consumerAlarms = f.mon.WatchConsumer("Orders", f.consumer, f.source)
	f.dispatcherAlarms = f.mon.WatchDispatcher("Nightly", f.dispatcher, f.schedule, f.scheduleDLQ, f.failureQueue)
	f.grouped = f.mon.WatchDispatcher("Reports", f.dispatcher, f.groupedSchedule, f.scheduleDLQ, f.failureQueue)
	f.tableAlarms = f.mon.WatchTable("Idempotency", f.table)
	// A heartbeat schedule (constructs/heartbeat) made elsewhere: the monitoring reads only
	// its identity.
	f.heartbeat = awsscheduler.Schedule_FromScheduleArn(stack, jsii.String("Heartbeat"), jsii.String("arn:aws:scheduler:eu-west-1:123456789012:schedule/heartbeats/orders"))
	f.heartbeatAlarms = f.mon.WatchHeartbeat("Orders", f.consumer, f.heartbeat, 5*time.Minute)
	return f
}

func newQueue(scope constructs.Construct, id string, dlq *awssqs.DeadLetterQueue) awssqs.Queue {
	return awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		DeadLetterQueue: dlq,
	})
}

// newFunction is a minimal function with the hygiene cdk-nag asks of any function: its own
// role and log group, tracing, the latest runtime, a DLQ when it is invoked asynchronously.
func newFunction(scope constructs.Construct, id string, dlq awssqs.IQueue) awslambda.Function {
	logs := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_WEEK,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(scope, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions."),
		AppliesTo: &[]any{jsii.String("Resource::*")},
	}}, jsii.Bool(true))
	// The compliance packs' rules on a function are its owner's choices (network, reserved
	// concurrency, log key, a DLQ for one invoked synchronously): monitoring only watches it.
	const fixture = "test fixture: a stand-in for the user's own function, which monitoring only watches"
	nag.Suppress(logs, false, fixture, nag.IDs("CloudWatchLogGroupEncrypted", nag.Compliance...)...)
	nag.Suppress(role, true, fixture, nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	fn := awslambda.NewFunction(scope, jsii.String(id), &awslambda.FunctionProps{
		Runtime:         awslambda.Runtime_NODEJS_24_X(),
		Architecture:    awslambda.Architecture_ARM_64(),
		Handler:         jsii.String("index.handler"),
		Code:            awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({});")),
		Role:            role,
		LogGroup:        logs,
		Tracing:         awslambda.Tracing_ACTIVE,
		Timeout:         awscdk.Duration_Seconds(jsii.Number(30)),
		MemorySize:      jsii.Number(256),
		DeadLetterQueue: dlq,
	})
	ids := append(nag.IDs("LambdaInsideVPC", nag.Compliance...), nag.IDs("LambdaConcurrency", nag.NIST, nag.HIPAA)...)
	if dlq == nil {
		ids = append(ids, nag.IDs("LambdaDLQ", nag.NIST, nag.HIPAA)...)
	}
	nag.Suppress(fn, false, fixture, ids...)
	return fn
}

func newSchedule(scope constructs.Construct, id string, fn awslambda.IFunction, dlq awssqs.IQueue, group awsscheduler.IScheduleGroup, role awsiam.IRole) awsscheduler.Schedule {
	return awsscheduler.NewSchedule(scope, jsii.String(id), &awsscheduler.ScheduleProps{
		Schedule:      awsscheduler.ScheduleExpression_Rate(awscdk.Duration_Hours(jsii.Number(1))),
		ScheduleGroup: group,
		Target: awsschedulertargets.NewLambdaInvoke(fn, &awsschedulertargets.ScheduleTargetBaseProps{
			DeadLetterQueue: dlq,
			RetryAttempts:   jsii.Number(3),
			MaxEventAge:     awscdk.Duration_Hours(jsii.Number(1)),
			Role:            role,
		}),
	})
}
