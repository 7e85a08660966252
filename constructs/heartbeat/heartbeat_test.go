package heartbeat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/msgkey"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// only returns the properties of the one resource of type in f's template.
func (f fixture) only(t *testing.T, typ string) (string, map[string]any) {
	t.Helper()
	res := *f.tmpl.FindResources(jsii.String(typ), nil)
	if len(res) != 1 {
		t.Fatalf("%s: %d resources of type %s, want 1", *f.stack.StackName(), len(res), typ)
	}
	for id, r := range res {
		props, _ := (*r)["Properties"].(map[string]any)
		return id, props
	}
	panic("unreachable")
}

// sendMessage renders the schedule's input as Scheduler does at the scheduled time at: the
// queue's Ref as the URL and the placeholder filled in.
func sendMessage(t *testing.T, props map[string]any, at string) map[string]any {
	t.Helper()
	input := cfn.JoinString(cfn.Dig(props, "Target", "Input"), func(ref any) string { return "<ref " + cfn.RefTarget(ref) + ">" })
	input = strings.ReplaceAll(input, "<aws.scheduler.scheduled-time>", at)
	var in map[string]any
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		t.Fatalf("schedule input %q is not JSON: %v", input, err)
	}
	return in
}

// The schedule calls SQS SendMessage itself on the queue, with the probe attribute the
// consumer knows and an id it accepts, at a fixed rate with no flexible window, and gives up
// on a send after its interval. On FIFO the heartbeats have their own group and a
// deduplication id per occurrence.
func TestScheduleSendsAProbeToTheQueue(t *testing.T) {
	const at = "2026-11-25T03:05:00Z"
	for _, c := range []struct {
		f           fixture
		rate        string
		maxAge      float64
		fifo, group bool
	}{
		{standard, "rate(5 minutes)", 300, false, false},
		{fifo, "rate(1 minute)", 60, true, true},
	} {
		_, props := c.f.only(t, "AWS::Scheduler::Schedule")
		queueID := cdktest.LogicalID(c.f.stack, c.f.q.Queue())
		if got := props["ScheduleExpression"]; got != c.rate {
			t.Errorf("%s: ScheduleExpression %v, want %s", *c.f.stack.StackName(), got, c.rate)
		}
		if mode := cfn.Dig(props, "FlexibleTimeWindow", "Mode"); mode != "OFF" || props["State"] != "ENABLED" {
			t.Errorf("%s: FlexibleTimeWindow %v, State %v", *c.f.stack.StackName(), mode, props["State"])
		}
		arn := cfn.JoinString(cfn.Dig(props, "Target", "Arn"), func(any) string { return "aws" })
		if arn != "arn:aws:scheduler:::aws-sdk:sqs:sendMessage" {
			t.Errorf("%s: target %s, want SQS SendMessage as a universal target", *c.f.stack.StackName(), arn)
		}
		if r := cfn.Dig(props, "Target", "RetryPolicy"); cdktest.JSON(r) != cdktest.JSON(map[string]any{"MaximumEventAgeInSeconds": c.maxAge, "MaximumRetryAttempts": RetryAttempts}) {
			t.Errorf("%s: RetryPolicy %s", *c.f.stack.StackName(), cdktest.JSON(r))
		}
		in := sendMessage(t, props, at)
		if want := "<ref " + queueID + ">"; in["QueueUrl"] != want {
			t.Errorf("%s: QueueUrl %v, want %s", *c.f.stack.StackName(), in["QueueUrl"], want)
		}
		id, _ := cfn.Dig(in, "MessageAttributes", contract.AttrProbe, "StringValue").(string)
		if id != ProbePrefix+at || !msgkey.ValidProbeID(id) || cfn.Dig(in, "MessageAttributes", contract.AttrProbe, "DataType") != "String" {
			t.Errorf("%s: probe attribute %s: want %s, a probe id the consumer accepts", *c.f.stack.StackName(), cdktest.JSON(in["MessageAttributes"]), ProbePrefix+at)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(in["MessageBody"].(string)), &body); err != nil || body["pipelineProbe"] != ProbePrefix+at || body["sentBy"] != "heartbeat" {
			t.Errorf("%s: body %v (%v): want the probe id with the scheduled time filled in, sent by the heartbeat", *c.f.stack.StackName(), in["MessageBody"], err)
		}
		_, hasGroup := in["MessageGroupId"]
		if hasGroup != c.group || (c.fifo && (in["MessageGroupId"] != FifoGroup || in["MessageDeduplicationId"] != id)) {
			t.Errorf("%s: MessageGroupId %v, MessageDeduplicationId %v", *c.f.stack.StackName(), in["MessageGroupId"], in["MessageDeduplicationId"])
		}
		if c.f.hb.Every() != map[bool]time.Duration{false: DefaultEvery, true: time.Minute}[c.fifo] {
			t.Errorf("%s: Every() = %v", *c.f.stack.StackName(), c.f.hb.Every())
		}
	}
}

// Scheduler's role may send to this queue only (and use its key only through SQS), and only
// schedules of this account in the heartbeat's group may assume it.
func TestRoleMaySendToTheQueueOnly(t *testing.T) {
	for _, f := range []fixture{standard, fifo} {
		queueID := cdktest.LogicalID(f.stack, f.q.Queue())
		roleID := cdktest.LogicalID(f.stack, f.hb.Role())
		want := []any{map[string]any{"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": map[string]any{"Fn::GetAtt": []any{queueID, "Arn"}}}}
		if f.key != nil {
			want = append([]any{map[string]any{
				"Action":    []any{"kms:GenerateDataKey", "kms:Decrypt"},
				"Condition": map[string]any{"StringEquals": map[string]any{"kms:ViaService": "sqs.eu-west-1.amazonaws.com"}},
				"Effect":    "Allow",
				"Resource":  map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(f.stack, f.key), "Arn"}},
			}}, want...)
		}
		_, policy := f.only(t, "AWS::IAM::Policy")
		if got := cfn.Dig(policy, "PolicyDocument", "Statement"); cdktest.JSON(got) != cdktest.JSON(want) {
			t.Errorf("%s: the role's statements\n got %s\nwant %s", *f.stack.StackName(), cdktest.JSON(got), cdktest.JSON(want))
		}
		_, schedule := f.only(t, "AWS::Scheduler::Schedule")
		if got := cdktest.JSON(cfn.Dig(schedule, "Target", "RoleArn")); got != cdktest.JSON(map[string]any{"Fn::GetAtt": []any{roleID, "Arn"}}) {
			t.Errorf("%s: the schedule assumes %s, not the heartbeat's role", *f.stack.StackName(), got)
		}
		_, role := f.only(t, "AWS::IAM::Role")
		groupID := cdktest.LogicalID(f.stack, f.hb.ScheduleGroup())
		cond := cdktest.JSON(cfn.Dig(role, "AssumeRolePolicyDocument", "Statement"))
		if !strings.Contains(cond, `"aws:SourceAccount":"123456789012"`) || !strings.Contains(cond, `"aws:SourceArn":{"Fn::GetAtt":["`+groupID+`","Arn"]}`) {
			t.Errorf("%s: trust policy %s: want the account and the schedule group as conditions", *f.stack.StackName(), cond)
		}
	}
	// The given group is used; no group of its own.
	if n := len(*fifo.tmpl.FindResources(jsii.String("AWS::Scheduler::ScheduleGroup"), nil)); n != 1 {
		t.Errorf("fifo: %d schedule groups, want only the given one", n)
	}
	standard.tmpl.HasResource(jsii.String("AWS::Scheduler::ScheduleGroup"), map[string]any{"DeletionPolicy": "Delete"})
}

func TestNagFindsNothing(t *testing.T) {
	for _, f := range []fixture{standard, fifo} {
		for _, finding := range cdktest.NagFindings(f.stack) {
			t.Errorf("%s: cdk-nag %s", *f.stack.StackName(), finding)
		}
	}
}

func TestInvalidProps(t *testing.T) {
	q := queue.NewProcessingQueue(scratch, "Queue", nil)
	for i, c := range []struct {
		props *HeartbeatProps
		want  []string
	}{
		{nil, []string{"Queue: got nil; pass the processing queue the consumer reads"}},
		{&HeartbeatProps{Queue: q, Every: 30 * time.Second}, []string{"Every: got 30s; use whole minutes from 1m0s to 12h0m0s (0 for the default 5m0s)"}},
		{&HeartbeatProps{Queue: q, Every: 13 * time.Hour}, []string{"Every: got 13h0m0s; use whole minutes from 1m0s to 12h0m0s"}},
		{&HeartbeatProps{Queue: q, Every: 90 * time.Second}, []string{"Every: got 1m30s; use whole minutes: Scheduler's rate expression counts minutes"}},
	} {
		cdktest.ExpectProblemIn(t, `Heartbeat "Scratch/Bad`+string(rune('0'+i))+`"`, func() {
			NewHeartbeat(scratch, "Bad"+string(rune('0'+i)), c.props)
		}, c.want...)
	}
}
