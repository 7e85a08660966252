package pipeline_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/heartbeat"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
)

var (
	app   awscdk.App
	stack awscdk.Stack
)

func TestMain(m *testing.M) {
	app = cdktest.NewApp()
	stack = cdktest.NewStack(app, "PipelineTest")
	buildNagApp()
	os.Exit(jsiitest.Run(m))
}

// The pipeline checks its own combinations before creating anything, so these cases need
// no synth.
func TestValidationMessages(t *testing.T) {
	shared := table.NewIdempotencyTable(stack, "Shared", nil)
	mon := monitoring.NewPipelineMonitoring(stack, "SharedMonitoring", nil)
	existing := queue.ImportProcessingQueue(stack, "Existing", &queue.ExistingProcessingQueueProps{
		QueueName: "orders", DeadLetterQueueName: "orders-dlq", VisibilityTimeout: 3 * time.Minute, RetentionPeriod: 96 * time.Hour,
	})
	key, other := awskms.NewKey(stack, jsii.String("Key"), nil), awskms.NewKey(stack, jsii.String("OtherKey"), nil)
	for _, tc := range []struct {
		name  string
		props *pipeline.PipelineProps
		want  []string
	}{
		{"table and table props", &pipeline.PipelineProps{Table: shared, TableProps: &table.IdempotencyTableProps{}},
			[]string{"Table:", "give an existing table or props for a new one, not both"}},
		{"monitoring and monitoring props", &pipeline.PipelineProps{Monitoring: mon, MonitoringProps: &monitoring.PipelineMonitoringProps{}},
			[]string{"Monitoring:", "not both"}},
		{"queue fifo disagrees", &pipeline.PipelineProps{Queue: &queue.ProcessingQueueProps{Fifo: true}},
			[]string{"Queue.Fifo: got true", "set the pipeline's Fifo prop instead"}},
		{"queue consumer timeout disagrees", &pipeline.PipelineProps{
			Queue:    &queue.ProcessingQueueProps{ConsumerTimeout: time.Minute},
			Consumer: &consumer.IdempotentConsumerProps{Function: function.Options{Timeout: 2 * time.Minute}}},
			[]string{"Queue.ConsumerTimeout: got 1m0s", "derives it from Consumer.Function.Timeout (2m0s)"}},
		{"queue consumer timeout disagrees with the deprecated Timeout", &pipeline.PipelineProps{
			Queue:    &queue.ProcessingQueueProps{ConsumerTimeout: time.Minute},
			Consumer: &consumer.IdempotentConsumerProps{Timeout: 2 * time.Minute}},
			[]string{"Queue.ConsumerTimeout: got 1m0s; leave it unset: the pipeline derives it from Consumer.Timeout (2m0s)"}},
		{"consumer wired by hand", &pipeline.PipelineProps{Consumer: &consumer.IdempotentConsumerProps{Table: shared}},
			[]string{"Consumer.Queue:", "the pipeline wires its own queue and table"}},
		{"table key differs", &pipeline.PipelineProps{EncryptionKey: key, TableProps: &table.IdempotencyTableProps{EncryptionKey: other}},
			[]string{"TableProps.EncryptionKey: a different key than EncryptionKey", "leave it nil to use EncryptionKey"}},
		{"queue key differs", &pipeline.PipelineProps{EncryptionKey: key, Queue: &queue.ProcessingQueueProps{EncryptionKey: other}},
			[]string{"Queue.EncryptionKey: a different key than EncryptionKey"}},
		{"monitoring key differs", &pipeline.PipelineProps{EncryptionKey: key, MonitoringProps: &monitoring.PipelineMonitoringProps{EncryptionKey: other}},
			[]string{"MonitoringProps.EncryptionKey: a different key than EncryptionKey"}},
		{"dispatcher key differs", &pipeline.PipelineProps{EncryptionKey: key, Dispatcher: &dispatcher.ScheduledDispatcherProps{EncryptionKey: other}},
			[]string{"Dispatcher.EncryptionKey: a different key than EncryptionKey"}},
		{"existing queue and queue props", &pipeline.PipelineProps{ExistingQueue: existing, Queue: &queue.ProcessingQueueProps{}},
			[]string{"ExistingQueue:", "give an existing queue or props for a new one, not both"}},
		{"fifo pipeline on a standard queue", &pipeline.PipelineProps{ExistingQueue: existing, Fifo: true},
			[]string{"Fifo: got true", "ExistingQueue is a standard queue"}},
		{"hardening without a VPC", &pipeline.PipelineProps{Hardening: &pipeline.Hardening{}},
			[]string{"Hardening.Vpc: got nil; give the VPC the functions run in (pipeline.NewIsolatedVpc makes one with the endpoints they need)"}},
		{"hardening backup retention in hours", &pipeline.PipelineProps{Hardening: &pipeline.Hardening{BackupRetention: 36 * time.Hour}},
			[]string{"Hardening.BackupRetention: got 36h0m0s; use whole days from 24h (1 day) to 876000h (36,500 days, AWS Backup's limit), or leave it 0 for the default 35 days"}},
		{"hardening backup retention beyond AWS Backup's limit", &pipeline.PipelineProps{Hardening: &pipeline.Hardening{BackupRetention: 36501 * 24 * time.Hour}},
			[]string{"Hardening.BackupRetention: got 876024h0m0s; use whole days from 24h (1 day)"}},
		{"hardening backup retention for an existing table", &pipeline.PipelineProps{Table: shared, Hardening: &pipeline.Hardening{BackupRetention: 7 * 24 * time.Hour}},
			[]string{"Hardening.BackupRetention: got 168h0m0s; Table is an existing table, whose backups are its owner's: leave BackupRetention 0, " +
				"or set BackupRetention in the IdempotencyTableProps of the table where it is created"}},
		{"dispatcher wired by hand", &pipeline.PipelineProps{Dispatcher: &dispatcher.ScheduledDispatcherProps{Queue: queue.NewProcessingQueue(stack, "Other", nil)}},
			[]string{"Dispatcher.Queue:", "the pipeline wires its own queue"}},
		{"heartbeat wired by hand", &pipeline.PipelineProps{Heartbeat: &heartbeat.HeartbeatProps{Queue: queue.NewProcessingQueue(stack, "Another", nil)}},
			[]string{"Heartbeat.Queue: Heartbeat.Queue is set; leave it nil, the pipeline sends the heartbeat to its own queue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdktest.ExpectProblemIn(t, `Pipeline "PipelineTest/P`+tc.name+`"`,
				func() { pipeline.NewPipeline(stack, "P"+tc.name, tc.props) }, tc.want...)
		})
	}
}

// A part's invalid props are reported with the part's path, so the message tells which of
// several pipelines (and which stack) is wrong.
func TestPartErrorsNameThePipeline(t *testing.T) {
	cdktest.ExpectProblemIn(t, `ProcessingQueue "PipelineTest/Invoices/Queue"`, func() {
		pipeline.NewPipeline(stack, "Invoices", &pipeline.PipelineProps{
			Queue: &queue.ProcessingQueueProps{MaxReceiveCount: -1},
		})
	}, "MaxReceiveCount: got -1")
}

// Queue props on a FIFO pipeline leave Queue.Fifo false, as a user who never touched it
// does: the pipeline's Fifo decides, and the queue is FIFO.
func TestFifoPipelineTakesQueueProps(t *testing.T) {
	p := pipeline.NewPipeline(stack, "FifoWithQueueProps", &pipeline.PipelineProps{
		Fifo:  true,
		Queue: &queue.ProcessingQueueProps{MaxReceiveCount: 3},
	})
	if !p.Queue().Fifo() || p.Queue().MaxReceiveCount() != 3 {
		t.Errorf("queue: fifo %v, max receive count %d; want true, 3", p.Queue().Fifo(), p.Queue().MaxReceiveCount())
	}
}

// tableAlarms counts the alarms of stack whose metric dimensions reference the table.
func tableAlarms(t *testing.T, stack awscdk.Stack, tbl table.IdempotencyTable) int {
	t.Helper()
	id := cdktest.LogicalID(stack, tbl.Table())
	alarms := assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	n := 0
	for _, a := range *alarms {
		if strings.Contains(cdktest.JSON(a), `{"Ref":"`+id+`"}`) {
			n++
		}
	}
	return n
}

// A table shared by pipelines is watched exactly once, whoever created it: here nobody
// watches it by hand, and it must still have the alarms one WatchTable gives.
func TestSharedTableIsWatchedOnce(t *testing.T) {
	app := cdktest.NewApp()
	alone := cdktest.NewStack(app, "WatchedAlone")
	own := table.NewIdempotencyTable(alone, "Idempotency", nil)
	monitoring.NewPipelineMonitoring(alone, "Monitoring", nil).WatchTable("Idempotency", own.Table())

	shared := cdktest.NewStack(app, "SharedTable")
	tbl := table.NewIdempotencyTable(shared, "Idempotency", nil)
	mon := monitoring.NewPipelineMonitoring(shared, "Monitoring", nil)
	for _, name := range []string{"Invoices", "Refunds"} {
		pipeline.NewPipeline(shared, name, &pipeline.PipelineProps{Table: tbl, Monitoring: mon})
	}
	want := tableAlarms(t, alone, own)
	if want == 0 {
		t.Fatal("WatchTable created no alarm on the table: the test cannot tell anything")
	}
	if got := tableAlarms(t, shared, tbl); got != want {
		t.Errorf("shared table has %d alarms, want %d (one WatchTable's)", got, want)
	}
}

// One key for everything: every queue the pipeline creates (processing, DLQ, schedule DLQ,
// failure queue, undelivered notifications), the table and the alarm topics use it.
func TestEncryptionKeyCoversEveryDataStore(t *testing.T) {
	app := cdktest.NewApp()
	s := cdktest.NewStack(app, "OneKey")
	key := awskms.NewKey(s, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	pipeline.NewPipeline(s, "Orders", &pipeline.PipelineProps{
		EncryptionKey:   key,
		MonitoringProps: &monitoring.PipelineMonitoringProps{AlarmEmails: []string{"oncall@example.com"}},
		Dispatcher:      &dispatcher.ScheduledDispatcherProps{Items: []dispatcher.WorkItem{{ID: "nightly"}}},
		Heartbeat:       &heartbeat.HeartbeatProps{},
	})
	keyID := cdktest.LogicalID(s, key)
	tmpl := assertions.Template_FromStack(s, nil)
	for typ, prop := range map[string]string{
		"AWS::SQS::Queue":      "KmsMasterKeyId",
		"AWS::SNS::Topic":      "KmsMasterKeyId",
		"AWS::DynamoDB::Table": "SSESpecification",
	} {
		found := *tmpl.FindResources(jsii.String(typ), nil)
		if len(found) == 0 {
			t.Errorf("no %s", typ)
		}
		for id, r := range found {
			got := cdktest.JSON((*r)["Properties"].(map[string]any)[prop])
			if !strings.Contains(got, `"`+keyID+`"`) {
				t.Errorf("%s %s: %s = %s, want the pipeline's key %s", typ, id, prop, got, keyID)
			}
		}
	}
	// The heartbeat's role may use the key, through SQS, to send to the encrypted queue.
	policies := *tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil)
	heartbeatKey := false
	for id, r := range policies {
		if strings.HasPrefix(id, "OrdersHeartbeatRole") {
			doc := cdktest.JSON((*r)["Properties"].(map[string]any)["PolicyDocument"])
			heartbeatKey = strings.Contains(doc, `"Action":["kms:GenerateDataKey","kms:Decrypt"]`) && strings.Contains(doc, `"`+keyID+`"`)
		}
	}
	if !heartbeatKey {
		t.Errorf("the heartbeat's role may not use the queue's key %s", keyID)
	}
	if keys := *tmpl.FindResources(jsii.String("AWS::KMS::Key"), nil); len(keys) != 1 {
		t.Errorf("%d KMS keys, want only the one given", len(keys))
	}
}

// A pipeline on an existing queue creates no queue; its consumer reads the existing one.
func TestPipelineOnAnExistingQueue(t *testing.T) {
	app := cdktest.NewApp()
	s := cdktest.NewStack(app, "ExistingQueue")
	existing := queue.ImportProcessingQueue(s, "OrdersQueue", &queue.ExistingProcessingQueueProps{
		QueueName: "orders.fifo", DeadLetterQueueName: "orders-dlq.fifo", VisibilityTimeout: 3 * time.Minute, RetentionPeriod: 96 * time.Hour,
	})
	p := pipeline.NewPipeline(s, "Orders", &pipeline.PipelineProps{ExistingQueue: existing})
	if p.Queue() != existing || !p.Queue().Fifo() {
		t.Fatalf("pipeline queue %v (fifo %v), want the existing FIFO queue", p.Queue(), p.Queue().Fifo())
	}
	tmpl := assertions.Template_FromStack(s, nil)
	if n := len(*tmpl.FindResources(jsii.String("AWS::SQS::Queue"), &map[string]any{
		"Properties": map[string]any{"FifoQueue": true}})); n != 0 {
		t.Errorf("%d FIFO queues created, want none: the existing one is used", n)
	}
	mapping := cdktest.JSON(tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil))
	if !strings.Contains(mapping, ":orders.fifo") {
		t.Errorf("event source mapping does not read orders.fifo: %s", mapping)
	}
}

// The migration trap: a pipeline that created its own table switches to a table shared at
// stack level. The table's construct path changes, so does its logical id, and a deploy
// would create a new, empty table. Pinning the old logical id keeps the deployed table.
func TestMovingTheTableKeepsItsLogicalIDWhenPinned(t *testing.T) {
	app := cdktest.NewApp()
	before := cdktest.NewStack(app, "OwnTable")
	own := pipeline.NewPipeline(before, "Orders", nil)
	oldID := cdktest.LogicalID(before, own.Table().Table())

	after := cdktest.NewStack(app, "SharedTable")
	moved := table.NewIdempotencyTable(after, "Idempotency", nil)
	if id := cdktest.LogicalID(after, moved.Table()); id == oldID {
		t.Fatalf("the moved table kept its logical id %s without pinning: the trap this test is about is gone", id)
	}
	pinned := cdktest.NewStack(app, "SharedPinned")
	shared := table.NewIdempotencyTable(pinned, "Idempotency", &table.IdempotencyTableProps{LogicalID: oldID})
	pipeline.NewPipeline(pinned, "Orders", &pipeline.PipelineProps{Table: shared})
	tables := *assertions.Template_FromStack(pinned, nil).FindResources(jsii.String("AWS::DynamoDB::Table"), nil)
	if _, ok := tables[oldID]; !ok || len(tables) != 1 {
		t.Errorf("tables %v, want only %s (the deployed table's id)", slices.Collect(maps.Keys(tables)), oldID)
	}
}

// A pipeline's consumer props are reported against the props the user set, all at once: an
// invalid Consumer.Timeout is the consumer's Timeout problem (not the queue's ConsumerTimeout,
// which the pipeline derives), listed with the consumer's other problems.
func TestConsumerProblemsNameTheConsumersProps(t *testing.T) {
	for _, timeout := range []time.Duration{16 * time.Minute, 1500 * time.Millisecond} {
		id := "Bad" + strings.ReplaceAll(timeout.String(), ".", "")
		func() {
			defer func() {
				verr, ok := validate.AsError(recover())
				if !ok {
					t.Fatalf("%v: want a *validate.Error", timeout)
				}
				want := []string{"Function.Timeout: got " + timeout.String() + "; use whole seconds from 1s to 15m0s (Lambda's limits)",
					"Function.MemorySize: got 64; use 128 to 10240 MB (Lambda's limits)"}
				if verr.Construct != `IdempotentConsumer "PipelineTest/`+id+`/Consumer"` || strings.Join(verr.Problems, "\n") != strings.Join(want, "\n") {
					t.Errorf("%v:\n%v\nwant the consumer's problems:\n%s", timeout, verr, strings.Join(want, "\n"))
				}
			}()
			pipeline.NewPipeline(stack, id, &pipeline.PipelineProps{Consumer: &consumer.IdempotentConsumerProps{Function: function.Options{Timeout: timeout, MemorySize: 64}}})
		}()
	}
}
