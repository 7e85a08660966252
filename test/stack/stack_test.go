// Package stack tests the reference stack as the app builds it (stacks.Build: the same
// constructs, props and cdk-nag packs `cdk synth` uses), synthesized once for the package.
package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
	"github.com/idempotent-sqs/pipeline/stacks"
)

var (
	// hardened is the stage with the pipelines' Hardening, synthesized in the same app.
	hardened         awscdk.Stack
	hardenedTemplate assertions.Template
	// provisioned is the stage whose table has provisioned capacity with auto scaling
	// (context tableCapacity=5-500@60), synthesized in the same app.
	provisioned         awscdk.Stack
	provisionedTemplate assertions.Template
)

var (
	stack    stacks.PipelineStack
	template assertions.Template
	// resources is the synthesized template's Resources section, for queries Match cannot
	// express (counting, following references).
	resources map[string]struct {
		Type       string         `json:"Type"`
		Properties map[string]any `json:"Properties"`
	}
)

func TestMain(m *testing.M) {
	app := cdktest.NewApp()
	stack = stacks.Build(app, stacks.Config{Account: "123456789012", Region: "eu-west-1"})
	hardened = stacks.Build(app, stacks.Config{Stage: "hardened", Hardened: true, Account: "123456789012", Region: "eu-west-1"})
	provisioned = stacks.Build(app, stacks.Config{Stage: "provisioned", Account: "123456789012", Region: "eu-west-1",
		TableCapacity: &table.ProvisionedCapacity{MinWriteUnits: 5, MaxWriteUnits: 500, TargetUtilizationPercent: 60}})
	template = assertions.Template_FromStack(stack, nil)
	hardenedTemplate = assertions.Template_FromStack(hardened, nil)
	provisionedTemplate = assertions.Template_FromStack(provisioned, nil)
	b, err := json.Marshal(template.ToJSON())
	if err == nil {
		var t struct {
			Resources json.RawMessage `json:"Resources"`
		}
		if err = json.Unmarshal(b, &t); err == nil {
			err = json.Unmarshal(t.Resources, &resources)
		}
	}
	if err != nil {
		panic(err)
	}
	os.Exit(jsiitest.Run(m))
}

// All five cdk-nag packs (AwsSolutions, Serverless, NIST 800-53 R5, PCI DSS 3.2.1, HIPAA
// Security), on the default, the hardened and the provisioned stage.
func TestNoUnsuppressedNagFindings(t *testing.T) {
	for _, s := range []awscdk.Stack{stack, hardened, provisioned} {
		for _, finding := range cdktest.NagFindings(s) {
			t.Errorf("cdk-nag: %s", finding)
		}
	}
}

func TestTopology(t *testing.T) {
	counts := map[string]int{}
	for _, r := range resources {
		counts[r.Type]++
	}
	for typ, want := range map[string]int{
		"AWS::DynamoDB::Table": 1, // shared by both consumers
		// two processing queues, their two DLQs, and per dispatcher a schedule DLQ and an
		// async on-failure queue
		"AWS::SQS::Queue":                 8,
		"AWS::Lambda::Function":           4,
		"AWS::Lambda::EventSourceMapping": 2,
		"AWS::Lambda::EventInvokeConfig":  2,
		"AWS::Scheduler::Schedule":        4, // per pipeline a dispatcher's and a heartbeat's
		"AWS::Scheduler::ScheduleGroup":   4, // one per schedule: Scheduler publishes its metrics per group
		"AWS::SNS::Topic":                 2, // paging and ticketing
		"AWS::CloudWatch::Dashboard":      1,
		"AWS::CloudWatch::CompositeAlarm": 1, // "pipeline unhealthy"
	} {
		if counts[typ] != want {
			t.Errorf("%s: %d in the template, want %d", typ, counts[typ], want)
		}
	}
	if counts["AWS::CloudWatch::Alarm"] < 20 {
		t.Errorf("only %d alarms; every queue, function, schedule and the table must be watched", counts["AWS::CloudWatch::Alarm"])
	}
}

// Every alarm must notify someone: an alarm without an action is a light nobody sees. Each
// notifies exactly one of the two topics (paging or ticketing, by severity), and each topic
// receives alarms.
func TestEveryAlarmNotifiesATopic(t *testing.T) {
	topics := map[string]int{}
	for id, r := range resources {
		if r.Type == "AWS::SNS::Topic" {
			topics[id] = 0
		}
	}
	for id, r := range resources {
		if r.Type != "AWS::CloudWatch::Alarm" {
			continue
		}
		actions, _ := r.Properties["AlarmActions"].([]any)
		if len(actions) != 1 {
			t.Errorf("alarm %s actions %v, want exactly one topic", id, actions)
			continue
		}
		topic := cfn.RefTarget(actions[0])
		if _, ok := topics[topic]; !ok {
			t.Errorf("alarm %s notifies %v, not one of the topics", id, actions[0])
			continue
		}
		topics[topic]++
		if d := literalText(r.Properties["AlarmDescription"]); len(d) < 80 {
			t.Errorf("alarm %s description %q is too thin for someone on call", id, d)
		}
	}
	if len(topics) != 2 {
		t.Errorf("%d topics, want 2 (paging and ticketing)", len(topics))
	}
	for topic, n := range topics {
		if n == 0 {
			t.Errorf("topic %s receives no alarm", topic)
		}
	}
}

func TestConsumersShareTheTableWithSeparateKeyPrefixes(t *testing.T) {
	table := only(t, "AWS::DynamoDB::Table")
	prefixes := map[string]bool{}
	for id, r := range resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		vars, _ := cfn.Dig(r.Properties, "Environment", "Variables").(map[string]any)
		name, ok := vars["IDEMPOTENCY_TABLE_NAME"]
		if !ok {
			continue // a dispatcher
		}
		if cfn.RefTarget(name) != table {
			t.Errorf("consumer %s uses table %v, want %s", id, name, table)
		}
		prefix, _ := vars["IDEMPOTENCY_KEY_PREFIX"].(string)
		if prefix == "" || prefixes[prefix] {
			t.Errorf("consumer %s key prefix %q must be set and unique", id, prefix)
		}
		prefixes[prefix] = true
	}
	if len(prefixes) != 2 {
		t.Errorf("found %d consumers, want 2", len(prefixes))
	}
}

// Each event source mapping feeds its own pipeline's consumer from its own queue, with
// partial batch responses, and the FIFO pipeline keeps FIFO end to end.
func TestEachPipelineIsWiredEndToEnd(t *testing.T) {
	for _, p := range []struct {
		name string
		fifo bool
		get  func() (queueID, dlqID, fnID string)
	}{
		{"Standard", false, func() (string, string, string) { return ids(stack.Standard()) }},
		{"Fifo", true, func() (string, string, string) { return ids(stack.Fifo()) }},
	} {
		t.Run(p.name, func(t *testing.T) {
			queueID, dlqID, fnID := p.get()
			q := resources[queueID].Properties
			if got := q["FifoQueue"] == true; got != p.fifo {
				t.Errorf("queue FifoQueue = %v, want %v", q["FifoQueue"], p.fifo)
			}
			if got := resources[dlqID].Properties["FifoQueue"] == true; got != p.fifo {
				t.Errorf("DLQ FifoQueue = %v, want %v", resources[dlqID].Properties["FifoQueue"], p.fifo)
			}
			if target := cfn.RefTarget(cfn.Dig(q, "RedrivePolicy", "deadLetterTargetArn")); target != dlqID {
				t.Errorf("redrive target %s, want the pipeline's DLQ %s", target, dlqID)
			}
			found := false
			for _, r := range resources {
				if r.Type == "AWS::Lambda::EventSourceMapping" && cfn.RefTarget(r.Properties["FunctionName"]) == fnID {
					found = true
					if src := cfn.RefTarget(r.Properties["EventSourceArn"]); src != queueID {
						t.Errorf("consumer reads %s, want %s", src, queueID)
					}
					if types, _ := r.Properties["FunctionResponseTypes"].([]any); len(types) != 1 || types[0] != "ReportBatchItemFailures" {
						t.Errorf("FunctionResponseTypes %v, want [ReportBatchItemFailures]", types)
					}
				}
			}
			if !found {
				t.Errorf("no event source mapping for %s", fnID)
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	for _, name := range []string{"StandardQueueUrl", "StandardDeadLetterQueueUrl", "FifoQueueUrl", "FifoDeadLetterQueueUrl", "IdempotencyTableName", "AlarmTopicArn", "DashboardName"} {
		template.HasOutput(jsii.String(name), assertions.Match_ObjectLike(&map[string]any{"Value": assertions.Match_AnyValue()}))
	}
	// pipelinectl checks message ages against these: each is its consumer's IDEMPOTENCY_RECORD_TTL.
	for _, p := range []string{"Standard", "Fifo"} {
		template.HasOutput(jsii.String(p+"RecordTTL"), assertions.Match_ObjectLike(&map[string]any{"Value": "600h0m0s"}))
		fns := template.FindResources(jsii.String("AWS::Lambda::Function"), assertions.Match_ObjectLike(&map[string]any{
			"Properties": map[string]any{"Environment": map[string]any{"Variables": map[string]any{
				"IDEMPOTENCY_KEY_PREFIX": p, "IDEMPOTENCY_RECORD_TTL": "600h0m0s",
			}}},
		}))
		if len(*fns) != 1 {
			t.Errorf("%s: %d consumer functions with IDEMPOTENCY_RECORD_TTL 600h0m0s, want 1", p, len(*fns))
		}
		// pipelinectl backfill invokes the dispatcher and reads its schedule by these.
		for out, typ := range map[string]string{"DispatcherFunctionName": "AWS::Lambda::Function", "ScheduleName": "AWS::Scheduler::Schedule",
			"ScheduleGroupName": "AWS::Scheduler::ScheduleGroup"} {
			v := (*template.ToJSON())["Outputs"].(map[string]any)[p+out]
			resources := (*template.ToJSON())["Resources"].(map[string]any)
			var id string
			switch value := v.(map[string]any)["Value"].(type) {
			case map[string]any: // a Ref
				id, _ = value["Ref"].(string)
			case string: // a name given at synth: the resource's Name
				for rid, r := range resources {
					if r.(map[string]any)["Type"] == typ && fmt.Sprint(r.(map[string]any)["Properties"].(map[string]any)["Name"]) == value {
						id = rid
					}
				}
			}
			if r, _ := resources[id].(map[string]any); r["Type"] != typ || !strings.HasPrefix(id, p+"Dispatcher") {
				t.Errorf("output %s%s = %v: want a Ref to the %s dispatcher's %s", p, out, v, p, typ)
			}
		}
	}
}

// Each pipeline's heartbeat sends to that pipeline's own queue every 5 minutes, and its alarm
// reads that pipeline's consumer; the outputs name its schedule.
func TestEachPipelineHasAHeartbeat(t *testing.T) {
	for _, p := range []pipeline.Pipeline{stack.Standard(), stack.Fifo()} {
		name := *p.Node().Id()
		hb := p.Heartbeat()
		if hb == nil || hb.Every() != stacks.DefaultHeartbeat {
			t.Fatalf("%s: heartbeat %v, want one every %v", name, hb, stacks.DefaultHeartbeat)
		}
		queueID, _, fnID := ids(p)
		sched := resources[cfn.RefTarget(stack.Resolve(hb.Schedule().ScheduleArn()))]
		input := literalText(cfn.Dig(sched.Properties, "Target", "Input"))
		if sched.Properties["ScheduleExpression"] != "rate(5 minutes)" || !strings.Contains(input, `"StringValue":"heartbeat-<aws.scheduler.scheduled-time>"`) {
			t.Errorf("%s: heartbeat schedule %v, input %s", name, sched.Properties["ScheduleExpression"], input)
		}
		if url := cfn.Dig(sched.Properties, "Target", "Input", "Fn::Join"); !strings.Contains(cdktest.JSON(url), `{"Ref":"`+queueID+`"}`) {
			t.Errorf("%s: the heartbeat does not send to the pipeline's queue %s: %s", name, queueID, cdktest.JSON(url))
		}
		found := 0
		for id, r := range resources {
			if r.Type == "AWS::CloudWatch::Alarm" && r.Properties["MetricName"] == "ProbeCompleted" &&
				cdktest.JSON(r.Properties["Dimensions"]) == `[{"Name":"Service","Value":{"Ref":"`+fnID+`"}}]` {
				found++
				if r.Properties["TreatMissingData"] != "breaching" || r.Properties["Period"] != float64(300) {
					t.Errorf("%s: heartbeat alarm %s: %v", name, id, r.Properties)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s: %d heartbeat alarms on its consumer %s, want 1", name, found, fnID)
		}
		for _, out := range []string{"HeartbeatScheduleName", "HeartbeatScheduleGroupName"} {
			template.HasOutput(jsii.String(name+out), assertions.Match_ObjectLike(&map[string]any{"Value": assertions.Match_AnyValue()}))
		}
	}
}

// heartbeat=off builds no heartbeat; a duration sets the interval, which the heartbeat
// construct checks, naming its prop and the stage.
func TestHeartbeatContext(t *testing.T) {
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"heartbeat": "off"}}))
	if err != nil || cfg.Heartbeat != stacks.HeartbeatOff {
		t.Fatalf("heartbeat=off: %+v, %v", cfg.Heartbeat, err)
	}
	app := cdktest.NewApp()
	off := stacks.NewPipelineStack(app, "Off", &stacks.PipelineStackProps{Config: cfg})
	if off.Standard().Heartbeat() != nil || off.Fifo().Heartbeat() != nil {
		t.Error("heartbeat=off built a heartbeat")
	}
	cfg, err = stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"heartbeat": "15m"}}))
	if err != nil || cfg.Heartbeat != 15*time.Minute {
		t.Fatalf("heartbeat=15m: %+v, %v", cfg.Heartbeat, err)
	}
	if s := stacks.NewPipelineStack(app, "Slow", &stacks.PipelineStackProps{Config: cfg}); s.Fifo().Heartbeat().Every() != 15*time.Minute {
		t.Errorf("heartbeat=15m: every %v", s.Fifo().Heartbeat().Every())
	}
	cdktest.ExpectProblemIn(t, `Heartbeat "IdempotentSqsPipeline-fast/Standard/Heartbeat"`, func() {
		stacks.Build(app, stacks.Config{Stage: "fast", Heartbeat: 30 * time.Second})
	}, "Every: got 30s; use whole minutes from 1m0s to 12h0m0s")
}

func TestConfigFromContextRejectsBadValues(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		"stage": "9lives", "consumerTimeout": "soon", "visibilityTimeout": "-1m", "account": "12345", "region": "Frankfurt", "maxMessageSize": "1MiB",
		"tableCapacity": "provisioned", "heartbeat": "often", "tableMaxWriteUnits": "lots", "consumerPollers": "many",
		"consumerBatchSize": "a hundred", "consumerBatchWindow": "soon", "consumerMemory": "0", "consumerMaxConcurrency": "-2",
	}})
	_, err := stacks.ConfigFromContext(app)
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, want := range []string{
		`context consumerTimeout: got "soon"; use a positive Go duration such as 30s or 5m`,
		`context visibilityTimeout: got "-1m"; use a positive Go duration such as 30s or 5m`,
		`context stage: got "9lives"; use a letter then up to 31 letters, digits or hyphens`,
		`context maxMessageSize: got "1MiB"; use a whole number of bytes from 1024 to 1048576`,
		`context tableCapacity: got "provisioned"; use on-demand (the default), or provisioned write capacity units MIN-MAX with an optional @TARGET utilization percent, e.g. 5-500 or 5-500@70`,
		`context account: got "12345"; use the 12-digit AWS account id, or leave it out for an environment-agnostic stack`,
		`context region: got "Frankfurt"; use a region code such as eu-west-1, or leave it out for an environment-agnostic stack`,
		`context heartbeat: got "often"; use off, or a Go duration of whole minutes from 1m to 12h such as 5m (the default)`,
		`context tableMaxWriteUnits: got "lots"; use a whole number of write request units a second, at least 1 (about 2 per new message a second at your peak), or leave it out for no cap`,
		`context consumerPollers: got "many"; use MIN-MAX event pollers, e.g. 2-20 (provisioned mode), or leave it out for the default mode`,
		`context consumerBatchSize: got "a hundred"; use a whole number, at least 1 (docs/capacity.md has a plan per load)`,
		`context consumerBatchWindow: got "soon"; use a Go duration of whole seconds up to 5m such as 1s, or leave it out for none`,
		`context consumerMemory: got "0"; use a whole number, at least 1 (docs/capacity.md has a plan per load)`,
		`context consumerMaxConcurrency: got "-2"; use a whole number, at least 1 (docs/capacity.md has a plan per load)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A context key one edit (two for a long key, or only case) away from one the app reads is a typo that
// would leave its setting at the default: synth fails naming the key it meant. Other keys
// (feature flags, a key of the user's own) pass.
func TestConfigFromContextRefusesAMistypedKey(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		"consumerTimout": "2m", "Stage": "prod", "heartbeats": "off",
		"consumerTimeout": "1m", "myTeam": "payments", "myStage": "x", "@aws-cdk/aws-lambda:recognizeLayerVersion": true,
	}})
	_, err := stacks.ConfigFromContext(app)
	if err == nil {
		t.Fatal("expected an error for the mistyped keys")
	}
	for _, want := range []string{
		"context Stage: not a key the app reads; did you mean stage? (docs/settings.md lists every key)",
		"context consumerTimout: not a key the app reads; did you mean consumerTimeout? (docs/settings.md lists every key)",
		"context heartbeats: not a key the app reads; did you mean heartbeat? (docs/settings.md lists every key)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// myStage is two edits from stage: too far for a 5-letter key.
	for _, fine := range []string{"myTeam", "@aws-cdk", "context consumerTimeout", "context myStage"} {
		if strings.Contains(err.Error(), fine) {
			t.Errorf("error names %s, which is not a typo:\n%v", fine, err)
		}
	}
}

func TestConfigFromContextDefaultsAndEmails(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		"alarmEmail": "a@example.com, b@example.com", "ticketEmail": "tickets@example.com,",
		"slackWorkspace": "T0123ABCD", "slackChannel": "C0123ABCD",
	}})
	cfg, err := stacks.ConfigFromContext(app)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Stage != "dev" || cfg.Schedule != "0 * * * ? *" || cfg.TimeZone != "UTC" || cfg.ConsumerTimeout.String() != "30s" || cfg.Heartbeat != stacks.DefaultHeartbeat {
		t.Errorf("defaults: %+v", cfg)
	}
	if strings.Join(cfg.AlarmEmails, ";") != "a@example.com;b@example.com" {
		t.Errorf("AlarmEmails = %q", cfg.AlarmEmails)
	}
	if strings.Join(cfg.TicketEmails, ";") != "tickets@example.com" {
		t.Errorf("TicketEmails = %q", cfg.TicketEmails)
	}
	if cfg.SlackWorkspaceID != "T0123ABCD" || cfg.SlackChannelID != "C0123ABCD" {
		t.Errorf("Slack = %q/%q", cfg.SlackWorkspaceID, cfg.SlackChannelID)
	}
}

// tableCapacity is on-demand unless it gives write units; the table construct judges the
// numbers and names its props (MIN above MAX here).
func TestTableCapacityFromContext(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  *table.ProvisionedCapacity
	}{
		{"", nil},
		{"on-demand", nil},
		{"5-500", &table.ProvisionedCapacity{MinWriteUnits: 5, MaxWriteUnits: 500}},
		{"10-2000@50", &table.ProvisionedCapacity{MinWriteUnits: 10, MaxWriteUnits: 2000, TargetUtilizationPercent: 50}},
	} {
		cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"tableCapacity": tt.value}}))
		if err != nil {
			t.Errorf("%q: %v", tt.value, err)
			continue
		}
		if (cfg.TableCapacity == nil) != (tt.want == nil) || (tt.want != nil && *cfg.TableCapacity != *tt.want) {
			t.Errorf("%q: TableCapacity = %+v, want %+v", tt.value, cfg.TableCapacity, tt.want)
		}
	}
	cdktest.ExpectProblemIn(t, `IdempotencyTable "IdempotentSqsPipeline-capacity/IdempotencyTable"`, func() {
		stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "capacity", TableCapacity: &table.ProvisionedCapacity{MinWriteUnits: 50, MaxWriteUnits: 5}})
	}, "ProvisionedCapacity.MaxWriteUnits: 5 is below ProvisionedCapacity.MinWriteUnits 50")
}

// consumerPollers puts both consumers in provisioned mode; the consumer construct judges the
// numbers and names its props.
func TestConsumerPollersFromContext(t *testing.T) {
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"consumerPollers": "4-20"}}))
	if err != nil || cfg.ConsumerPollers == nil || *cfg.ConsumerPollers != (consumer.ProvisionedPollers{Minimum: 4, Maximum: 20}) {
		t.Fatalf("consumerPollers=4-20: %+v, %v", cfg.ConsumerPollers, err)
	}
	cdktest.ExpectProblemIn(t, `IdempotentConsumer "IdempotentSqsPipeline-pollers/Standard/Consumer"`, func() {
		stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "pollers", ConsumerPollers: &consumer.ProvisionedPollers{Minimum: 1, Maximum: 20}})
	}, "ProvisionedPollers.Minimum: got 1; use 2 to 200")
}

// The consumer settings of docs/capacity.md's plan per load: batch size and window on the
// standard consumer only (a FIFO mapping takes at most 10 and no window), memory and maximum
// concurrency on both; the consumer construct judges the numbers and names its props.
func TestConsumerSettingsFromContext(t *testing.T) {
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
		"consumerBatchSize": "100", "consumerBatchWindow": "1s", "consumerMemory": "512", "consumerMaxConcurrency": "40",
	}}))
	if err != nil || cfg.ConsumerBatchSize != 100 || cfg.ConsumerBatchWindow != time.Second || cfg.ConsumerMemoryMB != 512 || cfg.ConsumerMaxConcurrency != 40 {
		t.Fatalf("consumer settings: %+v, %v", cfg, err)
	}
	cfg.Stage = "tuned"
	s := stacks.Build(cdktest.NewApp(), cfg)
	std, fifo := s.Standard().Consumer(), s.Fifo().Consumer()
	if std.BatchSize() != 100 || fifo.BatchSize() != 10 || std.MaxConcurrency() != 40 || fifo.MaxConcurrency() != 40 {
		t.Errorf("batch sizes %d and %d, max concurrency %d and %d; want 100 (standard) and 10 (FIFO), 40 on both",
			std.BatchSize(), fifo.BatchSize(), std.MaxConcurrency(), fifo.MaxConcurrency())
	}
	tmpl := assertions.Template_FromStack(s, nil)
	for _, c := range []consumer.IdempotentConsumer{std, fifo} {
		tmpl.HasResource(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Properties": assertions.Match_ObjectLike(&map[string]any{"MemorySize": 512, "Role": map[string]any{"Fn::GetAtt": []any{cdktest.LogicalID(s, c.Role()), "Arn"}}}),
		})
	}
	for _, tc := range []struct {
		context map[string]any
		want    string
	}{
		{map[string]any{"consumerBatchSize": "100"}, `context consumerBatchSize: got 100; above 10 records an SQS event source needs a batching window: add consumerBatchWindow=1s (or more)`},
		{map[string]any{"consumerMaxConcurrency": "40", "consumerPollers": "2-20"}, `context consumerMaxConcurrency and consumerPollers: set one; in provisioned mode the pollers' maximum x 10 bounds the concurrency`},
	} {
		if _, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &tc.context})); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("context %v: error %v, want %q", tc.context, err, tc.want)
		}
	}
	cdktest.ExpectProblemIn(t, `IdempotentConsumer "IdempotentSqsPipeline-wide/Standard/Consumer"`, func() {
		stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "wide", ConsumerMaxConcurrency: 5000})
	}, "MaxConcurrency: got 5000")
}

// A stack that reserves more concurrency than an account at Lambda's default quota accepts
// (900 of 1,000) is a synth warning naming each reservation: the hardened stage with
// consumerPollers=2-50 reserves 500 per consumer. The hardened stage as shipped does not.
func TestReservedConcurrencyWarning(t *testing.T) {
	warnings := func(s awscdk.Stack) []string {
		var out []string
		for _, m := range *assertions.Annotations_FromStack(s).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
			if msg := fmt.Sprint(m.Entry.Data); strings.Contains(msg, stacks.WarningReservedConcurrency) {
				out = append(out, msg)
			}
		}
		return out
	}
	if w := warnings(hardened); len(w) != 0 {
		t.Errorf("the hardened stage warns %q, want no reservation warning", w)
	}
	spiky := stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "spiky", Hardened: true, Account: "123456789012", Region: "eu-west-1",
		ConsumerPollers: &consumer.ProvisionedPollers{Minimum: 2, Maximum: 50}})
	w := warnings(spiky)
	if len(w) != 1 || !strings.Contains(w[0], "accepts at most 900 reserved") ||
		!strings.Contains(w[0], "IdempotentSqsPipeline-spiky/Standard/Consumer/Resource 500") || !strings.Contains(w[0], "IdempotentSqsPipeline-spiky/Fifo/Consumer/Resource 500") {
		t.Errorf("hardened with consumerPollers=2-50: warnings %q, want one naming both consumers' 500", w)
	}
}

// tableMaxWriteUnits caps the on-demand table's writes; with provisioned capacity the table
// construct refuses it, naming both props.
func TestTableMaxWriteUnitsFromContext(t *testing.T) {
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"tableMaxWriteUnits": "2000"}}))
	if err != nil || cfg.TableMaxWriteUnits != 2000 {
		t.Fatalf("tableMaxWriteUnits=2000: %+v, %v", cfg.TableMaxWriteUnits, err)
	}
	cdktest.ExpectProblemIn(t, `IdempotencyTable "IdempotentSqsPipeline-capped/IdempotencyTable"`, func() {
		stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "capped", TableMaxWriteUnits: 2000, TableCapacity: &table.ProvisionedCapacity{MinWriteUnits: 5, MaxWriteUnits: 50}})
	}, "MaxOnDemandThroughput: got {WriteUnits:2000 ReadUnits:0}; a cap applies to an on-demand table, and ProvisionedCapacity makes it provisioned")
}

// The provisioned stage's table: PROVISIONED at its minimum, writes and reads each scaled by
// a target tracking policy at the context's target; the default stage's table stays
// on-demand with no scaling resources.
func TestProvisionedStage(t *testing.T) {
	provisionedTemplate.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"ProvisionedThroughput": map[string]any{"WriteCapacityUnits": 5, "ReadCapacityUnits": 1},
	})
	provisionedTemplate.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(2))
	provisionedTemplate.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), map[string]any{
		"ScalableDimension": "dynamodb:table:WriteCapacityUnits", "MinCapacity": 5, "MaxCapacity": 500,
	})
	provisionedTemplate.HasResourceProperties(jsii.String("AWS::ApplicationAutoScaling::ScalingPolicy"), map[string]any{
		"TargetTrackingScalingPolicyConfiguration": assertions.Match_ObjectLike(&map[string]any{
			"TargetValue": 60, "PredefinedMetricSpecification": map[string]any{"PredefinedMetricType": "DynamoDBWriteCapacityUtilization"},
		}),
	})
	template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{"BillingMode": "PAY_PER_REQUEST"})
	template.ResourceCountIs(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), jsii.Number(0))
}

// The stack is environment-agnostic unless context pins it: the CLI's CDK_DEFAULT_ACCOUNT
// (from an STS call on any synth that finds credentials) and CDK_DEFAULT_REGION do not reach
// the template, so it is the same whoever synthesizes it.
func TestAccountAndRegionOnlyFromContext(t *testing.T) {
	t.Setenv("CDK_DEFAULT_ACCOUNT", "111122223333")
	t.Setenv("CDK_DEFAULT_REGION", "ap-south-1")
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Account != "" || cfg.Region != "" {
		t.Errorf("without context: Account %q, Region %q; want both empty (environment-agnostic)", cfg.Account, cfg.Region)
	}
	cfg, err = stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"account": "123456789012", "region": "eu-west-1"}}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Account != "123456789012" || cfg.Region != "eu-west-1" {
		t.Errorf("with context: Account %q, Region %q; want 123456789012, eu-west-1", cfg.Account, cfg.Region)
	}
}

// Half a Slack setting fails the stack with the monitoring's message, naming the stage.
func TestSlackNeedsWorkspaceAndChannel(t *testing.T) {
	cdktest.ExpectProblemIn(t, `PipelineMonitoring "IdempotentSqsPipeline-slack/Monitoring"`, func() {
		stacks.Build(cdktest.NewApp(), stacks.Config{Stage: "slack", SlackWorkspaceID: "T0123ABCD"})
	}, "SlackWorkspaceId/SlackChannelId", "set both to subscribe a Slack channel, or neither")
}

// A wrong prop fails the real app (what `make synth` runs) with the designed message and no
// Go stack trace: a 5-minute consumer on a queue whose visibility timeout is 2 minutes.
func TestAppRejectsConsumerTimeoutLongerThanVisibilityAllows(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the app binary")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "run", "./stacks/app")
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		`CDK_CONTEXT_JSON={"consumerTimeout":"5m","visibilityTimeout":"2m"}`,
		"CDK_OUTDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("app accepted a 5m consumer on a 2m visibility timeout:\n%s", out)
	}
	for _, want := range []string{`ProcessingQueue "IdempotentSqsPipeline-dev/Standard/Queue": invalid props:`, "VisibilityTimeout", "2m0s", "30m0s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "goroutine") {
		t.Errorf("a prop error must not print a Go stack trace:\n%s", out)
	}
}

// In an app with a stack per stage, the error of a wrong prop names the stage's stack (the
// construct's path), not only the construct's id, which is the same in every stage.
func TestInvalidPropsNameTheStage(t *testing.T) {
	app := cdktest.NewApp()
	stacks.Build(app, stacks.Config{Stage: "dev", Account: "123456789012", Region: "eu-west-1"})
	cdktest.ExpectProblemIn(t, `ProcessingQueue "IdempotentSqsPipeline-prod/Standard/Queue"`, func() {
		stacks.Build(app, stacks.Config{Stage: "prod", Account: "123456789012", Region: "eu-west-1",
			ConsumerTimeout: 5 * time.Minute, VisibilityTimeout: 2 * time.Minute})
	}, "VisibilityTimeout: got 2m0s")
}

// ids resolves a pipeline's queue, DLQ and consumer function to their logical ids through
// the stack, never by hard-coding a hashed id.
func ids(p pipeline.Pipeline) (queueID, dlqID, fnID string) {
	resolve := func(v *string) string { return cfn.RefTarget(stack.Resolve(v)) }
	return resolve(p.Queue().Queue().QueueArn()),
		resolve(p.Queue().DeadLetterQueue().QueueArn()),
		resolve(p.Consumer().Function().FunctionName())
}

// only returns the logical id of the single resource of type typ.
func only(t *testing.T, typ string) string {
	t.Helper()
	var found []string
	for id, r := range resources {
		if r.Type == typ {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(found), typ)
	}
	return found[0]
}

// literalText is the literal part of a string that may be an Fn::Join of literals and
// references (descriptions name the resource they watch).
func literalText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			var b strings.Builder
			parts, _ := j[1].([]any)
			for _, p := range parts {
				b.WriteString(literalText(p))
			}
			return b.String()
		}
	}
	return ""
}

// Every alarm of the reference stack, composite included, ends its description with a link
// to a section docs/runbooks.md has: an operator paged at night lands on what to do.
func TestEveryAlarmLinksARunbookSection(t *testing.T) {
	anchors, err := cdktest.MarkdownAnchors("../../docs/runbooks.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for id, r := range resources {
		if r.Type != "AWS::CloudWatch::Alarm" && r.Type != "AWS::CloudWatch::CompositeAlarm" {
			continue
		}
		n++
		desc := literalText(r.Properties["AlarmDescription"])
		m := cdktest.RunbookLink.FindStringSubmatch(desc)
		switch {
		case m == nil:
			t.Errorf("%s: no runbook link at the end of its description: %q", id, desc)
		case m[1] != monitoring.DefaultRunbookURL:
			t.Errorf("%s: runbook %q, want %q", id, m[1], monitoring.DefaultRunbookURL)
		case !anchors[m[2]]:
			t.Errorf("%s: docs/runbooks.md has no section #%s", id, m[2])
		}
	}
	if n < 30 {
		t.Errorf("checked %d alarms; the reference stack has 29 and a composite", n)
	}
}

// The hardened stage turns on what the compliance packs ask for that the default leaves off
// with a reason: every function of the pipelines in the isolated VPC with reserved
// concurrency and its log group under the customer managed key, the table in AWS Backup, and
// the endpoints the functions need (no NAT, no internet gateway).
func TestHardenedStage(t *testing.T) {
	h := hardenedTemplate
	fns := *h.FindResources(jsii.String("AWS::Lambda::Function"), assertions.Match_ObjectLike(&map[string]any{
		"Properties": map[string]any{"Runtime": "provided.al2023"},
	}))
	if len(fns) != 4 {
		t.Fatalf("%d Go functions, want 4 (two consumers, two dispatchers)", len(fns))
	}
	for id, fn := range fns {
		p := (*fn)["Properties"].(map[string]any)
		if _, ok := p["VpcConfig"]; !ok {
			t.Errorf("%s: no VpcConfig", id)
		}
		if _, ok := p["ReservedConcurrentExecutions"]; !ok {
			t.Errorf("%s: no ReservedConcurrentExecutions", id)
		}
	}
	logGroups := *h.FindResources(jsii.String("AWS::Logs::LogGroup"), nil)
	for id, lg := range logGroups {
		if _, ok := (*lg)["Properties"].(map[string]any)["KmsKeyId"]; !ok {
			t.Errorf("log group %s is not under the customer managed key", id)
		}
	}
	for typ, n := range map[string]int{
		"AWS::Backup::BackupPlan": 1, "AWS::EC2::NatGateway": 0, "AWS::EC2::InternetGateway": 0,
		"AWS::EC2::VPCEndpoint": 2, "AWS::EC2::FlowLog": 1,
	} {
		cdktest.Must(t, typ, func() { h.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n))) })
	}
	// One security group per pipeline for its two functions: outbound HTTPS, nothing inbound.
	sgs := *h.FindResources(jsii.String("AWS::EC2::SecurityGroup"), assertions.Match_ObjectLike(&map[string]any{
		"Properties": map[string]any{"GroupDescription": assertions.Match_StringLikeRegexp(jsii.String("^Functions of "))},
	}))
	if len(sgs) != 2 {
		t.Errorf("%d function security groups, want 2 (one per pipeline)", len(sgs))
	}
	for id, sg := range sgs {
		p := (*sg)["Properties"].(map[string]any)
		if egress := cdktest.JSON(p["SecurityGroupEgress"]); p["SecurityGroupIngress"] != nil || strings.Count(egress, "IpProtocol") != 1 ||
			!strings.Contains(egress, `"FromPort":443`) {
			t.Errorf("security group %s: ingress %v, egress %s; want no ingress and HTTPS egress only", id, p["SecurityGroupIngress"], egress)
		}
	}
	// The data (table, backups, every queue) under the stage's data key, not the log key.
	dataKey := cdktest.LogicalID(hardened, hardened.Node().FindChild(jsii.String("DataKey")))
	for typ, prop := range map[string]string{
		"AWS::SQS::Queue": "KmsMasterKeyId", "AWS::DynamoDB::Table": "SSESpecification", "AWS::Backup::BackupVault": "EncryptionKeyArn",
	} {
		for id, r := range *h.FindResources(jsii.String(typ), nil) {
			if got := cdktest.JSON((*r)["Properties"].(map[string]any)[prop]); !strings.Contains(got, `"`+dataKey+`"`) {
				t.Errorf("%s %s: %s = %s, want the data key %s", typ, id, prop, got, dataKey)
			}
		}
	}
	// The default stage has none of it.
	cdktest.Must(t, "default: no VPC", func() { template.ResourceCountIs(jsii.String("AWS::EC2::VPC"), jsii.Number(0)) })
	cdktest.Must(t, "default: no backup plan", func() { template.ResourceCountIs(jsii.String("AWS::Backup::BackupPlan"), jsii.Number(0)) })
	cdktest.Must(t, "default: one KMS key (the alarm topics')", func() { template.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(1)) })
}

func TestHardenedContext(t *testing.T) {
	cfg, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"hardened": "true"}}))
	if err != nil || !cfg.Hardened {
		t.Errorf("hardened=true: Hardened %v, err %v", cfg.Hardened, err)
	}
	_, err = stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"hardened": "yes"}}))
	if err == nil || !strings.Contains(err.Error(), `context hardened: got "yes"; use true or false`) {
		t.Errorf("hardened=yes: err %v", err)
	}
}

// docs/design.md's count of the reference stack's alarms is the template's: a doc that says
// another number fails here, so an alarm added or removed is counted where readers look.
func TestDesignCountsTheAlarms(t *testing.T) {
	counts := map[string]int{}
	for _, r := range resources {
		counts[r.Type]++
	}
	b, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	want := fmt.Sprintf("The reference stack has %d alarms and %s composite alarm", counts["AWS::CloudWatch::Alarm"],
		map[int]string{1: "one"}[counts["AWS::CloudWatch::CompositeAlarm"]])
	t.Logf("the template: %d alarms, %d composite", counts["AWS::CloudWatch::Alarm"], counts["AWS::CloudWatch::CompositeAlarm"])
	if !strings.Contains(text, want) {
		t.Errorf("docs/design.md does not say %q", want)
	}
}
