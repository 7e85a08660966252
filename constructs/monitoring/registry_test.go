package monitoring

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// tableAlarmCount is the number of table alarms (one per metric: read throttles, write
// throttles, system errors) in stack's template.
func tableAlarmCount(stack awscdk.Stack) (throttles, systemErrors int) {
	tmpl := assertions.Template_FromStack(stack, nil)
	for _, metric := range []string{"ReadThrottleEvents", "WriteThrottleEvents"} {
		throttles += len(*tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Properties": map[string]any{"MetricName": metric},
		}))
	}
	systemErrors = len(*tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"Properties": map[string]any{"Metrics": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"Id": "e_UpdateItem"}),
		})},
	}))
	return throttles, systemErrors
}

// GIVEN two pipelines sharing one table, each with its own monitoring in its own stack, and
// a third watch of the table by one of them under another label WHEN each watches the table
// THEN the app has exactly one set of table alarms, and every call returns it.
func TestSharedTableIsWatchedOnce(t *testing.T) {
	app := cdktest.NewApp()
	shared := cdktest.NewStack(app, "Shared")
	table := awsdynamodb.NewTable(shared, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("id"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
	})
	orders := NewPipelineMonitoring(shared, "OrdersMonitoring", nil)
	other := cdktest.NewStack(app, "Invoices")
	invoices := NewPipelineMonitoring(other, "InvoicesMonitoring", nil)

	first := orders.WatchTable("Orders", table)
	again := orders.WatchTable("SharedTable", table)
	fromOther := invoices.WatchTable("Invoices", table)

	for name, got := range map[string]TableAlarms{"same monitoring": again, "other monitoring": fromOther} {
		if got != first {
			t.Errorf("%s: the second WatchTable returned new alarms %s, want the first call's %s",
				name, *got.WriteThrottles.Node().Path(), *first.WriteThrottles.Node().Path())
		}
	}
	if n := len(invoices.Alarms()); n != 0 {
		t.Errorf("the second monitoring lists %d alarms for a table watched elsewhere", n)
	}
	if th, se := tableAlarmCount(shared); th != 2 || se != 1 {
		t.Errorf("stack Shared: %d throttle and %d system error alarms, want 2 and 1", th, se)
	}
	if th, se := tableAlarmCount(other); th != 0 || se != 0 {
		t.Errorf("stack Invoices: %d throttle and %d system error alarms, want none", th, se)
	}
}

// An imported resource is known by its ARN: two imports of one queue are one queue. Another
// queue is another watch, and another app has a record of its own.
func TestWatchIdentity(t *testing.T) {
	app := cdktest.NewApp()
	stack := cdktest.NewStack(app, "Imports")
	mon := NewPipelineMonitoring(stack, "Monitoring", nil)
	arn := func(name string) *string { return jsii.String("arn:aws:sqs:eu-west-1:123456789012:" + name) }
	q1 := awssqs.Queue_FromQueueArn(stack, jsii.String("Orders1"), arn("orders"))
	q2 := awssqs.Queue_FromQueueArn(stack, jsii.String("Orders2"), arn("orders"))
	dlq := awssqs.Queue_FromQueueArn(stack, jsii.String("OrdersDLQ"), arn("orders-dlq"))
	other := awssqs.Queue_FromQueueArn(stack, jsii.String("Invoices"), arn("invoices"))

	a := mon.WatchQueue("Orders", q1, dlq)
	if b := mon.WatchQueue("OrdersAgain", q2, dlq); b != a {
		t.Errorf("a second import of the same queue got new alarms")
	}
	if c := mon.WatchQueue("Invoices", other, dlq); c == a {
		t.Errorf("another queue got the first queue's alarms")
	}
	if n := len(mon.Alarms()); n != 6 {
		t.Errorf("%d alarms, want 6 (two queues)", n)
	}

	app2 := cdktest.NewApp()
	stack2 := cdktest.NewStack(app2, "Imports")
	mon2 := NewPipelineMonitoring(stack2, "Monitoring", nil)
	mon2.WatchQueue("Orders", awssqs.Queue_FromQueueArn(stack2, jsii.String("Orders"), arn("orders")),
		awssqs.Queue_FromQueueArn(stack2, jsii.String("OrdersDLQ"), arn("orders-dlq")))
	if n := len(mon2.Alarms()); n != 3 {
		t.Errorf("another app's monitoring has %d alarms for the queue, want 3", n)
	}
	// The record is a plain construct at the app root, outside every stack.
	if app2.Node().TryFindChild(jsii.String(registryID)) == nil || stack2.Node().TryFindChild(jsii.String(registryID)) != nil {
		t.Errorf("the watch record is not at the app root")
	}
}

// The DLQ alarm names the consumer that reads its source queue, whichever of WatchQueue and
// WatchConsumer comes first; with no consumer watched it says "the consumer" alone.
func TestDeadLetterAlarmNamesTheConsumer(t *testing.T) {
	dlqDescription := func(stack awscdk.Stack, mon PipelineMonitoring, alarms QueueAlarms) string {
		t.Helper()
		props := (*assertions.Template_FromStack(stack, nil).ToJSON())["Resources"].(map[string]any)[cdktest.LogicalID(stack, alarms.DeadLetterMessages)].(map[string]any)["Properties"].(map[string]any)
		return flatten(props["AlarmDescription"])
	}
	for _, order := range []string{"queue first", "consumer first", "no consumer"} {
		stack := cdktest.NewStack(cdktest.NewApp(), strings.ReplaceAll(order, " ", "-"))
		mon := NewPipelineMonitoring(stack, "Monitoring", nil)
		dlq := awssqs.Queue_FromQueueArn(stack, jsii.String("Dlq"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:orders-dlq"))
		src := awssqs.Queue_FromQueueArn(stack, jsii.String("Src"), jsii.String("arn:aws:sqs:eu-west-1:123456789012:orders"))
		fn := awslambda.Function_FromFunctionArn(stack, jsii.String("Fn"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:function:orders-consumer"))
		var alarms QueueAlarms
		switch order {
		case "queue first":
			alarms = mon.WatchQueue("Orders", src, dlq)
			mon.WatchConsumer("Orders", fn, src)
		case "consumer first":
			mon.WatchConsumer("Orders", fn, src)
			alarms = mon.WatchQueue("Orders", src, dlq)
		default:
			alarms = mon.WatchQueue("Orders", src, dlq)
		}
		desc := dlqDescription(stack, mon, alarms)
		want := "bad input the consumer orders-consumer moved there at its first receive, or messages that failed on orders maxReceiveCount times (its log says why)."
		if order == "no consumer" {
			want = "bad input the consumer moved there at its first receive"
		}
		if !strings.Contains(desc, want) || !strings.HasSuffix(desc, "Severity: page. Runbook: "+DefaultRunbookURL+"#dlq-not-empty") {
			t.Errorf("%s: description\n%s\nwant %q and the severity and runbook at the end", order, desc, want)
		}
	}
}

// A consumer in another stack than the DLQ alarm is not named in it: the reference would make
// the queue's stack depend on the consumer's, which depends on the queue's already (its event
// source), and synth would fail with a dependency cycle.
func TestDeadLetterAlarmAcrossStacks(t *testing.T) {
	app := cdktest.NewApp()
	queues := cdktest.NewStack(app, "Queues")
	dlq := awssqs.NewQueue(queues, jsii.String("Dlq"), nil)
	src := awssqs.NewQueue(queues, jsii.String("Src"), &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(5)}})
	alarms := NewPipelineMonitoring(queues, "Monitoring", nil).WatchQueue("Orders", src, dlq)
	compute := cdktest.NewStack(app, "Compute")
	fn := awslambda.NewFunction(compute, jsii.String("Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_20_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler=async()=>{}")),
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(src, nil))
	NewPipelineMonitoring(compute, "Monitoring", nil).WatchConsumer("Orders", fn, src)

	var desc string
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("synth: %v", r)
			}
		}()
		assertions.Template_FromStack(compute, nil)
		props := (*assertions.Template_FromStack(queues, nil).ToJSON())["Resources"].(map[string]any)[cdktest.LogicalID(queues, alarms.DeadLetterMessages)].(map[string]any)["Properties"].(map[string]any)
		desc = flatten(props["AlarmDescription"])
	}()
	if !strings.Contains(desc, "bad input the consumer moved there at its first receive") || strings.Contains(desc, "Compute") {
		t.Errorf("description names the other stack's consumer:\n%s", desc)
	}
}
