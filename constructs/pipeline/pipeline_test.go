package pipeline_test

import (
	"os"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

var (
	app   awscdk.App
	stack awscdk.Stack
)

func TestMain(m *testing.M) {
	app = cdktest.NewApp()
	stack = cdktest.NewStack(app, "PipelineTest")
	os.Exit(m.Run())
}

// The pipeline checks its own combinations before creating anything, so these cases need
// no synth.
func TestValidationMessages(t *testing.T) {
	shared := table.NewIdempotencyTable(stack, "Shared", nil)
	mon := monitoring.NewPipelineMonitoring(stack, "SharedMonitoring", nil)
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
			Consumer: &consumer.IdempotentConsumerProps{Timeout: 2 * time.Minute}},
			[]string{"Queue.ConsumerTimeout: got 1m0s", "derives it from Consumer.Timeout (2m0s)"}},
		{"consumer wired by hand", &pipeline.PipelineProps{Consumer: &consumer.IdempotentConsumerProps{Table: shared}},
			[]string{"Consumer.Queue:", "the pipeline wires its own queue and table"}},
		{"dispatcher wired by hand", &pipeline.PipelineProps{Dispatcher: &dispatcher.ScheduledDispatcherProps{Queue: queue.NewProcessingQueue(stack, "Other", nil)}},
			[]string{"Dispatcher.Queue:", "the pipeline wires its own queue"}},
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
