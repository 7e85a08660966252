package monitoring

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// Outputs adds the stack outputs of m (names in package contract): the paging and ticket
// topics to subscribe, the composite alarm pipelinectl status and verify read, and the
// dashboard. For monitoring that pipelines share; pipeline.Outputs adds each pipeline's
// composite alarm under its prefix. Once per stack.
func Outputs(stack awscdk.Stack, m PipelineMonitoring) {
	out := func(name, desc string, value *string) {
		awscdk.NewCfnOutput(stack, jsii.String(name), &awscdk.CfnOutputProps{Value: value, Description: jsii.String(desc)})
	}
	out(contract.OutAlarmTopic, "SNS topic the paging alarms notify (lost or stuck work); subscribe the pager here", m.Topic().TopicArn())
	out(contract.OutTicketTopic, "SNS topic the ticketing alarms notify (degraded, retrying); subscribe the team's queue here", m.TicketTopic().TopicArn())
	out(contract.OutUnhealthy, "Composite alarm in ALARM while any paging alarm is: the pipeline's one health signal", m.Unhealthy().AlarmName())
	out(contract.OutDashboard, "CloudWatch dashboard of the pipeline", m.Dashboard().DashboardName())
}
