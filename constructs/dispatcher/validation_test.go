package dispatcher_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// specQueue is a Target known only by its type: validation never needs the queue itself.
type specQueue struct{ fifo bool }

func (q specQueue) Queue() awssqs.IQueue { return nil }
func (q specQueue) Fifo() bool           { return q.fifo }

var (
	std   = specQueue{}
	fifoQ = specQueue{fifo: true}
	one   = []dispatcher.WorkItem{{ID: "a"}}
)

func build(id string, props *dispatcher.ScheduledDispatcherProps) func() {
	return func() { dispatcher.NewScheduledDispatcher(stack, id, props) }
}

func TestValidationMessages(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	tests := []struct {
		name  string
		props dispatcher.ScheduledDispatcherProps
		want  []string
	}{
		{"queue required", dispatcher.ScheduledDispatcherProps{Items: one}, []string{"Queue: got nil", "pass the queue"}},
		{"items required", dispatcher.ScheduledDispatcherProps{Queue: std}, []string{"Items: got none; give at least one WorkItem: " +
			"the default function sends exactly these (with your own ItemSource in Function.Entry, Items may be empty)"}},
		{"job name charset", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, JobName: "nightly report"},
			[]string{`JobName: got "nightly report"`, "1 to 64 letters"}},
		{"default job name from an unusable id", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one},
			[]string{`JobName: got "Bad Id"`, "the default is the construct id"}},
		{"cron with five fields", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 * * * *"},
			[]string{`Cron: got "0 * * * *"`, "has 5 fields; use six"}},
		{"cron with both day fields set", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 12 * * MON *"},
			[]string{`Cron: got "0 12 * * MON *"`, `exactly one of day-of-month (3rd field) and day-of-week (5th field) to "?"`}},
		{"cron with both day fields ?", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 12 ? * ? *"},
			[]string{`Cron: got "0 12 ? * ? *"`, `exactly one of day-of-month`}},
		{"cron with the wrapper", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "cron(0 * * * ? *)"},
			[]string{`Cron: got "cron(0 * * * ? *)"`, `without the "cron(...)" wrapper`}},
		{"cron with hour 25", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 25 * * ? *"},
			[]string{`Cron: got "0 25 * * ? *"; hours field: "25" is not a value from 0 to 23; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with minute 61", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "61 * * * ? *"},
			[]string{`Cron: got "61 * * * ? *"; minutes field: "61" is not a value from 0 to 59; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with day 32", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 32 * ? *"},
			[]string{`Cron: got "0 0 32 * ? *"; day-of-month field: "32" is not a value from 1 to 31; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with month 13", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 * 13 ? *"},
			[]string{`Cron: got "0 0 * 13 ? *"; month field: "13" is not a value from 1 to 12; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with weekday 8", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 ? * 8 *"},
			[]string{`Cron: got "0 0 ? * 8 *"; day-of-week field: "8" is not a value from 1 to 7; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with sixth Monday", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 ? * MON#6 *"},
			[]string{`Cron: got "0 0 ? * MON#6 *"; day-of-week field: "MON#6": L and # only as "L", "nL" or "n#k" on their own; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with wrap-around range", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 22-2 * * ? *"},
			[]string{`Cron: got "0 22-2 * * ? *"; hours field: "22-2": wrap-around ranges are not supported; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron with year 2200", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 * * ? 2200"},
			[]string{`Cron: got "0 0 * * ? 2200"; year field: "2200" is not a value from 1970 to 2199; use AWS's cron syntax (minutes 0-59, hours 0-23, day-of-month 1-31, L, LW or nW, month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, L, nL or n#k, year 1970-2199), e.g. "0 2 ? * MON-FRI *"; a form Scheduler documents that this check does not know can be given as a token (a CfnParameter's value), which skips it`}},
		{"cron on February 30th", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 30 2 ? *"},
			[]string{`Cron: got "0 0 30 2 ? *"; never runs: no date from `, ` to the end of 2199 matches it (a day a month does not have, or past years); fix the day, month or year field`}},
		{"cron in past years only", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Cron: "0 0 * * ? 2020-2024"},
			[]string{`Cron: got "0 0 * * ? 2020-2024"; never runs: no date from `}},
		{"unknown time zone", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, TimeZone: "Mars/Olympus"},
			[]string{`TimeZone: got "Mars/Olympus"`, "IANA time zone"}},
		{"Local is not a zone", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, TimeZone: "Local"},
			[]string{`TimeZone: got "Local"`}},
		{"deprecated period of a day", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Period: 24 * time.Hour},
			[]string{"Period: got 24h0m0s; remove it: Period is deprecated and no longer supported. The idempotency key is now derived " +
				"from each scheduled occurrence (the scheduled time to the minute); a longer period gave distinct runs one key " +
				"(around daylight-saving changes even the runs of a daily cron) and the consumer dropped all but the first as duplicates"}},
		{"deprecated period of an hour", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Period: time.Hour},
			[]string{"Period: got 1h0m0s; remove it: Period is deprecated"}},
		{"deprecated period below a minute", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Period: 30 * time.Second},
			[]string{"Period: got 30s; remove it"}},
		{"timeout above Lambda's limit", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Timeout: time.Hour}},
			[]string{"Function.Timeout: got 1h0m0s", "1s to 15m0s"}},
		{"memory above Lambda's limit", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{MemorySize: 20000}},
			[]string{"Function.MemorySize: got 20000"}},
		{"schedule retries above 185", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, ScheduleRetryAttempts: new(186)},
			[]string{"ScheduleRetryAttempts: got 186", "0 to 185"}},
		{"negative schedule retries", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, ScheduleRetryAttempts: new(-1)},
			[]string{"ScheduleRetryAttempts: got -1"}},
		{"schedule event age below a minute", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, ScheduleMaxEventAge: 30 * time.Second},
			[]string{"ScheduleMaxEventAge: got 30s", "1m0s to 24h0m0s"}},
		{"schedule event age above a day", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, ScheduleMaxEventAge: 25 * time.Hour},
			[]string{"ScheduleMaxEventAge: got 25h0m0s"}},
		{"async retries above 2", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, AsyncRetryAttempts: new(3)},
			[]string{"AsyncRetryAttempts: got 3", "0, 1 or 2"}},
		{"async event age above 6h", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, AsyncMaxEventAge: 7 * time.Hour},
			[]string{"AsyncMaxEventAge: got 7h0m0s", "1m0s to 6h0m0s"}},
		// The function refuses SEND_MAX_ATTEMPTS above 10: a value it refuses fails every run.
		{"send attempts above the function's limit", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, SendMaxAttempts: 11},
			[]string{"SendMaxAttempts: got 11; use 1 to 10: the dispatcher function refuses SEND_MAX_ATTEMPTS above 10, so every run would fail"}},
		{"negative send attempts", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, SendMaxAttempts: -1},
			[]string{"SendMaxAttempts: got -1; use 1 to 10"}},
		{"default group on a standard queue", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, DefaultGroup: "g"},
			[]string{`DefaultGroup: got "g"`, "a default group applies to FIFO queues only; on a standard queue give each item its fair-queue tenant in Group"}},
		{"default group charset", dispatcher.ScheduledDispatcherProps{Queue: fifoQ, Items: one, DefaultGroup: "a b"},
			[]string{`DefaultGroup: got "a b"`, "MessageGroupId rules"}},
		{"empty item id", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{{ID: ""}}},
			[]string{`Items[0].ID: got ""`, "1 to 128 letters"}},
		{"duplicate item id", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{{ID: "a"}, {ID: "b"}, {ID: "a"}}},
			[]string{`Items[2].ID: got "a"`, "make it unique"}},
		{"item group charset on a standard queue", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{{ID: "a", Group: "a b"}}},
			[]string{`Items[0].Group: got "a b"`, "MessageGroupId rules"}},
		{"item group charset", dispatcher.ScheduledDispatcherProps{Queue: fifoQ, Items: []dispatcher.WorkItem{{ID: "a", Group: strings.Repeat("g", 129)}}},
			[]string{"Items[0].Group: got", "MessageGroupId rules"}},
		{"payload that is not JSON", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{{ID: "a", Payload: map[string]any{"f": func() {}}}}},
			[]string{"Items[0].Payload: does not encode as JSON"}},
		{"input over the size limit", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{
			{ID: "a", Payload: map[string]any{"x": big}}, {ID: "b", Payload: map[string]any{"x": big}}, {ID: "c", Payload: map[string]any{"x": big}}}},
			[]string{"Items: the schedule input would be", fmt.Sprintf("over the %d-byte limit", dispatcher.MaxInputBytes)}},
		{"item id as a token", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{{ID: *awscdk.Token_AsString(map[string]any{"Ref": "P"}, nil)}}},
			[]string{"Items[0].ID: got", "give a literal id: item ids cannot be tokens (their uniqueness, which keeps their keys apart, is checked at synth)"}},
		{"item group as a token", dispatcher.ScheduledDispatcherProps{Queue: fifoQ, Items: []dispatcher.WorkItem{{ID: "a", Group: *awscdk.Token_AsString(map[string]any{"Ref": "P"}, nil)}}},
			[]string{"Items[0].Group: got", "give a literal group: item groups cannot be tokens (use DefaultGroup for a deploy-time group)"}},
		{"entry as a token", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Entry: *awscdk.Token_AsString(map[string]any{"Ref": "P"}, nil)}},
			[]string{"Function.Entry: Entry and ModuleDir cannot be tokens: the function is built from them at synth; give local paths"}},
		{"subnets without a VPC", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{VpcSubnets: &awsec2.SubnetSelection{}}},
			[]string{"Function.VpcSubnets: got a subnet selection without Vpc; set Vpc as well, or remove VpcSubnets"}},
		{"security groups without a VPC", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{SecurityGroups: make([]awsec2.ISecurityGroup, 2)}},
			[]string{"Function.SecurityGroups: got 2 security groups without Vpc; set Vpc as well, or remove SecurityGroups"}},
		{"six layers", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Layers: make([]awslambda.ILayerVersion, 6)}},
			[]string{"Function.Layers: got 6; use at most 5 layers (Lambda's limit)"}},
		{"negative reserved concurrency", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{ReservedConcurrentExecutions: -2}},
			[]string{"Function.ReservedConcurrentExecutions: got -2; use 0 (none reserved) or a positive number"}},
		{"architecture provided.al2023 does not run", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one,
			Function: function.Options{Architecture: awslambda.Architecture_Custom(jsii.String("riscv64"), nil)}},
			[]string{`Architecture: got "riscv64"; use awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64()`}},
		{"key in another region", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one,
			EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("FarKey"), jsii.String("arn:aws:kms:us-east-1:123456789012:key/far"))},
			[]string{"EncryptionKey: is in region us-east-1, the stack in eu-west-1; SQS encrypts a queue only with a key in the queue's region; " +
				"use a key there, or leave EncryptionKey nil for SSE-SQS"}},
		{"schedule group in another account", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one,
			ScheduleGroup: awsscheduler.ScheduleGroup_FromScheduleGroupArn(stack, jsii.String("FarGroup"),
				jsii.String("arn:aws:scheduler:eu-west-1:210987654321:schedule-group/far"))},
			[]string{"ScheduleGroup: is in account 210987654321, the stack in 123456789012; a schedule can only be created in a group of its own " +
				"account and region; use a group there, or leave ScheduleGroup nil"}},
		{"environment setting the removed PERIOD", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Environment: map[string]string{"PERIOD": "5m"}}},
			[]string{"Function.Environment: PERIOD is no longer supported: the dispatcher derives every key from the scheduled occurrence; remove the variable"}},
		{"environment setting PERIOD to the old default", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Environment: map[string]string{"PERIOD": "1m0s"}}},
			[]string{"Function.Environment: PERIOD is no longer supported"}},
		{"environment overriding a prop", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, Function: function.Options{Environment: map[string]string{"JOB_NAME": "other"}}},
			[]string{"Function.Environment: JOB_NAME is set by the construct from its props; set the prop instead of the variable"}},
		{"environment overriding the unset FIFO group", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one,
			Function: function.Options{Environment: map[string]string{"DEFAULT_MESSAGE_GROUP_ID": "g"}}},
			[]string{"Function.Environment: DEFAULT_MESSAGE_GROUP_ID is set by the construct"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props := tt.props
			id := fmt.Sprintf("Invalid%d", i)
			if tt.name == "default job name from an unusable id" {
				id = "Bad Id"
			}
			cdktest.ExpectProblem(t, build(id, &props), tt.want...)
		})
	}
}

// An input just under the limit is accepted by the size rule (the limit is not off by one
// in the other direction).
func TestInputSizeLimitBoundary(t *testing.T) {
	expectNoProblemAbout(t, "Small", dispatcher.ScheduledDispatcherProps{Queue: std, Items: []dispatcher.WorkItem{
		{ID: "a", Payload: map[string]any{"x": strings.Repeat("x", dispatcher.MaxInputBytes/2)}}}}, "schedule input")
}

// The largest SendMaxAttempts the function accepts passes validation.
func TestSendMaxAttemptsBoundary(t *testing.T) {
	expectNoProblemAbout(t, "TenAttempts", dispatcher.ScheduledDispatcherProps{Queue: std, Items: one, SendMaxAttempts: 10}, "SendMaxAttempts")
}

// expectNoProblemAbout fails the test if validating props reports a problem mentioning about.
// An invalid Period makes validation fail once every rule ran, before anything is built, so
// only the absence of that problem matters.
func expectNoProblemAbout(t *testing.T, id string, props dispatcher.ScheduledDispatcherProps, about string) {
	t.Helper()
	props.Period = time.Second
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("expected the Period problem")
		}
		for _, p := range verr.Problems {
			if strings.Contains(p, about) {
				t.Errorf("%s: rejected: %s", id, p)
			}
		}
	}()
	build(id, &props)()
}

func TestValidationCollectsEveryProblem(t *testing.T) {
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("expected a *validate.Error")
		}
		if len(verr.Problems) != 4 {
			t.Fatalf("want 4 problems, got %d:\n%s", len(verr.Problems), verr)
		}
		if verr.Construct != `ScheduledDispatcher "Fixture/Many"` {
			t.Errorf("construct = %q, want its path", verr.Construct)
		}
	}()
	build("Many", &dispatcher.ScheduledDispatcherProps{Queue: std, Cron: "bad", TimeZone: "Nowhere", Period: time.Second})()
}
