package local_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/consumer"
	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/pipeline"
	"github.com/idempotent-sqs/pipeline/constructs/queue"
	"github.com/idempotent-sqs/pipeline/local"
)

// A stack whose queues exist already (queue.ImportProcessingQueue): one imported by name
// (its ARN and URL are expressions of the account and region), one FIFO queue by literal
// ARN. The template has no AWS::SQS::Queue for either; the kit stands in for both and their
// DLQs from what the consumer records in the cloud assembly, and the consumer, its DLQ
// sends and the DLQ alarm use the stand-ins. The stack is in a Stage, beside a stack with
// no pipeline (a shared topic), as a multi-stage app has them: the pipelines keep their
// names, the outputs are keyed by the CloudFormation stack name, the other stack is only
// created.
func TestKitStandsInForImportedQueues(t *testing.T) {
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out)})
	stage := awscdk.NewStage(app, jsii.String("Dev"), nil)
	awssns.NewTopic(awscdk.NewStack(stage, jsii.String("Shared"), nil), jsii.String("Topic"), nil)
	stack := awscdk.NewStack(stage, jsii.String("Imported"), nil)
	byName := queue.ImportProcessingQueue(stack, "Invoices", &queue.ExistingProcessingQueueProps{
		QueueName: "billing-invoices", DeadLetterQueueName: "billing-invoices-dlq",
		VisibilityTimeout: 18 * time.Second, RetentionPeriod: 4 * 24 * time.Hour,
	})
	invoicing := pipeline.NewPipeline(stack, "Invoicing", &pipeline.PipelineProps{
		ExistingQueue: byName, Consumer: &consumer.IdempotentConsumerProps{Function: function.Options{Timeout: 3 * time.Second}},
	})
	awscdk.NewCfnOutput(stack, jsii.String("InvoicingConsumerName"), &awscdk.CfnOutputProps{Value: invoicing.Consumer().Function().FunctionName()})
	byArn := queue.ImportProcessingQueue(stack, "Ledger", &queue.ExistingProcessingQueueProps{
		QueueArn:           "arn:aws:sqs:eu-west-1:111122223333:ledger.fifo",
		DeadLetterQueueArn: "arn:aws:sqs:eu-west-1:111122223333:ledger-dlq.fifo",
		VisibilityTimeout:  18 * time.Second, RetentionPeriod: 4 * 24 * time.Hour, MaxReceiveCount: 3,
	})
	pipeline.NewPipeline(stack, "Ledgers", &pipeline.PipelineProps{
		ExistingQueue: byArn, Consumer: &consumer.IdempotentConsumerProps{Function: function.Options{Timeout: 3 * time.Second}},
	})
	app.Synth(nil)
	t.Parallel() // after the synth: one test at a time drives the jsii kernel

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	kit, err := local.Start(ctx, local.Options{Assembly: out, NoHeartbeats: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close()

	standIns := strings.Join(kit.StandIns(), "\n")
	for _, want := range []string{
		"queue billing-invoices: its maxReceiveCount is not in the app (ExistingProcessingQueueProps.MaxReceiveCount); the stand-in uses 5",
		"queue billing-invoices and its DLQ billing-invoices-dlq (imported by the stack; created locally, visibility timeout 18 s, maxReceiveCount 5)",
		"queue ledger.fifo and its DLQ ledger-dlq.fifo (imported by the stack; created locally, visibility timeout 18 s, maxReceiveCount 3)",
	} {
		if !strings.Contains(standIns, want) {
			t.Errorf("StandIns lack %q:\n%s", want, standIns)
		}
	}
	var names []string
	for _, p := range kit.Pipelines() {
		t.Logf("%s/%s: queue %s, DLQ %s", p.Stack, p.Name, p.QueueURL, p.DLQURL)
		names = append(names, p.Stack+" "+p.Name)
	}
	if !slices.Equal(names, []string{"Dev/Imported Invoicing", "Dev/Imported Ledgers"}) {
		t.Errorf("Pipelines = %q, want Invoicing and Ledgers of Dev/Imported", names)
	}
	outputs, skipped := kit.Outputs()
	if name := outputs["Dev-Imported"]["InvoicingConsumerName"]; !strings.HasPrefix(name, "InvoicingConsumer") || len(skipped) > 0 {
		t.Errorf("Outputs = %v (skipped %v), want Dev-Imported's InvoicingConsumerName, the consumer's local name", outputs, skipped)
	}

	start := time.Now()
	for _, name := range []string{"Invoicing", "Ledgers"} {
		var bodies []string
		for i := range 20 {
			bodies = append(bodies, fmt.Sprintf(`{"idempotencyKey":"%s-%d"}`, name, i%10))
		}
		if err := kit.Send(ctx, name, append(bodies, `not json`)...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("FIGURE kit, imported queues: 2 x (20 messages + 1 bad) processed in %v\n", time.Since(start).Round(100*time.Millisecond))
	for _, name := range []string{"Invoicing", "Ledgers"} {
		effects, err := kit.Effects(name)
		if err != nil {
			t.Fatal(err)
		}
		var twice []string
		for k, n := range effects {
			if n != 1 {
				twice = append(twice, k)
			}
		}
		if len(effects) != 10 || len(twice) > 0 {
			t.Errorf("%s: effects %v, want 10 keys once each", name, effects)
		}
		dead, err := kit.DeadLetters(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) != 1 || dead[0].Body != "not json" || !strings.HasPrefix(dead[0].Reason, "body_not_json") {
			t.Errorf("%s: DLQ holds %+v, want the bad body with reason body_not_json", name, dead)
		}
	}
	// The DLQ alarm of the queue imported by name reads its DLQ by a name the template
	// computes from the ARN (Fn::Select of Fn::Split): it must see the stand-in's depth.
	actx, stop := context.WithTimeout(ctx, 2*time.Minute) // one 1-minute period on a clock 30 times faster: 2 s
	defer stop()
	alarm, err := kit.WaitForAlarm(actx, "InvoicingDeadLetterMessages")
	if err != nil {
		states, _ := kit.Alarms()
		var names []string
		for _, a := range states {
			names = append(names, a.LogicalID+"="+a.State)
		}
		slices.Sort(names)
		t.Fatalf("%v; alarms: %v", err, names)
	}
	fmt.Printf("FIGURE kit, imported queues: DLQ alarm %s in ALARM %v after the bad messages were sent\n", alarm.LogicalID, alarm.Since.Sub(start).Round(100*time.Millisecond))
	if err := kit.Err(); err != nil {
		t.Errorf("background: %v", err)
	}
}
