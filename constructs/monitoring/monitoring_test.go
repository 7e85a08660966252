package monitoring

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

const (
	gte          = "GreaterThanOrEqualToThreshold"
	notBreaching = "notBreaching"
)

func dims(name string, value any) []any {
	return []any{map[string]any{"Name": name, "Value": value}}
}

// GIVEN the default fixture WHEN every part is watched THEN each alarm watches the right
// metric of the right resource with the documented threshold, periods and missing-data rule.
func TestAlarmDefinitions(t *testing.T) {
	f := def
	q, c, d, g, tb := f.queueAlarms, f.consumerAlarms, f.dispatcherAlarms, f.grouped, f.tableAlarms
	fnDims := func(fn any) []any { return dims("FunctionName", fn) }
	consumerFn := resolved(f.stack, f.consumer.FunctionName())
	dispatcherFn := resolved(f.stack, f.dispatcher.FunctionName())
	tableDims := dims("TableName", resolved(f.stack, f.table.TableName()))

	cases := []struct {
		name  string
		alarm awscloudwatch.Alarm
		want  map[string]any
	}{
		{"queue DLQ depth is immediate", q.DeadLetterMessages, map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
			"Dimensions": dims("QueueName", resolved(f.stack, f.dlq.QueueName())),
			"Statistic":  "Maximum", "Period": 60, "Threshold": 1, "EvaluationPeriods": 1, "DatapointsToAlarm": 1,
		}},
		{"queue oldest message", q.OldestMessage, map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateAgeOfOldestMessage",
			"Dimensions": dims("QueueName", resolved(f.stack, f.source.QueueName())),
			"Statistic":  "Maximum", "Period": 300, "Threshold": 900, "EvaluationPeriods": 1,
		}},
		{"queue backlog", q.Backlog, map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
			"Dimensions": dims("QueueName", resolved(f.stack, f.source.QueueName())),
			"Statistic":  "Minimum", "Period": 300, "Threshold": 1000, "EvaluationPeriods": 3, "DatapointsToAlarm": 3,
		}},
		{"consumer errors", c.Errors, map[string]any{
			"Namespace": "AWS/Lambda", "MetricName": "Errors", "Dimensions": fnDims(consumerFn),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"consumer throttles", c.Throttles, map[string]any{
			"Namespace": "AWS/Lambda", "MetricName": "Throttles", "Dimensions": fnDims(consumerFn),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"dispatcher errors", d.Errors, map[string]any{
			"Namespace": "AWS/Lambda", "MetricName": "Errors", "Dimensions": fnDims(dispatcherFn),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"dispatcher throttles", d.Throttles, map[string]any{
			"Namespace": "AWS/Lambda", "MetricName": "Throttles", "Dimensions": fnDims(dispatcherFn),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"schedule target errors (default group)", d.ScheduleTargetErrors, map[string]any{
			"Namespace": "AWS/Scheduler", "MetricName": "TargetErrorCount", "Dimensions": dims("ScheduleGroup", "default"),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"schedule dropped (default group)", d.ScheduleDropped, map[string]any{
			"Namespace": "AWS/Scheduler", "MetricName": "InvocationDroppedCount", "Dimensions": dims("ScheduleGroup", "default"),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"schedule DLQ delivery failed (default group)", d.ScheduleDeadLetterFailed, map[string]any{
			"Namespace": "AWS/Scheduler", "MetricName": "InvocationsFailedToBeSentToDeadLetterCount", "Dimensions": dims("ScheduleGroup", "default"),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"schedule target errors (own group)", g.ScheduleTargetErrors, map[string]any{
			"Namespace": "AWS/Scheduler", "MetricName": "TargetErrorCount",
			"Dimensions": dims("ScheduleGroup", resolved(f.stack, f.group.ScheduleGroupName())),
		}},
		{"schedule DLQ depth is immediate", d.ScheduleDeadLetter, map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
			"Dimensions": dims("QueueName", resolved(f.stack, f.scheduleDLQ.QueueName())),
			"Statistic":  "Maximum", "Period": 60, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"dispatcher failure queue depth is immediate", d.FailureDestination, map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible",
			"Dimensions": dims("QueueName", resolved(f.stack, f.failureQueue.QueueName())),
			"Statistic":  "Maximum", "Period": 60, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"table read throttles", tb.ReadThrottles, map[string]any{
			"Namespace": "AWS/DynamoDB", "MetricName": "ReadThrottleEvents", "Dimensions": tableDims,
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		{"table write throttles", tb.WriteThrottles, map[string]any{
			"Namespace": "AWS/DynamoDB", "MetricName": "WriteThrottleEvents", "Dimensions": tableDims,
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 1,
		}},
		// The one alarm below a threshold, and the one with missing data breaching: the
		// consumer publishes ProbeCompleted only when a probe completed.
		{"heartbeat missing for two intervals", f.heartbeatAlarms.Missing, map[string]any{
			"Namespace": "IdempotentSQS", "MetricName": "ProbeCompleted", "Dimensions": dims(telemetry.DimensionService, consumerFn),
			"Statistic": "Sum", "Period": 300, "Threshold": 1, "EvaluationPeriods": 2, "DatapointsToAlarm": 2,
			"ComparisonOperator": "LessThanThreshold", "TreatMissingData": "breaching",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]any{
				"ComparisonOperator": gte,
				"TreatMissingData":   notBreaching,
				"AlarmActions":       []any{map[string]any{"Ref": severityTopicID(t, f, tc.alarm)}},
			}
			for k, v := range tc.want {
				want[k] = v
			}
			expectAlarm(t, f, tc.alarm, want)
		})
	}
}

// The stalled-consumer alarm is a metric-math alarm: its Metrics array holds the expression
// (the only series that returns data) and the three source-queue metrics it reads.
func TestStalledConsumerAlarmIsAMathExpressionOverTheSourceQueue(t *testing.T) {
	f := def
	queueDims := dims("QueueName", resolved(f.stack, f.source.QueueName()))
	stat := func(id, metric, statistic string) any {
		return map[string]any{
			"Id": id, "ReturnData": false,
			"MetricStat": map[string]any{
				"Metric": map[string]any{"Namespace": "AWS/SQS", "MetricName": metric, "Dimensions": queueDims},
				"Period": 300, "Stat": statistic,
			},
		}
	}
	expectAlarm(t, f, f.consumerAlarms.Stalled, map[string]any{
		"ComparisonOperator": gte, "Threshold": 1, "EvaluationPeriods": 4, "DatapointsToAlarm": 4,
		"TreatMissingData": notBreaching,
		"Metrics": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{
				"Expression": "IF((FILL(visible, 0) + FILL(inflight, 0)) > 0 AND FILL(deleted, 0) == 0, 1, 0)",
				"ReturnData": true,
			}),
		}),
	})
	metrics := alarmProps(t, f, f.consumerAlarms.Stalled)["Metrics"].([]any)
	if len(metrics) != 4 {
		t.Fatalf("want the expression and 3 metrics, got %d entries", len(metrics))
	}
	for _, want := range []any{
		stat("visible", "ApproximateNumberOfMessagesVisible", "Maximum"),
		stat("inflight", "ApproximateNumberOfMessagesNotVisible", "Maximum"),
		stat("deleted", "NumberOfMessagesDeleted", "Sum"),
	} {
		expectAlarm(t, f, f.consumerAlarms.Stalled, map[string]any{"Metrics": assertions.Match_ArrayWith(&[]any{want})})
	}
}

// SystemErrors is published per operation, so the alarm sums the store's four operations.
func TestTableSystemErrorsAlarmSumsTheStoreOperations(t *testing.T) {
	f := def
	entries := []any{assertions.Match_ObjectLike(&map[string]any{
		"Expression": "FILL(e_GetItem, 0) + FILL(e_PutItem, 0) + FILL(e_UpdateItem, 0) + FILL(e_DeleteItem, 0)",
		"ReturnData": true,
	})}
	for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem"} {
		entries = append(entries, map[string]any{
			"Id": "e_" + op, "ReturnData": false,
			"MetricStat": map[string]any{
				"Metric": map[string]any{
					"Namespace": "AWS/DynamoDB", "MetricName": "SystemErrors",
					// CloudFormation gets dimensions sorted by name.
					"Dimensions": []any{
						map[string]any{"Name": "Operation", "Value": op},
						map[string]any{"Name": "TableName", "Value": resolved(f.stack, f.table.TableName())},
					},
				},
				"Period": 300, "Stat": "Sum",
			},
		})
	}
	expectAlarm(t, f, f.tableAlarms.SystemErrors, map[string]any{
		"ComparisonOperator": gte, "Threshold": 1, "EvaluationPeriods": 1, "TreatMissingData": notBreaching,
	})
	if n := len(alarmProps(t, f, f.tableAlarms.SystemErrors)["Metrics"].([]any)); n != len(entries) {
		t.Errorf("want the expression and 4 metrics, got %d entries", n)
	}
	// One entry at a time: ArrayWith keeps order, and CDK sorts metrics by id.
	for _, e := range entries {
		expectAlarm(t, f, f.tableAlarms.SystemErrors, map[string]any{"Metrics": assertions.Match_ArrayWith(&[]any{e})})
	}
}

// Conditional check failures are how the store detects duplicates: never an alarm.
func TestUserErrorsAndConditionalCheckFailuresAreNotAlarmed(t *testing.T) {
	for _, metric := range []string{"UserErrors", "ConditionalCheckFailedRequests"} {
		found := def.tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Properties": map[string]any{"MetricName": metric},
		})
		if len(*found) != 0 {
			t.Errorf("%s is alarmed (%d alarms); it must only be charted", metric, len(*found))
		}
	}
}

// Each Watch call creates the alarms of its kind's list (alarms.go), and Alarms() returns all
// of them; each field of its result holds a distinct one, whose description starts with the
// watch's label.
func TestEachWatchCreatesItsAlarms(t *testing.T) {
	for _, f := range []pipelineFixture{def, custom} {
		watches := []struct {
			label  string
			alarms any
			count  int
		}{
			{"Orders", f.queueAlarms, len(queueAlarms)},
			{"Orders", f.consumerAlarms, len(consumerAlarms)},
			{"Nightly", f.dispatcherAlarms, len(dispatcherAlarms)},
			{"Reports", f.grouped, len(dispatcherAlarms)},
			{"Idempotency", f.tableAlarms, len(tableAlarms)},
			{"Orders", f.heartbeatAlarms, len(heartbeatAlarms)},
		}
		seen := map[string]bool{}
		total := 0
		for _, w := range watches {
			v := reflect.ValueOf(w.alarms)
			total += w.count
			for i := 0; i < v.NumField(); i++ {
				alarm, _ := v.Field(i).Interface().(awscloudwatch.Alarm)
				if alarm == nil {
					t.Errorf("%T.%s is nil", w.alarms, v.Type().Field(i).Name)
					continue
				}
				id := cdktest.LogicalID(f.stack, alarm)
				if seen[id] {
					t.Errorf("%T.%s reuses alarm %s", w.alarms, v.Type().Field(i).Name, id)
				}
				seen[id] = true
				desc := flatten(alarmProps(t, f, alarm)["AlarmDescription"])
				if !strings.HasPrefix(desc, "["+w.label+"] ") {
					t.Errorf("%T.%s description does not start with its label: %q", w.alarms, v.Type().Field(i).Name, desc)
				}
			}
		}
		f.tmpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(total))
		if got := len(f.mon.Alarms()); got != total {
			t.Errorf("Alarms() has %d alarms, want %d", got, total)
		}
	}
}

// A description is what the person on call reads first: it names the resource and what
// to run or check. Spot-check the commands and the CloudWatch length limit.
func TestAlarmDescriptionsAreActionable(t *testing.T) {
	f := def
	cases := []struct {
		alarm awscloudwatch.Alarm
		want  []string
	}{
		// Not every DLQ message failed maxReceiveCount times: the consumer moves bad input at
		// its first receive, with a reason attribute and no redrive origin to return to.
		{f.queueAlarms.DeadLetterMessages, []string{cdktest.JSON(resolved(f.stack, f.dlq.QueueName())),
			"bad input the consumer " + cdktest.JSON(resolved(f.stack, f.consumer.FunctionName())) + " moved there at its first receive, or messages that failed on " +
				cdktest.JSON(resolved(f.stack, f.source.QueueName())) + " maxReceiveCount times (its log says why)",
			"DeadLetterReason", `pipelinectl dlq inspect --stack {"Ref":"AWS::StackName"} --pipeline Orders`,
			"once fixed, dlq redrive with the same flags and --yes"}},
		{f.queueAlarms.OldestMessage, []string{"15m", "list-event-source-mappings --event-source-arn " + cdktest.JSON(resolved(f.stack, f.source.QueueArn()))}},
		{f.queueAlarms.Backlog, []string{"1000", "15m", "maximum concurrency"}},
		{f.consumerAlarms.Stalled, []string{"20m", cdktest.JSON(resolved(f.stack, f.consumer.FunctionName())), "list-event-source-mappings", "InvalidInput"}},
		{f.dispatcherAlarms.ScheduleDeadLetter, []string{cdktest.JSON(resolved(f.stack, f.scheduleDLQ.QueueName())), "aws lambda invoke"}},
		{f.dispatcherAlarms.FailureDestination, []string{cdktest.JSON(resolved(f.stack, f.failureQueue.QueueName())), "requestPayload"}},
		{f.tableAlarms.WriteThrottles, []string{cdktest.JSON(resolved(f.stack, f.table.TableName())), "Contributor Insights"}},
		{f.heartbeatAlarms.Missing, []string{"No heartbeat completed in the consumer " + cdktest.JSON(resolved(f.stack, f.consumer.FunctionName())) + " for 10m (one is sent every 5m)",
			"kms:Decrypt", "list-event-source-mappings", "TargetErrorCount", "pipelinectl verify"}},
	}
	for _, tc := range cases {
		desc := flatten(alarmProps(t, f, tc.alarm)["AlarmDescription"])
		for _, w := range tc.want {
			if !strings.Contains(desc, w) {
				t.Errorf("%s description lacks %q:\n%s", *tc.alarm.Node().Path(), w, desc)
			}
		}
	}
	// No placeholder for the operator to fill in: every name is the deployed one.
	placeholder := regexp.MustCompile(`<[a-z][a-z ]*>`)
	for _, a := range f.mon.Alarms() {
		if desc := flatten(alarmProps(t, f, a.(awscloudwatch.Alarm))["AlarmDescription"]); placeholder.MatchString(desc) {
			t.Errorf("%s description has a placeholder %s:\n%s", *a.Node().Path(), placeholder.FindString(desc), desc)
		}
	}
	// CloudWatch caps descriptions at 1024 characters: check the longest each can resolve to,
	// with the longest RunbookURL validation lets through.
	longerURL := maxRunbookURLLen - len(DefaultRunbookURL)
	longest := 0
	for _, a := range f.mon.Alarms() {
		alarm := a.(awscloudwatch.Alarm)
		n := maxResolvedLen(f, alarmProps(t, f, alarm)["AlarmDescription"]) + longerURL
		if n > 1024 {
			t.Errorf("%s description can resolve to %d characters, over CloudWatch's 1024", *alarm.Node().Path(), n)
		}
		longest = max(longest, n)
	}
	t.Logf("longest possible description: %d characters", longest)
}

// maxResolvedLen is the longest v can be once deployed: literal text plus the longest name
// each reference can resolve to (queue 80, queue ARN 143, function and schedule 64, table 255).
func maxResolvedLen(f pipelineFixture, v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case map[string]any:
		if join, ok := x["Fn::Join"].([]any); ok && len(join) == 2 {
			parts, _ := join[1].([]any)
			n := 0
			for _, p := range parts {
				n += maxResolvedLen(f, p)
			}
			return n
		}
		if att, ok := x["Fn::GetAtt"].([]any); ok && len(att) == 2 && att[1] == "QueueName" {
			return 80
		}
		if att, ok := x["Fn::GetAtt"].([]any); ok && len(att) == 2 && att[1] == "Arn" {
			r, _ := (*f.tmpl.ToJSON())["Resources"].(map[string]any)[att[0].(string)].(map[string]any)
			if r["Type"] == "AWS::SQS::Queue" {
				// arn:<partition>:sqs:<region>:<account>:<name>, partition and region at
				// most 20 characters each, the name 80.
				return len("arn::sqs:::") + 20 + 20 + 12 + 80
			}
		}
		if id, ok := x["Ref"].(string); ok {
			if id == "AWS::StackName" {
				return 128
			}
			r, _ := (*f.tmpl.ToJSON())["Resources"].(map[string]any)[id].(map[string]any)
			switch r["Type"] {
			case "AWS::Lambda::Function", "AWS::Scheduler::Schedule", "AWS::Scheduler::ScheduleGroup":
				return 64
			}
		}
	}
	return 255
}

// topicID is the logical id of def's paging topic.
func topicID(t *testing.T) string {
	t.Helper()
	return cdktest.LogicalID(def.stack, def.mon.Topic())
}

// Every alarm notifies the topic of its severity, and nothing else.
func TestAlarmsNotifyTheTopic(t *testing.T) {
	for _, a := range def.mon.Alarms() {
		p := alarmProps(t, def, a.(awscloudwatch.Alarm))
		topic := severityTopicID(t, def, a.(awscloudwatch.Alarm))
		if got, want := cdktest.JSON(p["AlarmActions"]), cdktest.JSON([]any{map[string]any{"Ref": topic}}); got != want {
			t.Errorf("%s AlarmActions = %s, want %s", *a.Node().Path(), got, want)
		}
		if _, ok := p["OKActions"]; ok {
			t.Errorf("%s has OKActions without NotifyOnOK", *a.Node().Path())
		}
	}
}

// The default topic is encrypted with its own rotating key, and the key policy lets
// CloudWatch alarms use it (alias/aws/sns would not).
func TestDefaultTopicIsEncryptedWithAKeyCloudWatchCanUse(t *testing.T) {
	keyID, _ := onlyResource(t, def.tmpl, "AWS::KMS::Key", map[string]any{
		"EnableKeyRotation": true,
		"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
				"Action":    []any{"kms:Decrypt", "kms:GenerateDataKey*"},
				"Resource":  "*",
			}),
		})},
	})
	def.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(2))
	def.tmpl.AllResourcesProperties(jsii.String("AWS::SNS::Topic"), map[string]any{
		"KmsMasterKeyId": map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}},
	})
}

// Each topic's policy denies plain HTTP and lets only this account's alarms publish.
func TestTopicPolicyEnforcesTLSAndAdmitsCloudWatchAlarms(t *testing.T) {
	for _, tp := range []awssns.ITopic{def.mon.Topic(), def.mon.TicketTopic()} {
		topicPolicyAdmitsCloudWatch(t, map[string]any{"Ref": cdktest.LogicalID(def.stack, tp)})
	}
}

func topicPolicyAdmitsCloudWatch(t *testing.T, topic map[string]any) {
	t.Helper()
	def.tmpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
		"Topics": []any{topic},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{
				"Effect":    "Deny",
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			}),
			assertions.Match_ObjectLike(&map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
				"Action":    "sns:Publish",
				"Resource":  topic,
				"Condition": assertions.Match_ObjectLike(&map[string]any{
					"StringEquals": map[string]any{"aws:SourceAccount": "123456789012"},
				}),
			}),
		})},
	})
}

// AlarmEmails are subscribed to both topics and TicketEmails to the ticketing one, each
// subscription sending what it cannot deliver to the construct's dead-letter queue.
func TestEmailSubscriptions(t *testing.T) {
	dlqID, _ := onlyResource(t, def.tmpl, "AWS::SQS::Queue", map[string]any{"MessageRetentionPeriod": 1209600, "SqsManagedSseEnabled": true})
	page, ticket := topicID(t), cdktest.LogicalID(def.stack, def.mon.TicketTopic())
	if page == ticket {
		t.Fatalf("the paging and ticketing topics are one resource %s", page)
	}
	subs := []struct{ email, topic string }{
		{"oncall@example.com", page}, {"oncall@example.com", ticket},
		{"team@example.org", page}, {"team@example.org", ticket},
		{"tickets@example.com", ticket},
	}
	def.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(len(subs)))
	for _, sub := range subs {
		onlyResource(t, def.tmpl, "AWS::SNS::Subscription", map[string]any{
			"Protocol":      "email",
			"Endpoint":      sub.email,
			"TopicArn":      map[string]any{"Ref": sub.topic},
			"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}},
		})
	}
}

// The dashboard has a row per watch, naming every watched resource, and charts every counter
// the functions register (functions/telemetry) under the default namespace with Service = the
// watched function's name: what the functions publish, since Service is their
// AWS_LAMBDA_FUNCTION_NAME (functions/consumer and functions/dispatcher
// TestStartPublishesUnderTheLambdaFunctionName).
func TestDashboardShowsEveryWatchedResource(t *testing.T) {
	f := def
	_, props := onlyResource(t, f.tmpl, "AWS::CloudWatch::Dashboard", nil)
	if _, named := props["DashboardName"]; named {
		t.Errorf("DashboardName set without the prop: %v", props["DashboardName"])
	}
	body := flatten(props["DashboardBody"])
	consumer := cdktest.JSON(resolved(f.stack, f.consumer.FunctionName()))
	want := []string{
		"### Alarm notifications", "### Queue Orders", "### Consumer Orders", "### Dispatcher Nightly",
		"### Dispatcher Reports", "### Table Idempotency", "### Heartbeat Orders",
		`["IdempotentSQS","ProbeCompleted","` + telemetry.DimensionService + `","` + consumer + `"`,
	}
	for _, token := range []*string{
		f.source.QueueName(), f.dlq.QueueName(), f.consumer.FunctionName(), f.dispatcher.FunctionName(),
		f.schedule.ScheduleName(), f.groupedSchedule.ScheduleName(), f.group.ScheduleGroupName(),
		f.scheduleDLQ.QueueName(), f.failureQueue.QueueName(), f.table.TableName(),
	} {
		want = append(want, cdktest.JSON(resolved(f.stack, token)))
	}
	for _, m := range telemetry.ConsumerMetrics() {
		want = append(want, `["IdempotentSQS","`+m+`","`+telemetry.DimensionService+`","`+consumer+`"`)
	}
	for _, m := range telemetry.DispatcherMetrics() {
		want = append(want, `["IdempotentSQS","`+m+`","`+telemetry.DimensionService+`","`+cdktest.JSON(resolved(f.stack, f.dispatcher.FunctionName()))+`"`)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("dashboard body lacks %s", w)
		}
	}
}

// GIVEN every prop overridden and an imported topic THEN no topic or key is created, the
// alarms use the given values, and OK transitions notify too.
func TestCustomProps(t *testing.T) {
	f := custom
	f.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0))
	f.tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(0))
	f.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(0))
	f.tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(4)) // the fixture's; no undelivered-notifications queue

	for _, a := range f.mon.Alarms() {
		p := alarmProps(t, f, a.(awscloudwatch.Alarm))
		for _, key := range []string{"AlarmActions", "OKActions"} {
			if got := cdktest.JSON(p[key]); got != cdktest.JSON([]any{customTopicArn}) {
				t.Errorf("%s %s = %s, want the given topic", *a.Node().Path(), key, got)
			}
		}
	}
	expectAlarm(t, f, f.queueAlarms.OldestMessage, map[string]any{"Threshold": 600, "Period": 60, "EvaluationPeriods": 1})
	expectAlarm(t, f, f.queueAlarms.Backlog, map[string]any{"Threshold": 50, "Period": 60, "EvaluationPeriods": 2, "DatapointsToAlarm": 2})
	expectAlarm(t, f, f.queueAlarms.DeadLetterMessages, map[string]any{"Period": 60, "EvaluationPeriods": 1})
	expectAlarm(t, f, f.consumerAlarms.Errors, map[string]any{"Period": 60})
	expectAlarm(t, f, f.consumerAlarms.Stalled, map[string]any{
		"EvaluationPeriods": 30, "DatapointsToAlarm": 30,
		"Metrics": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Id": "deleted", "MetricStat": assertions.Match_ObjectLike(&map[string]any{"Period": 60}),
		})}),
	})

	_, props := onlyResource(t, f.tmpl, "AWS::CloudWatch::Dashboard", nil)
	if props["DashboardName"] != "orders-pipeline" {
		t.Errorf("DashboardName = %v, want orders-pipeline", props["DashboardName"])
	}
	if body := flatten(props["DashboardBody"]); !strings.Contains(body, `["Custom/Orders","Processed","Service",`) {
		t.Errorf("dashboard does not chart the consumer metrics under MetricsNamespace Custom/Orders")
	}
}

// The consumer's row charts its event source mapping's own metrics (polled, invoked, failed
// to invoke, deleted, filtered out) by the mapping's UUID when the mapping publishes them.
func TestDashboardChartsTheMappingMetrics(t *testing.T) {
	f := def
	_, props := onlyResource(t, f.tmpl, "AWS::CloudWatch::Dashboard", nil)
	body := flatten(props["DashboardBody"])
	mappings := f.tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil)
	if len(*mappings) != 1 {
		t.Fatalf("%d event source mappings in the fixture, want the consumer's one", len(*mappings))
	}
	for id := range *mappings {
		for _, metric := range []string{"PolledEventCount", "InvokedEventCount", "FailedInvokeEventCount", "DeletedEventCount", "FilteredOutEventCount"} {
			if want := `["AWS/Lambda","` + metric + `","EventSourceMappingUUID","` + cdktest.JSON(map[string]any{"Ref": id}) + `"`; !strings.Contains(body, want) {
				t.Errorf("the dashboard does not chart %s of mapping %s (want %s)", metric, id, want)
			}
		}
	}
}

// mappingWithMetrics finds the function's mapping from the watched queue, and only when it
// publishes its metrics: a mapping without MetricsConfig, or from another queue, charts nothing.
func TestMappingWithMetrics(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Mappings")
	orders, invoices := awssqs.NewQueue(stack, jsii.String("Orders"), nil), awssqs.NewQueue(stack, jsii.String("Invoices"), nil)
	metered, plain := newFunction(stack, "Metered", nil), newFunction(stack, "Plain", nil)
	metered.AddEventSource(awslambdaeventsources.NewSqsEventSource(orders, &awslambdaeventsources.SqsEventSourceProps{
		MetricsConfig: &awslambda.MetricsConfig{Metrics: &[]awslambda.MetricType{awslambda.MetricType_EVENT_COUNT}},
	}))
	plain.AddEventSource(awslambdaeventsources.NewSqsEventSource(orders, nil))
	if id := mappingWithMetrics(metered, orders); id == nil || !strings.Contains(fmt.Sprint(stack.Resolve(id)), "Ref") {
		t.Errorf("metered function, its queue: got %v, want the mapping's Ref", id)
	}
	if id := mappingWithMetrics(metered, invoices); id != nil {
		t.Errorf("metered function, another queue: got %v, want nil", stack.Resolve(id))
	}
	if id := mappingWithMetrics(plain, orders); id != nil {
		t.Errorf("a mapping without MetricsConfig: got %v, want nil", stack.Resolve(id))
	}
	if id := mappingWithMetrics(scratch.fn, scratch.queue); id != nil {
		t.Errorf("an imported function: got %v, want nil", stack.Resolve(id))
	}
}
