package local

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// These test the kit itself, without backends: a kit that miscounts would let every
// scenario pass.

func TestLedgerCheck(t *testing.T) {
	l := NewLedger()
	for _, line := range []string{
		`{"message":"effect applied","idempotencyKey":"a"}`,
		`{"message":"effect applied","idempotencyKey":"b"}`,
		`{"message":"effect applied","idempotencyKey":"b"}`,
		`{"message":"effect applied","idempotencyKey":"x"}`,
		`{"message":"record outcome","outcome":"invalid_input","deadLettered":true}`,
		`{"message":"record outcome","outcome":"processed"}`,
		`{"DeadLettered":0,"Processed":2,"_aws":{}}`, // EMF: JSON, not an outcome
		`panic: boom`,
	} {
		l.Line([]byte(line))
	}
	lost, twice, unexpected := l.Check([]string{"a", "b", "c"})
	if !slices.Equal(lost, []string{"c"}) || !slices.Equal(twice, []string{"b"}) || !slices.Equal(unexpected, []string{"x"}) {
		t.Errorf("Check = lost %v, twice %v, unexpected %v; want [c] [b] [x]", lost, twice, unexpected)
	}
	if got := l.Order(); !slices.Equal(got, []string{"a", "b", "b", "x"}) {
		t.Errorf("Order = %v", got)
	}
	oc := l.Outcomes()
	if oc["invalid_input"] != 1 || oc["processed"] != 1 || oc["dead_lettered"] != 1 || len(oc) != 3 {
		t.Errorf("Outcomes = %v", oc)
	}
	if n, last := l.NonJSON(); n != 1 || last[0] != "panic: boom" {
		t.Errorf("NonJSON = %d %v, want the one panic line", n, last)
	}
}

func TestScheduleInput(t *testing.T) {
	s := Schedule{LogicalID: "S", Input: `{"executionId":"<aws.scheduler.execution-id>","items":[{"id":"a"}],"job":"j","scheduledTime":"<aws.scheduler.scheduled-time>"}`}
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	in, err := ScheduleInput(s, at, "e1", nil)
	if err != nil || string(in) != `{"executionId":"e1","items":[{"id":"a"}],"job":"j","scheduledTime":"2026-11-23T10:00:00Z"}` {
		t.Errorf("ScheduleInput = %s, %v", in, err)
	}
	in, err = ScheduleInput(s, at, "e2", []map[string]any{{"id": "b"}})
	if err != nil || !strings.Contains(string(in), `"items":[{"id":"b"}]`) {
		t.Errorf("ScheduleInput with items = %s, %v", in, err)
	}
	if _, err := ScheduleInput(Schedule{LogicalID: "S", Input: `{"job":"j"}`}, at, "e", nil); err == nil || !strings.Contains(err.Error(), "wall clock") {
		t.Errorf("an input without the scheduled time: err = %v, want the wall-clock error", err)
	}
}

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
	if s := tmpl.SendSchedules[0]; s.Queue != "Q" || s.Rate != 5*time.Minute || s.Retries != 2 || s.Input != `{"MessageBody":"<aws.scheduler.scheduled-time>","QueueUrl":""}` {
		t.Errorf("SendSchedule = %+v", s)
	}
	for _, bad := range []struct{ from, to, want string }{
		{`{"Ref":"Q"},"\"}"`, `{"Ref":"Gone"},"\"}"`, `schedule H: sends to "Gone", not a queue of this stack`},
		{`rate(5 minutes)`, `cron(0 * * * ? *)`, `schedule H: expression "cron(0 * * * ? *)": the local kit fires SQS-target schedules by rate(N minutes|hours) only`},
	} {
		if _, err := LoadTemplate(write(t, strings.Replace(ok, bad.from, bad.to, 1))); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want %q", bad.to, err, bad.want)
		}
	}

	broken := strings.Replace(ok, `"FunctionName":{"Ref":"F"}`, `"FunctionName":{"Ref":"Gone"}`, 1)
	if _, err := LoadTemplate(write(t, broken)); err == nil || !strings.Contains(err.Error(), `function "Gone" is not in this stack`) {
		t.Errorf("a mapping to a missing function: err = %v", err)
	}
}
