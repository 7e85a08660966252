package pipeline_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/table"
)

// Two pipelines in another app, sharing one idempotency table (each consumer keeps its own
// key prefix, the pipeline's id). Bundling is skipped here; `cdk synth` builds the functions.
func Example() {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
	stack := awscdk.NewStack(app, jsii.String("Billing"), nil)

	shared := table.NewIdempotencyTable(stack, "Idempotency", nil)
	invoices := pipeline.NewPipeline(stack, "Invoices", &pipeline.PipelineProps{
		Fifo:  true,
		Table: shared,
		Dispatcher: &dispatcher.ScheduledDispatcherProps{
			Cron:     "0 2 * * ? *",
			TimeZone: "Europe/Berlin",
			Items:    []dispatcher.WorkItem{{ID: "invoice-run", Group: "tenant-a"}},
		},
	})
	// A queue fed by other producers: no dispatcher.
	refunds := pipeline.NewPipeline(stack, "Refunds", &pipeline.PipelineProps{
		Table:      shared,
		Monitoring: invoices.Monitoring(),
	})
	fmt.Println(invoices.Queue().Fifo(), refunds.Queue().Fifo(), refunds.Dispatcher() == nil)
	// Output: true false true
}
