// Command multistage is a CDK app with two stages of one pipeline: dev, cheap and easy to
// tear down, and prod, with a customer managed key for everything that holds data, longer
// retention and its own alarm recipients. Both stages are one function of a StageConfig, so
// the difference between them is the config and nothing else.
//
//	cd examples/multistage && cdk synth   # cdk.out/assembly-Dev, cdk.out/assembly-Prod
package main

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/dispatcher"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/monitoring"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/constructs/table"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// StageConfig is what differs between stages.
type StageConfig struct {
	// OwnKey encrypts the table, every queue and the alarm topics with one customer managed
	// key of the stage (rotation on). Without it: AWS managed and SQS managed keys.
	OwnKey bool
	// Retention is how long the processing queue keeps a message; the DLQ keeps them 14 days.
	Retention time.Duration
	// LogRetention of the functions' log groups.
	LogRetention awslogs.RetentionDays
	// AlarmEmails receive the alarms.
	AlarmEmails []string
	// Disposable lets `cdk destroy` delete the table (dev only: deletion protection off).
	Disposable bool
}

// Dev and Prod are the two stages' configurations.
var (
	Dev = StageConfig{
		Retention:    4 * 24 * time.Hour,
		LogRetention: awslogs.RetentionDays_ONE_WEEK,
		AlarmEmails:  []string{"dev-team@example.com"},
		Disposable:   true,
	}
	Prod = StageConfig{
		OwnKey:       true,
		Retention:    7 * 24 * time.Hour,
		LogRetention: awslogs.RetentionDays_ONE_YEAR,
		AlarmEmails:  []string{"oncall@example.com", "payments-leads@example.com"},
	}
)

// NewPipelineStage is one stage: a stack with the idempotency table, the monitoring and an
// Orders pipeline dispatched nightly.
func NewPipelineStage(scope constructs.Construct, id string, cfg StageConfig) awscdk.Stage {
	stage := awscdk.NewStage(scope, jsii.String(id), nil)
	stack := awscdk.NewStack(stage, jsii.String("Pipeline"), nil)

	var key awskms.IKey
	if cfg.OwnKey {
		key = awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{
			EnableKeyRotation: jsii.Bool(true),
			Description:       jsii.String("Orders pipeline (" + id + "): table, queues, alarm topics"),
		})
	}
	tp := &table.IdempotencyTableProps{EncryptionKey: key}
	if cfg.Disposable {
		tp.RemovalPolicy, tp.DisableDeletionProtection = awscdk.RemovalPolicy_DESTROY, true
	}
	pipeline.NewPipeline(stack, "Orders", &pipeline.PipelineProps{
		Fifo:            true,
		EncryptionKey:   key,
		TableProps:      tp,
		MonitoringProps: &monitoring.PipelineMonitoringProps{AlarmEmails: cfg.AlarmEmails},
		Queue:           &queue.ProcessingQueueProps{RetentionPeriod: cfg.Retention},
		Consumer:        &consumer.IdempotentConsumerProps{Function: function.Options{LogRetention: cfg.LogRetention}},
		Dispatcher: &dispatcher.ScheduledDispatcherProps{
			Cron: "0 2 * * ? *", TimeZone: "Europe/Berlin", Function: function.Options{LogRetention: cfg.LogRetention},
			Items: []dispatcher.WorkItem{{ID: "nightly-invoices", Group: "billing"}},
		},
	})
	return stage
}

func main() {
	defer validate.ExitOnInvalidProps()
	app := awscdk.NewApp(nil)
	NewPipelineStage(app, "Dev", Dev)
	NewPipelineStage(app, "Prod", Prod)
	app.Synth(nil)
}
