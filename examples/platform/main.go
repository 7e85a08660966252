// Command app is a platform team's CDK app built only from the constructs, as the
// constructs' docs show them, not from the reference stack: two pipelines (one FIFO, with
// a dispatcher) sharing one idempotency table and one monitoring, each with the outputs
// pipelinectl reads. The FIFO pipeline's construct is named otherwise than its outputs, so
// its consumer's key prefix is not the name pipelinectl knows it by.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

func main() {
	defer validate.ExitOnInvalidProps()
	app := awscdk.NewApp(nil)
	NewPlatform(app, "Platform")
	app.Synth(nil)
}

// NewPlatform is the stack: a shared table and monitoring, an orders and an invoices pipeline.
func NewPlatform(scope constructs.Construct, id string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), nil)
	records := table.NewIdempotencyTable(stack, "Records", nil)
	mon := monitoring.NewPipelineMonitoring(stack, "Monitoring", &monitoring.PipelineMonitoringProps{
		AlarmEmails: []string{"oncall@example.com"},
	})
	orders := pipeline.NewPipeline(stack, "Orders", &pipeline.PipelineProps{
		Table:      records,
		Monitoring: mon,
		Dispatcher: &dispatcher.ScheduledDispatcherProps{
			Cron:  "0 6 * * ? *",
			Items: []dispatcher.WorkItem{{ID: "daily-report", Payload: map[string]any{"kind": "report"}}},
		},
	})
	invoices := pipeline.NewPipeline(stack, "InvoicesPipeline", &pipeline.PipelineProps{
		Table:      records,
		Monitoring: mon,
		Fifo:       true,
	})
	pipeline.Outputs(stack, "Orders", orders)
	pipeline.Outputs(stack, "Invoices", invoices)
	table.Outputs(stack, records)
	monitoring.Outputs(stack, mon)
	return stack
}
