package monitoring

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// severityTopicID is the logical id of the topic alarm must notify: the paging topic for a
// paging alarm, else the ticketing topic.
func severityTopicID(t *testing.T, f pipelineFixture, alarm awscloudwatch.Alarm) string {
	t.Helper()
	if slices.Contains(f.mon.PagingAlarms(), awscloudwatch.IAlarm(alarm)) {
		return cdktest.LogicalID(f.stack, f.mon.Topic())
	}
	return cdktest.LogicalID(f.stack, f.mon.TicketTopic())
}

// pagingAlarms are the alarms that mean lost or stuck work, for fixture f.
func pagingAlarms(f pipelineFixture) []awscloudwatch.Alarm {
	var out []awscloudwatch.Alarm
	out = append(out, f.queueAlarms.DeadLetterMessages, f.consumerAlarms.Stalled, f.heartbeatAlarms.Missing)
	for _, d := range []DispatcherAlarms{f.dispatcherAlarms, f.grouped} {
		out = append(out, d.ScheduleDropped, d.ScheduleDeadLetterFailed, d.ScheduleDeadLetter, d.FailureDestination)
	}
	return out
}

// Lost or stuck work pages; the rest opens a ticket. Each alarm is in exactly one list, and
// its description names its severity.
func TestSeverities(t *testing.T) {
	f := def
	want := pagingAlarms(f)
	paging, ticket := f.mon.PagingAlarms(), f.mon.TicketAlarms()
	if len(paging) != len(want) || len(paging)+len(ticket) != len(f.mon.Alarms()) {
		t.Fatalf("%d paging + %d ticket alarms of %d; want %d paging", len(paging), len(ticket), len(f.mon.Alarms()), len(want))
	}
	for _, a := range want {
		if !slices.Contains(paging, awscloudwatch.IAlarm(a)) {
			t.Errorf("%s does not page", *a.Node().Path())
		}
	}
	for _, a := range f.mon.Alarms() {
		sev := "ticket"
		if slices.Contains(paging, a) {
			sev = "page"
		} else if !slices.Contains(ticket, a) {
			t.Errorf("%s is in neither list", *a.Node().Path())
		}
		desc := flatten(alarmProps(t, f, a.(awscloudwatch.Alarm))["AlarmDescription"])
		if !strings.Contains(desc, " Severity: "+sev+". Runbook: ") {
			t.Errorf("%s description does not name severity %s:\n%s", *a.Node().Path(), sev, desc)
		}
	}
}

// The composite alarm is ALARM while any paging alarm is, covers no ticketing alarm, has no
// actions of its own, and links its runbook section.
func TestUnhealthyCompositeAlarm(t *testing.T) {
	f := def
	id := cdktest.LogicalID(f.stack, f.mon.Unhealthy())
	_, props := onlyResource(t, f.tmpl, "AWS::CloudWatch::CompositeAlarm", nil)
	rule := flatten(props["AlarmRule"])
	ref := func(a awscloudwatch.Alarm) string {
		return `ALARM("` + cdktest.JSON(map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(f.stack, a), "Arn"}}) + `")`
	}
	for _, a := range pagingAlarms(f) {
		if !strings.Contains(rule, ref(a)) {
			t.Errorf("the rule lacks paging alarm %s", *a.Node().Path())
		}
	}
	for _, a := range f.mon.TicketAlarms() {
		if strings.Contains(rule, ref(a.(awscloudwatch.Alarm))) {
			t.Errorf("the rule covers ticketing alarm %s", *a.Node().Path())
		}
	}
	if got := strings.Count(rule, " OR ") + 1; got != len(pagingAlarms(f)) {
		t.Errorf("the rule has %d terms, want %d: %s", got, len(pagingAlarms(f)), rule)
	}
	for _, k := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
		if _, ok := props[k]; ok {
			t.Errorf("the composite alarm has %s", k)
		}
	}
	if desc := flatten(props["AlarmDescription"]); !strings.HasSuffix(desc, "Runbook: "+DefaultRunbookURL+"#"+anchorUnhealthy) {
		t.Errorf("composite description lacks its runbook link: %s", desc)
	}
	// The dashboard's first row shows it.
	_, dash := onlyResource(t, f.tmpl, "AWS::CloudWatch::Dashboard", nil)
	if body := flatten(dash["DashboardBody"]); !strings.Contains(body, cdktest.JSON(map[string]any{"Fn::GetAtt": []any{id, "Arn"}})) {
		t.Errorf("the dashboard does not show the composite alarm")
	}
}

// A monitoring that watches nothing has a composite alarm that is always OK.
func TestUnhealthyWithoutWatchesIsFalse(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Empty")
	NewPipelineMonitoring(stack, "Monitoring", nil)
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::CloudWatch::CompositeAlarm"), map[string]any{"AlarmRule": "FALSE"})
}

// A given Topic without TicketTopic receives every alarm, as before the split.
func TestGivenTopicReceivesEveryAlarm(t *testing.T) {
	if custom.mon.TicketTopic() != custom.mon.Topic() {
		t.Errorf("TicketTopic() is not the given Topic")
	}
	if len(custom.mon.TicketAlarms()) == 0 || len(custom.mon.PagingAlarms()) == 0 {
		t.Errorf("custom has %d ticketing and %d paging alarms, want both", len(custom.mon.TicketAlarms()), len(custom.mon.PagingAlarms()))
	}
}

// GIVEN an EncryptionKey THEN both topics and the undelivered-notifications queue use it, no
// key of the construct's own is made, and the key policy lets CloudWatch and SNS use it.
func TestEncryptionKeyCoversTopicsAndQueue(t *testing.T) {
	f := keyed
	keyID := cdktest.LogicalID(f.stack, keyedKey)
	keyArn := map[string]any{"Fn::GetAtt": []any{keyID, "Arn"}}
	f.tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(1))
	f.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(2))
	f.tmpl.AllResourcesProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"KmsMasterKeyId": keyArn})
	onlyResource(t, f.tmpl, "AWS::SQS::Queue", map[string]any{"MessageRetentionPeriod": 1209600, "KmsMasterKeyId": keyArn})
	for _, service := range []string{"cloudwatch.amazonaws.com", "sns.amazonaws.com"} {
		cdktest.Must(t, service+" may use the key", func() {
			f.tmpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
				"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{
						"Effect":    "Allow",
						"Principal": map[string]any{"Service": service},
						"Action":    []any{"kms:Decrypt", "kms:GenerateDataKey*"},
						"Resource":  "*",
					}),
				})},
			})
		})
	}
}

// An imported key is used as it is: the topics name it, and nothing else is created for it.
func TestImportedEncryptionKey(t *testing.T) {
	stack := cdktest.NewStack(cdktest.NewApp(), "Imported")
	arn := "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
	mon := NewPipelineMonitoring(stack, "Monitoring", &PipelineMonitoringProps{
		EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("Key"), jsii.String(arn)),
		AlarmEmails:   []string{"oncall@example.com"},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(0))
	tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(2))
	tmpl.AllResourcesProperties(jsii.String("AWS::SNS::Topic"), map[string]any{"KmsMasterKeyId": arn})
	tmpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"KmsMasterKeyId": arn})
	if mon.Topic() == mon.TicketTopic() {
		t.Errorf("one topic for both severities")
	}
	// CDK cannot grant CloudWatch and SNS the key: synth warns, naming what the key policy
	// must allow and why. A key of the app (the other fixtures) gets the grants, and no warning.
	var warnings []string
	for _, m := range *assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		warnings = append(warnings, fmt.Sprint(m.Entry.Data))
	}
	for _, want := range []string{
		"EncryptionKey " + arn + " is an imported key, whose key policy CDK cannot change: it must allow cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey*, " +
			"because CloudWatch alarms publish to the encrypted alarm topics, or no alarm notifies anyone",
		"it must allow sns.amazonaws.com kms:Decrypt and kms:GenerateDataKey*, because SNS writes the notifications email subscriptions could not deliver",
		`AcknowledgeWarning("` + WarningImportedKey + `", reason)`,
	} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no synth warning with %q; warnings: %q", want, warnings)
		}
	}
	if len(warnings) != 2 {
		t.Errorf("%d warnings, want one per grant: %q", len(warnings), warnings)
	}
	for _, f := range []pipelineFixture{def, keyed} {
		if n := len(*assertions.Annotations_FromStack(f.stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("imported key")))); n != 0 {
			t.Errorf("%s: %d imported-key warnings for a key of the app", *f.stack.StackName(), n)
		}
	}
	// Acknowledged, the warnings are gone.
	acked := cdktest.NewStack(cdktest.NewApp(), "Acknowledged")
	NewPipelineMonitoring(acked, "Monitoring", &PipelineMonitoringProps{
		EncryptionKey: awskms.Key_FromKeyArn(acked, jsii.String("Key"), jsii.String(arn)),
	})
	awscdk.Annotations_Of(acked).AcknowledgeWarning(jsii.String(WarningImportedKey), jsii.String("the key policy grants CloudWatch"))
	if n := len(*assertions.Annotations_FromStack(acked).FindWarning(jsii.String("*"), assertions.Match_AnyValue())); n != 0 {
		t.Errorf("acknowledged: %d warnings left", n)
	}
}

// The Slack channel receives both topics, with a read-only guardrail and a role without
// permissions.
func TestSlackChannel(t *testing.T) {
	f := keyed
	if f.mon.SlackChannel() == nil || def.mon.SlackChannel() != nil {
		t.Fatalf("SlackChannel() = %v with Slack ids, %v without", f.mon.SlackChannel(), def.mon.SlackChannel())
	}
	_, props := onlyResource(t, f.tmpl, "AWS::Chatbot::SlackChannelConfiguration", map[string]any{
		"SlackWorkspaceId": "T0123ABCD",
		"SlackChannelId":   "C0123ABCD",
		"SnsTopicArns": []any{
			map[string]any{"Ref": cdktest.LogicalID(f.stack, f.mon.Topic())},
			map[string]any{"Ref": cdktest.LogicalID(f.stack, f.mon.TicketTopic())},
		},
	})
	if g := cdktest.JSON(props["GuardrailPolicies"]); !strings.Contains(g, ":iam::aws:policy/CloudWatchReadOnlyAccess") || strings.Count(g, "arn:") != 1 {
		t.Errorf("GuardrailPolicies = %s, want CloudWatchReadOnlyAccess alone", g)
	}
	// The name ends with the Region (the fixture's is eu-west-1) and fits the pattern.
	if name, _ := props["ConfigurationName"].(string); !slackNameRe.MatchString(name) || !strings.HasSuffix(name, "-eu-west-1") {
		t.Errorf("ConfigurationName %q does not match %s or does not end with the Region", name, slackNameRe)
	}
	f.tmpl.ResourceCountIs(jsii.String("AWS::IAM::Policy"), jsii.Number(countPolicies(t, f)))
}

// countPolicies counts the IAM policies of keyed that belong to the fixture's functions and
// roles, not to the Slack channel's role: the channel's role must have none.
func countPolicies(t *testing.T, f pipelineFixture) int {
	t.Helper()
	role := cdktest.LogicalID(f.stack, f.mon.SlackChannel().Role())
	n := 0
	for id, r := range *f.tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		if strings.Contains(cdktest.JSON((*r)["Properties"]), `{"Ref":"`+role+`"}`) {
			t.Errorf("policy %s is attached to the Slack channel's role", id)
			continue
		}
		n++
	}
	_, roleProps := onlyResource(t, f.tmpl, "AWS::IAM::Role", map[string]any{
		"AssumeRolePolicyDocument": assertions.Match_ObjectLike(&map[string]any{
			"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"Principal": map[string]any{"Service": "chatbot.amazonaws.com"},
			})}),
		}),
	})
	if _, ok := roleProps["ManagedPolicyArns"]; ok {
		t.Errorf("the Slack channel's role has managed policies: %v", roleProps["ManagedPolicyArns"])
	}
	return n
}

// A composite rule CloudWatch could reject fails the synthesis, naming the construct.
func TestUnhealthyRuleTooLongFailsSynthesis(t *testing.T) {
	for _, n := range []int{maxUnhealthyAlarms, maxUnhealthyAlarms + 1} {
		stack := cdktest.NewStack(cdktest.NewApp(), "Many")
		mon := NewPipelineMonitoring(stack, "Monitoring", nil)
		for i := range n {
			q := awssqs.Queue_FromQueueArn(stack, jsii.String(fmt.Sprintf("Q%d", i)), jsii.String(fmt.Sprintf("arn:aws:sqs:eu-west-1:123456789012:q%d", i)))
			dlq := awssqs.Queue_FromQueueArn(stack, jsii.String(fmt.Sprintf("D%d", i)), jsii.String(fmt.Sprintf("arn:aws:sqs:eu-west-1:123456789012:d%d", i)))
			mon.WatchQueue(fmt.Sprintf("Q%d", i), q, dlq)
		}
		err := synthError(stack)
		switch {
		case n <= maxUnhealthyAlarms && err != "":
			t.Errorf("%d paging alarms: synthesis failed: %s", n, err)
		case n > maxUnhealthyAlarms && !strings.Contains(err, fmt.Sprintf(`PipelineMonitoring "Many/Monitoring": its composite alarm Unhealthy would cover %d paging alarms`, n)):
			t.Errorf("%d paging alarms: want the rule-length error, got %q", n, err)
		}
	}
}

// synthError synthesizes stack and returns the error it panics with, or "".
func synthError(stack awscdk.Stack) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	assertions.Template_FromStack(stack, nil)
	return ""
}
