package dispatcher_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

var (
	app      awscdk.App
	stack    awscdk.Stack
	template assertions.Template

	hourly, tenants          dispatcher.ScheduledDispatcher
	standardQueue, fifoQueue *fakeQueue

	// encrypted: a customer managed key for its queues, your own function (Entry) without
	// Items, a schedule group given.
	encrypted   dispatcher.ScheduledDispatcher
	key         awskms.Key
	sharedGroup awsscheduler.ScheduleGroup
)

func TestMain(m *testing.M) {
	app = cdktest.NewApp()
	cdktest.AddNagPacks(app)
	stack = cdktest.NewStack(app, "Fixture")
	standardQueue = newFakeQueue(stack, "StandardQueue", false)
	fifoQueue = newFakeQueue(stack, "FifoQueue", true)

	hourly = dispatcher.NewScheduledDispatcher(stack, "Hourly", &dispatcher.ScheduledDispatcherProps{
		Queue: standardQueue,
		// b's group is its fair-queue tenant on this standard queue.
		Items: []dispatcher.WorkItem{{ID: "a", Payload: map[string]any{"n": 1, "tags": []any{"x"}}}, {ID: "b", Group: "tenant-b"}},
	})
	tenants = dispatcher.NewScheduledDispatcher(stack, "Tenants", &dispatcher.ScheduledDispatcherProps{
		Queue: fifoQueue, JobName: "tenant-sync", Cron: "30 2 ? * MON-FRI *", TimeZone: "Europe/Berlin",
		// Period is deprecated; 1m is still accepted (it is what every key is now) and sets nothing.
		Period: time.Minute, DefaultGroup: "shared",
		Items:    []dispatcher.WorkItem{{ID: "t1", Group: "tenant-1"}, {ID: "t2", Group: "tenant-2", Payload: map[string]any{"full": true}}, {ID: "all"}},
		Function: function.Options{Timeout: 2 * time.Minute, MemorySize: 512, Environment: map[string]string{"LOG_LEVEL": "DEBUG"}}, SendMaxAttempts: 8,
		ScheduleRetryAttempts: new(0), ScheduleMaxEventAge: 2 * time.Hour,
		AsyncRetryAttempts: new(0), AsyncMaxEventAge: time.Hour,
		Disabled: true,
	})
	key = awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true), RemovalPolicy: awscdk.RemovalPolicy_DESTROY})
	sharedGroup = awsscheduler.NewScheduleGroup(stack, jsii.String("SharedGroup"), nil)
	encrypted = dispatcher.NewScheduledDispatcher(stack, "Encrypted", &dispatcher.ScheduledDispatcherProps{
		Queue: standardQueue, Function: function.Options{Entry: "testdata/shards"}, EncryptionKey: key, ScheduleGroup: sharedGroup,
	})
	template = assertions.Template_FromStack(stack, nil)
	os.Exit(jsiitest.Run(m))
}

func getAtt(c constructs.IConstruct, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(stack, c), attr}}
}

func ref(c constructs.IConstruct) map[string]any {
	return map[string]any{"Ref": cdktest.LogicalID(stack, c)}
}

// only fails unless the resources of typ matching props are exactly the one of c.
func only(t *testing.T, typ string, c constructs.IConstruct, props map[string]any) {
	t.Helper()
	res := template.FindResources(jsii.String(typ), props)
	if _, ok := (*res)[cdktest.LogicalID(stack, c)]; !ok || len(*res) != 1 {
		t.Fatalf("%s %s does not match (%d matches)", typ, cdktest.LogicalID(stack, c), len(*res))
	}
}

// matches fails unless the resource of c matches props.
func matches(t *testing.T, typ string, c constructs.IConstruct, props map[string]any) {
	t.Helper()
	if _, ok := (*template.FindResources(jsii.String(typ), props))[cdktest.LogicalID(stack, c)]; !ok {
		t.Errorf("%s %s does not match %v", typ, cdktest.LogicalID(stack, c), props)
	}
}

func TestFunctionProperties(t *testing.T) {
	tests := []struct {
		name            string
		d               dispatcher.ScheduledDispatcher
		timeout, memory int
		env             map[string]any
	}{
		{"defaults", hourly, 60, 256, map[string]any{
			"QUEUE_URL":         ref(standardQueue.queue),
			"JOB_NAME":          "Hourly",
			"SEND_MAX_ATTEMPTS": "5",
			"METRICS_NAMESPACE": "IdempotentSQS",
			"LOG_LEVEL":         "INFO",
		}},
		{"fifo, tuned", tenants, 120, 512, map[string]any{
			"QUEUE_URL":                ref(fifoQueue.queue),
			"JOB_NAME":                 "tenant-sync",
			"DEFAULT_MESSAGE_GROUP_ID": "shared",
			"SEND_MAX_ATTEMPTS":        "8",
			"METRICS_NAMESPACE":        "IdempotentSQS",
			"LOG_LEVEL":                "DEBUG",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			only(t, "AWS::Lambda::Function", tt.d.Function(), map[string]any{"Properties": map[string]any{
				"Architectures": []any{"arm64"},
				"Runtime":       "provided.al2023",
				"Handler":       "bootstrap",
				"Timeout":       tt.timeout,
				"MemorySize":    tt.memory,
				"TracingConfig": map[string]any{"Mode": "Active"},
				"Role":          getAtt(tt.d.Role(), "Arn"),
				"LoggingConfig": map[string]any{"LogGroup": ref(tt.d.LogGroup())},
				"Environment":   map[string]any{"Variables": assertions.Match_ObjectEquals(&tt.env)},
			}})
		})
	}
	// The construct value itself is the jsii construct: it can be passed where CDK expects one.
	if got := *awscdk.Stack_Of(hourly).StackName(); got != "Fixture" {
		t.Errorf("Stack.Of(dispatcher) = %q", got)
	}
	if hourly.Timeout() != dispatcher.DefaultTimeout || hourly.JobName() != "Hourly" || tenants.JobName() != "tenant-sync" {
		t.Errorf("getters: %v %q %q", hourly.Timeout(), hourly.JobName(), tenants.JobName())
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name             string
		d                dispatcher.ScheduledDispatcher
		expression, zone string
		state            string
		retries, maxAge  int
		input            string
	}{
		{"defaults", hourly, "cron(0 * * * ? *)", "UTC", "ENABLED", 3, 3600,
			`{"executionId":"<aws.scheduler.execution-id>","items":[{"id":"a","payload":{"n":1,"tags":["x"]}},{"group":"tenant-b","id":"b"}],` +
				`"job":"Hourly","scheduledTime":"<aws.scheduler.scheduled-time>"}`},
		{"fifo, tuned", tenants, "cron(30 2 ? * MON-FRI *)", "Europe/Berlin", "DISABLED", 0, 7200,
			`{"executionId":"<aws.scheduler.execution-id>","items":[{"group":"tenant-1","id":"t1"},` +
				`{"group":"tenant-2","id":"t2","payload":{"full":true}},{"id":"all"}],"job":"tenant-sync","scheduledTime":"<aws.scheduler.scheduled-time>"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := assertions.NewCapture(nil)
			role := assertions.NewCapture(nil)
			only(t, "AWS::Scheduler::Schedule", tt.d.Schedule(), map[string]any{"Properties": map[string]any{
				"ScheduleExpression":         tt.expression,
				"ScheduleExpressionTimezone": tt.zone,
				"FlexibleTimeWindow":         assertions.Match_ObjectEquals(&map[string]any{"Mode": "OFF"}),
				"State":                      tt.state,
				"Target": map[string]any{
					"Arn":              getAtt(tt.d.Function(), "Arn"),
					"RoleArn":          role,
					"RetryPolicy":      map[string]any{"MaximumRetryAttempts": tt.retries, "MaximumEventAgeInSeconds": tt.maxAge},
					"DeadLetterConfig": map[string]any{"Arn": getAtt(tt.d.ScheduleDeadLetterQueue(), "Arn")},
					"Input":            input,
				},
			}})
			// The input is the contract with functions/dispatcher: compare it as JSON.
			var got, want any
			if err := json.Unmarshal([]byte(*input.AsString()), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.input), &want); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Input = %s\nwant   %s", *input.AsString(), tt.input)
			}
			if !strings.Contains(*input.AsString(), `"scheduledTime":"<aws.scheduler.scheduled-time>"`) {
				t.Errorf("Input lacks Scheduler's scheduled-time context attribute: %s", *input.AsString())
			}

			// The schedule's role may invoke this function and send to its DLQ, nothing else,
			// and only this account's default schedule group may assume it.
			roleID := (*role.AsObject())["Fn::GetAtt"].([]any)[0].(string)
			res := template.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{
				"Properties": map[string]any{"Roles": []any{map[string]any{"Ref": roleID}}},
			})
			statements := statementsOf(t, res)
			want2 := []string{
				fmt.Sprint("[lambda:InvokeFunction] ", []any{getAtt(tt.d.Function(), "Arn"),
					map[string]any{"Fn::Join": []any{"", []any{getAtt(tt.d.Function(), "Arn"), ":*"}}}}),
				fmt.Sprint("[sqs:SendMessage] ", getAtt(tt.d.ScheduleDeadLetterQueue(), "Arn")),
			}
			if fmt.Sprint(statements) != fmt.Sprint(want2) {
				t.Errorf("schedule role statements:\n got %v\nwant %v", statements, want2)
			}
			template.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]any{
				"AssumeRolePolicyDocument": map[string]any{"Statement": []any{map[string]any{
					"Principal": map[string]any{"Service": "scheduler.amazonaws.com"},
					"Condition": map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": "123456789012", "aws:SourceArn": assertions.Match_AnyValue()}},
				}}},
			})
		})
	}
}

// statementsOf renders each statement of the policies as "[actions] resource", in order.
func statementsOf(t *testing.T, res *map[string]*map[string]any) []string {
	t.Helper()
	var out []string
	for _, p := range *res {
		doc := (*p)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			st := s.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("unexpected statement %v", st)
			}
			out = append(out, fmt.Sprint(actions(st), " ", st["Resource"]))
		}
	}
	return out
}

func actions(s map[string]any) []string {
	switch a := s["Action"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			out = append(out, v.(string))
		}
		return out
	}
	return nil
}

func TestAsyncInvokeConfig(t *testing.T) {
	tests := []struct {
		name            string
		d               dispatcher.ScheduledDispatcher
		retries, maxAge int
	}{
		{"defaults", hourly, 2, 21600},
		{"tuned", tenants, 0, 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			destination := assertions.NewCapture(nil)
			template.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
				"FunctionName":             ref(tt.d.Function()),
				"Qualifier":                "$LATEST",
				"MaximumRetryAttempts":     tt.retries,
				"MaximumEventAgeInSeconds": tt.maxAge,
				"DestinationConfig":        map[string]any{"OnFailure": map[string]any{"Destination": destination}},
			})
			if got, want := fmt.Sprint(*destination.AsObject()), fmt.Sprint(getAtt(tt.d.FailureQueue(), "Arn")); got != want {
				t.Errorf("OnFailure destination = %s, want the failure queue %s", got, want)
			}
		})
	}
}

func TestDeadLetterQueues(t *testing.T) {
	for _, q := range []constructs.IConstruct{hourly.ScheduleDeadLetterQueue(), hourly.FailureQueue(), tenants.FailureQueue()} {
		matches(t, "AWS::SQS::Queue", q, map[string]any{"Properties": assertions.Match_ObjectEquals(&map[string]any{
			"SqsManagedSseEnabled":   true,
			"MessageRetentionPeriod": 14 * 24 * 3600,
		})})
		template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
			"Queues": []any{ref(q)},
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			}}},
		})
	}
}

func TestFunctionPermissions(t *testing.T) {
	res := template.FindResources(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Properties": map[string]any{"Roles": []any{ref(hourly.Role())}},
	})
	got := statementsOf(t, res)
	want := []string{
		fmt.Sprint("[logs:CreateLogStream logs:PutLogEvents] ", getAtt(hourly.LogGroup(), "Arn")),
		"[xray:PutTraceSegments xray:PutTelemetryRecords] *",
		fmt.Sprint("[sqs:SendMessage sqs:GetQueueAttributes sqs:GetQueueUrl] ", getAtt(hourly.FailureQueue(), "Arn")),
		fmt.Sprint("[sqs:SendMessage sqs:GetQueueAttributes sqs:GetQueueUrl] ", getAtt(standardQueue.queue, "Arn")),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("function role statements:\n got %v\nwant %v", got, want)
	}
	for id, p := range *template.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		doc := (*p)["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			for _, a := range actions(s.(map[string]any)) {
				if strings.Contains(a, "*") {
					t.Errorf("%s allows wildcard action %s", id, a)
				}
			}
		}
	}
	template.AllResourcesProperties(jsii.String("AWS::IAM::Role"), map[string]any{"ManagedPolicyArns": assertions.Match_Absent()})
	matches(t, "AWS::Logs::LogGroup", hourly.LogGroup(), map[string]any{"Properties": map[string]any{"RetentionInDays": 30}, "DeletionPolicy": "Retain"})
}

func TestNag(t *testing.T) {
	for _, finding := range cdktest.NagFindings(stack) {
		t.Errorf("unsuppressed cdk-nag finding at %s", finding)
	}
}
