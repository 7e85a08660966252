package standin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/standin/alarm"
)

// These test the kit itself, without backends: a kit that miscounts would let every
// scenario pass.

func TestLoadTemplate(t *testing.T) {
	write := func(t *testing.T, doc string) string {
		p := filepath.Join(t.TempDir(), "S.template.json")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := `{"Resources":{
	  "Q":{"Type":"AWS::SQS::Queue","Properties":{"VisibilityTimeout":18,"RedrivePolicy":{"deadLetterTargetArn":{"Fn::GetAtt":["D","Arn"]},"maxReceiveCount":5}}},
	  "D":{"Type":"AWS::SQS::Queue","Properties":{}},
	  "F":{"Type":"AWS::Lambda::Function","Properties":{"Timeout":3,"Environment":{"Variables":{"IDEMPOTENCY_TABLE_NAME":{"Ref":"T"}}}}},
	  "T":{"Type":"AWS::DynamoDB::Table","Properties":{}},
	  "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":{"Fn::GetAtt":["Q","Arn"]},"FunctionName":{"Ref":"F"},"BatchSize":10,"FunctionResponseTypes":["ReportBatchItemFailures"],"ScalingConfig":{"MaximumConcurrency":4}}},
	  "H":{"Type":"AWS::Scheduler::Schedule","Properties":{"ScheduleExpression":"rate(5 minutes)","Target":{
	    "Arn":{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":scheduler:::aws-sdk:sqs:sendMessage"]]},
	    "Input":{"Fn::Join":["",["{\"MessageBody\":\"<aws.scheduler.scheduled-time>\",\"QueueUrl\":\"",{"Ref":"Q"},"\"}"]]},
	    "RetryPolicy":{"MaximumRetryAttempts":2}}}}}}`
	tmpl, err := LoadTemplate(write(t, ok))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := tmpl.Pipelines()
	if err != nil || len(ps) != 1 {
		t.Fatalf("Pipelines = %v, %v", ps, err)
	}
	p := ps[0]
	if p.Queue != "Q" || p.DLQ != "D" || p.Consumer != "F" || p.Mapping.BatchSize != 10 || p.Mapping.MaxConcurrency != 4 || !p.Mapping.ReportFailures {
		t.Errorf("pipeline = %+v", p)
	}
	if n := tmpl.Queues["Q"].MaxReceiveCount(); n != 5 {
		t.Errorf("MaxReceiveCount = %d", n)
	}
	if b, err := tmpl.Functions["F"].Binary(); b != "consumer" || err != nil {
		t.Errorf("Binary = %q, %v", b, err)
	}

	if len(tmpl.SendSchedules) != 1 || len(tmpl.Schedules) != 0 {
		t.Fatalf("SendSchedules %+v, Schedules %+v: want the heartbeat as the one SQS-target schedule", tmpl.SendSchedules, tmpl.Schedules)
	}
	if s := tmpl.SendSchedules[0]; s.Queue != "Q" || s.rate != 5*time.Minute || s.retries != 2 || s.Input != `{"MessageBody":"<aws.scheduler.scheduled-time>","QueueUrl":""}` {
		t.Errorf("SendSchedule = %+v", s)
	}
	for _, bad := range []struct{ from, to, want string }{
		{`"D":{"Type":"AWS::SQS::Queue","Properties":{}},`, `"D":{"Type":"AWS::SQS::Queue","Properties":{}},"Sub":{"Type":"AWS::SNS::Subscription","Properties":{"Protocol":"sqs","TopicArn":"arn:aws:sns:eu-west-1:1:t","Endpoint":{"Fn::GetAtt":["Q","Arn"]},"FilterPolicy":{"kind":[{"prefix":5}]}}},`,
			`subscription Sub: FilterPolicy {"kind":[{"prefix":5}]}: `},
		{`{"Ref":"Q"},"\"}"`, `{"Ref":"Gone"},"\"}"`, `schedule H: sends to "Gone", not a queue of this stack`},
		{`rate(5 minutes)`, `cron(0 * * * ? *)`, `schedule H: expression "cron(0 * * * ? *)": the local kit fires SQS-target schedules by rate(N minutes|hours) only`},
		{`"BatchSize":10,`, `"BatchSize":10,"Queues":["q"],`,
			`mapping M: property Queues is not applied by the local kit (package local): the consumer would see other records than in AWS`},
		{`"BatchSize":10,`, `"BatchSize":10,"FilterCriteria":{"Filters":[{"Pattern":"{}"}]},`,
			`mapping M: FilterCriteria, which Lambda would refuse: filter 0: pattern is an empty object`},
		{`"BatchSize":10,`, `"BatchSize":10,"FilterCriteria":{"Filters":[{"Pattern":{"Ref":"P"}}]},`,
			`mapping M: FilterCriteria.Filters[0] {"Pattern":{"Ref":"P"}}: want a Pattern string (the local kit does not evaluate intrinsics in a filter)`},
	} {
		if _, err := LoadTemplate(write(t, strings.Replace(ok, bad.from, bad.to, 1))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.to, err, bad.want)
		}
	}

	// What may matter in AWS and is not applied is listed, never dropped silently.
	listed, err := LoadTemplate(write(t, strings.Replace(strings.Replace(strings.Replace(ok, `"BatchSize":10,`, `"BatchSize":10,"Enabled":false,"ProvisionedPollerConfig":{"MinimumPollers":2,"MaximumPollers":5},`, 1),
		`"Properties":{"Timeout":3,`, `"Properties":{"Timeout":3,"ReservedConcurrentExecutions":5,"Layers":["arn:l"],`, 1),
		`{"Resources":{`, `{"Resources":{"Key":{"Type":"AWS::KMS::Key"},"Role":{"Type":"AWS::IAM::Role"},"Meta":{"Type":"AWS::CDK::Metadata"},`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"function F Layers: a layer's files are not under /opt locally, and an extension in one does not run; the function runs without them", "function F ReservedConcurrentExecutions",
		"mapping M ProvisionedPollerConfig (provisioned mode: the kit polls as the default mode does)", "mapping M is disabled (Enabled: false): its queue is not polled",
		"not created locally: AWS::IAM::Role x1, AWS::KMS::Key x1"}
	if !slices.Equal(listed.NotApplied, want) || !listed.Mappings[0].Disabled {
		t.Errorf("NotApplied = %q, Disabled %v; want %q", listed.NotApplied, listed.Mappings[0].Disabled, want)
	}
	if len(tmpl.NotApplied) != 0 {
		t.Errorf("NotApplied of the plain template = %q, want none", tmpl.NotApplied)
	}

	broken := strings.Replace(ok, `"FunctionName":{"Ref":"F"}`, `"FunctionName":{"Ref":"Gone"}`, 1)
	if _, err := LoadTemplate(write(t, broken)); err == nil || !strings.Contains(err.Error(), `function "Gone" is not in this stack`) {
		t.Errorf("a mapping to a missing function: err = %v", err)
	}
}

func TestStandInQueue(t *testing.T) {
	// A mapping of a queue the stack imports by name: its ARN is an expression of the
	// account and region; the consumer's DLQ URL is computed from the DLQ's ARN.
	arn := func(name string) string {
		return `{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":sqs:",{"Ref":"AWS::Region"},":",{"Ref":"AWS::AccountId"},":` + name + `"]]}`
	}
	doc := `{"Resources":{
	  "F":{"Type":"AWS::Lambda::Function","Properties":{"Environment":{"Variables":{"IDEMPOTENCY_TABLE_NAME":"t",
	    "DEAD_LETTER_QUEUE_URL":{"Fn::Join":["",["https://sqs.",{"Fn::Select":[3,{"Fn::Split":[":",` + arn("in-dlq") + `]}]},".",{"Ref":"AWS::URLSuffix"},"/",{"Fn::Select":[4,{"Fn::Split":[":",` + arn("in-dlq") + `]}]},"/in-dlq"]]}}}}},
	  "M":{"Type":"AWS::Lambda::EventSourceMapping","Properties":{"EventSourceArn":` + arn("in") + `,"FunctionName":{"Ref":"F"}}}}}`
	p := filepath.Join(t.TempDir(), "S.template.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *Template {
		tmpl, err := LoadTemplate(p)
		if err != nil {
			t.Fatal(err)
		}
		return tmpl
	}
	// Without the construct's description of the queue, the kit says what to do.
	if _, err := load().Pipelines(); err == nil || !strings.Contains(err.Error(),
		"mapping M: its source arn:aws:sqs:local:000000000000:in is a queue the stack imports, and the cloud assembly does not describe it: synthesize again") {
		t.Errorf("Pipelines without StandInQueue: err = %v", err)
	}

	var q cfn.ExistingQueue
	if err := json.Unmarshal([]byte(`{"queueArn":`+arn("in")+`,"deadLetterQueueArn":`+arn("in-dlq")+`,"visibilityTimeout":30,"retentionPeriod":60}`), &q); err != nil {
		t.Fatal(err)
	}
	tmpl := load()
	notes, err := tmpl.StandInQueue("M", q)
	if err != nil || len(notes) != 2 || !strings.Contains(notes[0], "the stand-in uses 5") {
		t.Fatalf("StandInQueue = %q, %v", notes, err)
	}
	ps, err := tmpl.Pipelines()
	if err != nil || len(ps) != 1 || ps[0].Queue != "in" || ps[0].DLQ != "in-dlq" {
		t.Fatalf("Pipelines = %+v, %v; want queue in, DLQ in-dlq", ps, err)
	}
	if v := tmpl.Queues["in"].VisibilityTimeout(); v != 30*time.Second {
		t.Errorf("stand-in VisibilityTimeout = %v, want 30s", v)
	}
	// What the deployed environment resolves to: the local DLQ's URL.
	d := &Deployment{Template: tmpl, QueueURL: map[string]string{"in-dlq": "http://127.0.0.1:1/000000000000/in-dlq-S"},
		QueueARN: map[string]string{"in-dlq": "arn:aws:sqs:us-east-1:000000000000:in-dlq-S"},
		byName:   map[string]string{"in-dlq": "in-dlq"}, region: "us-east-1", account: "000000000000"}
	env, err := d.Env("F")
	if err != nil || env["DEAD_LETTER_QUEUE_URL"] != "http://127.0.0.1:1/000000000000/in-dlq-S" {
		t.Errorf("DEAD_LETTER_QUEUE_URL = %q, %v; want the stand-in's URL", env["DEAD_LETTER_QUEUE_URL"], err)
	}

	for _, bad := range []struct {
		q    cfn.ExistingQueue
		want string
	}{
		{cfn.ExistingQueue{QueueArn: map[string]any{"Ref": "QueueArnParam"}, DeadLetterQueueArn: "arn:aws:sqs:r:a:d"},
			`mapping M: the imported queue's ARN map[Ref:QueueArnParam] is not a value the local kit can resolve (another stack's export, or a parameter without a value: give it with Options.Parameters or pipelinectl local up --parameter)`},
		{cfn.ExistingQueue{QueueArn: "arn:aws:sqs:r:a:in"},
			"mapping M: the imported queue in has no dead-letter queue the consumer knows of: give the consumer a DeadLetterSource"},
		{cfn.ExistingQueue{QueueArn: "arn:aws:sqs:r:a:in", DeadLetterQueueArn: map[string]any{"Fn::ImportValue": "dlq"}},
			"mapping M: the imported dead-letter queue's ARN map[Fn::ImportValue:dlq] is not a value the local kit can resolve"},
	} {
		if _, err := load().StandInQueue("M", bad.q); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("StandInQueue(%+v): err = %v, want %q", bad.q, err, bad.want)
		}
	}
	// A queue imported by an ARN the app takes as a parameter: the parameter's value names it.
	withParam := load()
	withParam.Parameters["QueueArnParam"] = Parameter{Name: "QueueArnParam", Type: "String", Default: "arn:aws:sqs:eu-west-1:111122223333:from-param"}
	if err := withParam.UseParameters(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := withParam.StandInQueue("M", cfn.ExistingQueue{QueueArn: map[string]any{"Ref": "QueueArnParam"}, DeadLetterQueueArn: "arn:aws:sqs:r:a:d"}); err != nil || withParam.Mappings[0].Queue != "from-param" {
		t.Errorf("StandInQueue of a queue imported through a parameter: queue %q, %v; want from-param", withParam.Mappings[0].Queue, err)
	}
	if _, err := load().StandInQueue("Nope", q); err == nil || !strings.Contains(err.Error(), "mapping Nope: no event source mapping of an imported queue") {
		t.Errorf("StandInQueue of an unknown mapping: err = %v", err)
	}
}

// The template's alarms, as LoadTemplate reads them, evaluated together: composite alarms
// whose rules name their children by reference and by name.

func TestLoadTemplateAlarms(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	doc := `{"Resources":{
	  "Q":{"Type":"AWS::SQS::Queue","Properties":{}},
	  "DLQAlarm":{"Type":"AWS::CloudWatch::Alarm","Properties":{"ComparisonOperator":"GreaterThanOrEqualToThreshold","EvaluationPeriods":1,"DatapointsToAlarm":1,
	    "Dimensions":[{"Name":"QueueName","Value":{"Fn::GetAtt":["Q","QueueName"]}}],"MetricName":"ApproximateNumberOfMessagesVisible","Namespace":"AWS/SQS",
	    "Period":60,"Statistic":"Maximum","Threshold":1,"TreatMissingData":"notBreaching","AlarmName":"dlq-alarm"}},
	  "ErrAlarm":{"Type":"AWS::CloudWatch::Alarm","Properties":{"ComparisonOperator":"GreaterThanOrEqualToThreshold","EvaluationPeriods":1,
	    "Dimensions":[{"Name":"FunctionName","Value":{"Ref":"F"}}],"MetricName":"Errors","Namespace":"AWS/Lambda","Period":60,"Statistic":"Sum","Threshold":1,"TreatMissingData":"notBreaching"}},
	  "Unhealthy":{"Type":"AWS::CloudWatch::CompositeAlarm","Properties":{"AlarmRule":{"Fn::Join":["",["ALARM(\"",{"Fn::GetAtt":["ErrAlarm","Arn"]},"\") OR ALARM(\"dlq-alarm\")"]]}}},
	  "Both":{"Type":"AWS::CloudWatch::CompositeAlarm","Properties":{"AlarmRule":{"Fn::Join":["",["ALARM(\"",{"Fn::GetAtt":["ErrAlarm","Arn"]},"\") AND NOT OK(",{"Ref":"Unhealthy"},")"]]}}}}}`
	p := filepath.Join(t.TempDir(), "S.template.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl, err := LoadTemplate(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.Alarms) != 2 || len(tmpl.Composites) != 2 {
		t.Fatalf("%d alarms, %d composites; want 2, 2", len(tmpl.Alarms), len(tmpl.Composites))
	}
	dlq := tmpl.Alarms[slices.IndexFunc(tmpl.Alarms, func(a alarm.Alarm) bool { return a.LogicalID == "DLQAlarm" })]
	if !dlq.Reads("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q") || dlq.Period != time.Minute {
		t.Errorf("DLQ alarm = %+v", dlq)
	}
	s := alarm.NewSeries()
	// Minute 1: an error; minute 3: a DLQ message.
	for minute, v := range []float64{0, 1, 0, 0} {
		s.Add(alarm.NewMetricID("AWS/Lambda", "Errors", "FunctionName", "F"), t0.Add(time.Duration(minute)*time.Minute+time.Second), v)
	}
	for minute, v := range []float64{0, 0, 0, 1} {
		s.Add(alarm.NewMetricID("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Q"), t0.Add(time.Duration(minute)*time.Minute+time.Second), v)
	}
	evs, err := alarm.EvaluateAll(tmpl.Alarms, tmpl.Composites, s, alarm.Clock{Start: t0, Scale: 1}, t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	at := func(id string, minute int) string {
		return evs[id].StateAt(t0.Add(time.Duration(minute) * time.Minute))
	}
	for _, c := range []struct {
		id     string
		minute int
		want   string
	}{
		{"Unhealthy", 1, alarm.StateOK}, {"Unhealthy", 2, alarm.StateAlarm}, {"Unhealthy", 3, alarm.StateOK}, {"Unhealthy", 4, alarm.StateAlarm},
		{"Both", 2, alarm.StateAlarm}, {"Both", 4, alarm.StateOK},
	} {
		if got := at(c.id, c.minute); got != c.want {
			t.Errorf("%s after minute %d: %s, want %s", c.id, c.minute, got, c.want)
		}
	}

	bad := strings.Replace(doc, `"GreaterThanOrEqualToThreshold","EvaluationPeriods":1,"DatapointsToAlarm":1`, `"LessThanLowerOrGreaterThanUpperThreshold","EvaluationPeriods":1,"DatapointsToAlarm":1`, 1)
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTemplate(p); err == nil || !strings.Contains(err.Error(), `alarm DLQAlarm: comparison "LessThanLowerOrGreaterThanUpperThreshold" is not evaluated`) {
		t.Errorf("an anomaly detection alarm: err = %v", err)
	}
}
