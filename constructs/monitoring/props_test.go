package monitoring

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// newScratch builds a PipelineMonitoring with props in the never-synthesized scratch stack,
// each under a new id. The imported topic keeps a valid call from creating a key and topic.
var scratchN int

// scratchTopic and scratchKey are an imported topic and key in the scratch stack, each under
// a new id.
func scratchTopic() awssns.ITopic {
	scratchN++
	return awssns.Topic_FromTopicArn(scratch.stack, jsii.String(fmt.Sprintf("T%d", scratchN)), jsii.String(customTopicArn+"-tickets"))
}

func scratchKey() awskms.IKey {
	scratchN++
	return awskms.Key_FromKeyArn(scratch.stack, jsii.String(fmt.Sprintf("K%d", scratchN)),
		jsii.String("arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"))
}

func newScratch(props PipelineMonitoringProps) PipelineMonitoring {
	scratchN++
	if props.Topic == nil {
		props.Topic = awssns.Topic_FromTopicArn(scratch.stack, jsii.String(fmt.Sprintf("T%d", scratchN)), jsii.String(customTopicArn))
	}
	return NewPipelineMonitoring(scratch.stack, fmt.Sprintf("M%d", scratchN), &props)
}

// One case per validation message: each names the prop, the value and the fix.
func TestPropsValidation(t *testing.T) {
	cases := []struct {
		name  string
		props PipelineMonitoringProps
		want  []string
	}{
		{"email with display name", PipelineMonitoringProps{AlarmEmails: []string{"On call <oncall@example.com>"}},
			[]string{"AlarmEmails[0]", `"On call <oncall@example.com>"`, "bare email address"}},
		{"email without domain", PipelineMonitoringProps{AlarmEmails: []string{"ok@example.com", "oncall"}},
			[]string{"AlarmEmails[1]", `"oncall"`, "bare email address"}},
		{"email without a dot in the domain", PipelineMonitoringProps{AlarmEmails: []string{"root@localhost"}},
			[]string{"AlarmEmails[0]", `"root@localhost"`, "bare email address"}},
		{"duplicate email", PipelineMonitoringProps{AlarmEmails: []string{"a@example.com", "a@example.com"}},
			[]string{"AlarmEmails[1]", `"a@example.com"`, "remove the duplicate"}},
		{"dashboard name charset", PipelineMonitoringProps{DashboardName: "orders pipeline"},
			[]string{"DashboardName", `"orders pipeline"`, "1-255 characters"}},
		{"namespace charset", PipelineMonitoringProps{MetricsNamespace: "Idempotent$SQS"},
			[]string{"MetricsNamespace", `"Idempotent$SQS"`, "METRICS_NAMESPACE"}},
		{"namespace AWS prefix", PipelineMonitoringProps{MetricsNamespace: "AWS/Lambda"},
			[]string{"MetricsNamespace", `"AWS/Lambda"`, `"AWS/" prefix is reserved`}},
		{"oldest message age too short", PipelineMonitoringProps{OldestMessageAge: 30 * time.Second},
			[]string{"OldestMessageAge", "got 30s", "from 1m to 336h"}},
		{"oldest message age past retention", PipelineMonitoringProps{OldestMessageAge: 15 * 24 * time.Hour},
			[]string{"OldestMessageAge", "got 360h0m0s", "from 1m to 336h"}},
		{"oldest message age fraction of a second", PipelineMonitoringProps{OldestMessageAge: 90*time.Second + time.Millisecond},
			[]string{"OldestMessageAge", "got 1m30.001s", "whole number of seconds"}},
		{"queue depth", PipelineMonitoringProps{QueueDepth: -5},
			[]string{"QueueDepth", "got -5", "positive number of visible messages"}},
		{"alarm period not whole minutes", PipelineMonitoringProps{AlarmPeriod: 90 * time.Second},
			[]string{"AlarmPeriod", "got 1m30s", "whole number of minutes"}},
		{"alarm period under a minute", PipelineMonitoringProps{AlarmPeriod: 30 * time.Second},
			[]string{"AlarmPeriod", "got 30s", "whole number of minutes"}},
		{"backlog periods", PipelineMonitoringProps{BacklogEvaluationPeriods: -1},
			[]string{"BacklogEvaluationPeriods", "got -1", "default 3"}},
		{"stall periods", PipelineMonitoringProps{StalledConsumerPeriods: -2},
			[]string{"StalledConsumerPeriods", "got -2", "default 4"}},
		{"evaluation window over a day", PipelineMonitoringProps{AlarmPeriod: 30 * time.Minute, StalledConsumerPeriods: 49},
			[]string{"StalledConsumerPeriods", "49 periods of AlarmPeriod 30m0s span 24h30m0s", "limit of 24h0m0s"}},
		{"ticket email with display name", PipelineMonitoringProps{TicketEmails: []string{"Tickets <t@example.com>"}},
			[]string{"TicketEmails[0]", `"Tickets <t@example.com>"`, "bare email address"}},
		{"duplicate ticket email", PipelineMonitoringProps{TicketTopic: scratchTopic(), TicketEmails: []string{"t@example.com", "t@example.com"}},
			[]string{"TicketEmails[1]", `"t@example.com"`, "already in TicketEmails"}},
		{"ticket email already in AlarmEmails", PipelineMonitoringProps{TicketTopic: scratchTopic(), AlarmEmails: []string{"a@example.com"}, TicketEmails: []string{"a@example.com"}},
			[]string{"TicketEmails[0]", `"a@example.com"`, "AlarmEmails receive every alarm"}},
		{"ticket emails on a given topic without a ticket topic", PipelineMonitoringProps{TicketEmails: []string{"t@example.com"}},
			[]string{"TicketEmails", "1 addresses", "set TicketTopic too"}},
		{"encryption key that encrypts nothing", PipelineMonitoringProps{EncryptionKey: scratchKey()},
			[]string{"EncryptionKey", "it would encrypt nothing"}},
		{"encryption key that encrypts nothing, with both topics given", PipelineMonitoringProps{TicketTopic: scratchTopic(), EncryptionKey: scratchKey()},
			[]string{"EncryptionKey", "it would encrypt nothing"}},
		{"runbook URL relative", PipelineMonitoringProps{RunbookURL: "docs/runbooks.md"},
			[]string{"RunbookURL", `"docs/runbooks.md"`, "absolute http or https URL"}},
		{"runbook URL scheme", PipelineMonitoringProps{RunbookURL: "ftp://example.com/runbooks"},
			[]string{"RunbookURL", `"ftp://example.com/runbooks"`, "absolute http or https URL"}},
		{"runbook URL with a fragment", PipelineMonitoringProps{RunbookURL: "https://example.com/runbooks#top"},
			[]string{"RunbookURL", "without a fragment"}},
		{"runbook URL with a space", PipelineMonitoringProps{RunbookURL: "https://example.com/run books"},
			[]string{"RunbookURL", `"https://example.com/run books"`}},
		{"runbook URL too long", PipelineMonitoringProps{RunbookURL: "https://example.com/" + strings.Repeat("a", 237)},
			[]string{"RunbookURL", "up to 256 characters"}},
		{"slack workspace without channel", PipelineMonitoringProps{SlackWorkspaceId: "T0123ABCD"},
			[]string{"SlackWorkspaceId/SlackChannelId", `"T0123ABCD"/""`, "set both"}},
		{"slack channel without workspace", PipelineMonitoringProps{SlackChannelId: "C0123ABCD"},
			[]string{"SlackWorkspaceId/SlackChannelId", `""/"C0123ABCD"`, "set both"}},
		{"slack workspace charset", PipelineMonitoringProps{SlackWorkspaceId: "t0123abcd", SlackChannelId: "C0123ABCD"},
			[]string{"SlackWorkspaceId", `"t0123abcd"`, "capital letters and digits"}},
		{"slack channel given by name", PipelineMonitoringProps{SlackWorkspaceId: "T0123ABCD", SlackChannelId: "#alerts"},
			[]string{"SlackChannelId", `"#alerts"`, "not its name"}},
		{"slack name without ids", PipelineMonitoringProps{SlackChannelConfigurationName: "alerts"},
			[]string{"SlackChannelConfigurationName", `"alerts"`, "set SlackWorkspaceId and SlackChannelId too"}},
		{"slack name charset", PipelineMonitoringProps{SlackWorkspaceId: "T0123ABCD", SlackChannelId: "C0123ABCD", SlackChannelConfigurationName: "pipeline alerts"},
			[]string{"SlackChannelConfigurationName", `"pipeline alerts"`, "1-128 characters"}},
		{"evaluation window over a week", PipelineMonitoringProps{AlarmPeriod: time.Hour, BacklogEvaluationPeriods: 169},
			[]string{"BacklogEvaluationPeriods", "span 169h0m0s", "limit of 168h0m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cdktest.ExpectProblem(t, func() { newScratch(tc.props) }, tc.want...)
		})
	}
}

// Validation collects every problem and fails once, naming the construct.
func TestPropsValidationReportsEveryProblemAtOnce(t *testing.T) {
	defer func() {
		verr, ok := validate.AsError(recover())
		if !ok {
			t.Fatal("want a *validate.Error")
		}
		// The path, not the id alone: it names the stack (the stage) the construct is in.
		if verr.Construct != `PipelineMonitoring "Scratch/Bad"` || len(verr.Problems) != 3 {
			t.Fatalf("want 3 problems for PipelineMonitoring \"Scratch/Bad\", got %s", verr)
		}
	}()
	NewPipelineMonitoring(scratch.stack, "Bad", &PipelineMonitoringProps{
		Topic:       scratchTopic(),
		AlarmEmails: []string{"x"}, QueueDepth: -1, AlarmPeriod: time.Second,
	})
}

// Limits are inclusive, zero means the default, and tokens are not judged at synth time.
func TestPropsAcceptEdgesDefaultsAndTokens(t *testing.T) {
	for _, props := range []PipelineMonitoringProps{
		{},
		{OldestMessageAge: time.Minute, QueueDepth: 1, AlarmPeriod: time.Minute, BacklogEvaluationPeriods: 1, StalledConsumerPeriods: 1},
		{OldestMessageAge: maxMessageAge, AlarmPeriod: 30 * time.Minute, StalledConsumerPeriods: 48},
		{AlarmPeriod: time.Hour, BacklogEvaluationPeriods: 168},
		{DashboardName: *awscdk.Aws_STACK_NAME(), AlarmEmails: []string{*awscdk.Aws_ACCOUNT_ID()}, MetricsNamespace: *awscdk.Aws_STACK_NAME()},
		{DashboardName: "Orders_pipeline-1", MetricsNamespace: "Team/Orders #1: prod", AlarmEmails: []string{"first.last+alarms@sub.example.com"}},
		{TicketTopic: scratchTopic(), TicketEmails: []string{"t@example.com"}, AlarmEmails: []string{"a@example.com"}, EncryptionKey: scratchKey()},
		{RunbookURL: "http://wiki.internal/runbooks?page=pipeline"},
		{RunbookURL: "https://example.com/" + strings.Repeat("a", 236)},
		{RunbookURL: *awscdk.Aws_STACK_NAME(), SlackWorkspaceId: *awscdk.Aws_ACCOUNT_ID(), SlackChannelId: *awscdk.Aws_REGION()},
		{SlackWorkspaceId: "T0123ABCD", SlackChannelId: "C0123ABCD", SlackChannelConfigurationName: "orders-alerts_1"},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("props %+v rejected: %v", props, r)
				}
			}()
			newScratch(props)
		}()
	}
}

func TestWithDefaults(t *testing.T) {
	s := withDefaults(nil)
	want := settings{namespace: "IdempotentSQS", runbookURL: DefaultRunbookURL, oldestMessageAge: 15 * time.Minute, queueDepth: 1000,
		period: 5 * time.Minute, backlogPeriods: 3, stallPeriods: 4}
	if fmt.Sprintf("%+v", s) != fmt.Sprintf("%+v", want) {
		t.Errorf("withDefaults(nil) = %+v, want %+v", s, want)
	}
}

// One case per Watch validation message, for each Watch method.
func TestWatchValidation(t *testing.T) {
	m := scratch.mon
	q, fn, tb, sc := scratch.queue, scratch.fn, scratch.table, scratch.schedule
	q2, fn2, tb2, sc2 := scratch.otherQueue, scratch.otherFn, scratch.otherTable, scratch.otherSchedule
	m.WatchQueue("Taken", q, q)
	m.WatchConsumer("Taken", fn, q)
	m.WatchDispatcher("Taken", fn, sc, q, q)
	m.WatchTable("Taken", tb)
	m.WatchHeartbeat("Taken", fn, sc, 5*time.Minute)

	cases := []struct {
		name string
		call func()
		want []string
	}{
		{"queue label charset", func() { m.WatchQueue("orders queue", q, q) }, []string{"WatchQueue label", `"orders queue"`, "1-64 characters"}},
		{"queue label empty", func() { m.WatchQueue("", q, q) }, []string{"WatchQueue label", `""`, "1-64 characters"}},
		{"queue label too long", func() { m.WatchQueue(fmt.Sprintf("%065d", 0), q, q) }, []string{"WatchQueue label", "1-64 characters"}},
		{"queue label taken", func() { m.WatchQueue("Taken", q2, q) }, []string{"WatchQueue label", `"Taken"`, "not yet given to WatchQueue"}},
		{"queue source nil", func() { m.WatchQueue("A1", nil, q) }, []string{"WatchQueue source", "got nil", "pass the resource"}},
		{"queue dead letter nil", func() { m.WatchQueue("A2", q, nil) }, []string{"WatchQueue deadLetter", "got nil"}},
		{"consumer label taken", func() { m.WatchConsumer("Taken", fn2, q) }, []string{"WatchConsumer label", `"Taken"`, "not yet given to WatchConsumer"}},
		{"consumer label charset", func() { m.WatchConsumer("a/b", fn, q) }, []string{"WatchConsumer label", `"a/b"`}},
		{"consumer fn nil", func() { m.WatchConsumer("B1", nil, q) }, []string{"WatchConsumer fn", "got nil"}},
		{"consumer source nil", func() { m.WatchConsumer("B2", fn, nil) }, []string{"WatchConsumer source", "got nil"}},
		{"dispatcher label taken", func() { m.WatchDispatcher("Taken", fn, sc2, q, q) }, []string{"WatchDispatcher label", "not yet given to WatchDispatcher"}},
		{"dispatcher fn nil", func() { m.WatchDispatcher("C1", nil, sc, q, q) }, []string{"WatchDispatcher fn", "got nil"}},
		{"dispatcher schedule nil", func() { m.WatchDispatcher("C2", fn, nil, q, q) }, []string{"WatchDispatcher schedule", "got nil"}},
		{"dispatcher schedule DLQ nil", func() { m.WatchDispatcher("C3", fn, sc, nil, q) }, []string{"WatchDispatcher scheduleDeadLetter", "got nil"}},
		{"dispatcher failure queue nil", func() { m.WatchDispatcher("C4", fn, sc, q, nil) }, []string{"WatchDispatcher failureQueue", "got nil"}},
		{"table label taken", func() { m.WatchTable("Taken", tb2) }, []string{"WatchTable label", "not yet given to WatchTable"}},
		{"table nil", func() { m.WatchTable("D1", nil) }, []string{"WatchTable table", "got nil"}},
		{"heartbeat label taken", func() { m.WatchHeartbeat("Taken", fn2, sc2, time.Minute) }, []string{"WatchHeartbeat label", "not yet given to WatchHeartbeat"}},
		{"heartbeat fn nil", func() { m.WatchHeartbeat("E1", nil, sc, time.Minute) }, []string{"WatchHeartbeat fn", "got nil"}},
		{"heartbeat schedule nil", func() { m.WatchHeartbeat("E2", fn, nil, time.Minute) }, []string{"WatchHeartbeat schedule", "got nil"}},
		{"heartbeat every in seconds", func() { m.WatchHeartbeat("E3", fn, sc, 90*time.Second) }, []string{"WatchHeartbeat every: got 1m30s; use the heartbeat's interval: whole minutes from 1m to 12h"}},
		{"heartbeat every too long", func() { m.WatchHeartbeat("E4", fn, sc, 13*time.Hour) }, []string{"WatchHeartbeat every: got 13h0m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cdktest.ExpectProblemIn(t, `PipelineMonitoring "Scratch/Monitoring"`, tc.call, tc.want...)
		})
	}
	// A rejected call registers nothing: the label stays free.
	m.WatchQueue("A1", q2, q2)
}

func TestValidEmail(t *testing.T) {
	for in, want := range map[string]bool{
		"oncall@example.com":           true,
		"first.last+x@sub.example.org": true,
		"oncall@localhost":             false,
		"oncall":                       false,
		"<oncall@example.com>":         false,
		"On call <oncall@example.com>": false,
		" oncall@example.com":          false,
		"":                             false,
	} {
		if got := validEmail(in); got != want {
			t.Errorf("validEmail(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute: "15m",
		time.Hour:        "1h",
		90 * time.Minute: "1h30m",
		20 * time.Hour:   "20h",
		90 * time.Second: "1m30s",
		336 * time.Hour:  "336h",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
