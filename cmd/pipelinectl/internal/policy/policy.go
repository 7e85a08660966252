package policy

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// The actions each command needs, per resource. The least-privilege policy is built from
// them, and a test (TestOperatorPolicyCoversEveryCall) checks that every call the commands
// make is allowed by it.
var (
	// inspectDLQ: dlq inspect, and the plan of dlq redrive.
	inspectDLQ = []string{"sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility"}
	// redriveDLQ: dlq redrive --yes, on the DLQ.
	redriveDLQ = []string{"sqs:DeleteMessage", "sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks"}
	// redriveDestination: the queue a redrive moves to.
	redriveDestination = []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}
	readRecord         = []string{"dynamodb:DescribeTable", "dynamodb:GetItem"}
	releaseRecord      = []string{"dynamodb:UpdateItem"}
	readOutputs        = []string{"cloudformation:DescribeStacks"}
	// backfill reads the schedule and invokes the dispatcher; verify invokes it for a probe
	// (and sends its own probes with redriveDestination's sqs:SendMessage).
	backfillSchedule = []string{"scheduler:GetSchedule"}
	backfillInvoke   = []string{"lambda:InvokeFunction"}
	// alarmsCheck: status and verify read the alarms' states.
	alarmsCheck = []string{"cloudwatch:DescribeAlarms"}
	// statusMappings: status reads the consumer's event source mappings.
	statusMappings = []string{"lambda:ListEventSourceMappings"}
)

type policyStatement struct {
	Sid      string   `json:"Sid"`
	Effect   string   `json:"Effect"`
	Action   []string `json:"Action"`
	Resource []string `json:"Resource"`
}

// Document is an IAM policy document, as the command prints it.
type Document struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

// Usage is `pipelinectl help policy`.
const Usage = `pipelinectl policy: the least-privilege IAM policy for operating a pipeline with pipelinectl.

  Prints an IAM policy document (JSON) naming the pipeline's own queues, table and stack,
  from the same outputs the other commands read: attach it to the operators' role.
  --access read gives status, inspect and record get only; --access operate (the default)
  adds redrive, record release, backfill and verify. status and verify read the alarms'
  states (cloudwatch:DescribeAlarms, which CloudWatch answers about composite alarms only
  when granted on "*") and status the consumer's event source mappings
  (lambda:ListEventSourceMappings, which Lambda authorizes on "*" only).
  A queue or table encrypted with a customer managed key also
  needs kms:Decrypt and kms:GenerateDataKey on that key (the key policy may grant them).

  --access read|operate  what the operators may do (default operate)
`

// Run is `pipelinectl policy ARGS`: it prints the policy for the pipeline the flags name.
func Run(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	fs, c := cli.NewFlags("policy", Usage, w.Out)
	access := fs.String("access", "operate", "read or operate")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return err
	}
	if *access != "read" && *access != "operate" {
		return cli.Usagef("--access %s: use read (status, inspect, record get) or operate (also redrive, record release, backfill and verify)", *access)
	}
	if c.Stack == "" && c.Outputs == "" {
		return cli.Usagef("policy needs the pipeline's outputs: give --stack or --outputs, with --pipeline")
	}
	cl, err := connect(ctx, c)
	if err != nil {
		return err
	}
	outputs, from, err := c.StackOutputs(ctx, cl)
	if err != nil {
		return err
	}
	dlqURL, err := c.PipelineDLQ(outputs, from)
	if err != nil {
		return err
	}
	region := c.Region
	if region == "" && cl.REST != nil {
		region = cl.REST.Cfg.Region // the profile's or the environment's
	}
	dlqArn, err := ARNOfQueueURL(dlqURL, region)
	if err != nil {
		return err
	}
	doc, err := document(c, outputs, *access, dlqArn)
	if err != nil {
		return err
	}
	cli.WriteJSON(w.Out, doc)
	return nil
}

// document is the policy that lets an operator run pipelinectl's commands of access (read or
// operate) on c.Pipeline, whose outputs and dead-letter queue's ARN are given: each statement
// names that pipeline's resources, where the service allows it, in the DLQ's partition,
// region and account.
func document(c *cli.Common, outputs map[string]string, access, dlqArn string) (Document, error) {
	parts := strings.Split(dlqArn, ":")
	partition, region, account := parts[1], parts[3], parts[4]
	doc := Document{Version: "2012-10-17"}
	add := func(sid string, actions []string, resources ...string) {
		doc.Statement = append(doc.Statement, policyStatement{Sid: sid, Effect: "Allow", Action: actions, Resource: resources})
	}
	add("InspectDeadLetterQueue", inspectDLQ, dlqArn)
	var srcArn string
	if src := outputs[c.Pipeline+cli.OutQueueURL]; src != "" {
		var err error
		if srcArn, err = ARNOfQueueURL(src, region); err != nil {
			return Document{}, err
		}
	}
	if access == "read" && srcArn != "" {
		add("ReadPipelineQueue", []string{"sqs:GetQueueAttributes"}, srcArn) // status's depths
	}
	if access == "operate" {
		add("RedriveFromDeadLetterQueue", redriveDLQ, dlqArn)
		if srcArn != "" {
			add("RedriveToPipelineQueue", redriveDestination, srcArn)
		}
	}
	if fn, name := outputs[c.Pipeline+cli.OutDispatcher], outputs[c.Pipeline+cli.OutSchedule]; access == "operate" && fn != "" && name != "" {
		add("ReadSchedule", backfillSchedule, fmt.Sprintf("arn:%s:scheduler:%s:%s:schedule/%s/%s", partition, region, account,
			cmp.Or(outputs[c.Pipeline+cli.OutScheduleGroup], "default"), name))
		add("InvokeDispatcher", backfillInvoke, fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", partition, region, account, fn))
	}
	if cli.PipelineOutput(outputs, c.Pipeline, cli.OutUnhealthy) != "" {
		// status and verify read the composite alarm's children. CloudWatch answers
		// DescribeAlarms about composite alarms only to a permission scoped to "*" (its API
		// reference); the action reads alarm states and nothing else.
		add("ReadAlarmStates", alarmsCheck, "*")
	}
	if outputs[c.Pipeline+cli.OutConsumer] != "" {
		// status lists the consumer's event source mappings; Lambda authorizes
		// ListEventSourceMappings on no resource narrower than "*".
		add("ReadEventSourceMappings", statusMappings, "*")
	}
	if table := cli.PipelineOutput(outputs, c.Pipeline, cli.OutTableName); table != "" {
		tableArn := fmt.Sprintf("arn:%s:dynamodb:%s:%s:table/%s", partition, region, account, table)
		add("ReadIdempotencyRecords", readRecord, tableArn)
		if access == "operate" {
			add("ReleaseIdempotencyRecords", releaseRecord, tableArn)
		}
	}
	if c.Stack != "" {
		add("ReadStackOutputs", readOutputs, fmt.Sprintf("arn:%s:cloudformation:%s:%s:stack/%s/*", partition, region, account, c.Stack))
	}
	return doc, nil
}

// ARNOfQueueURL is the ARN of the queue at an SQS URL: https://sqs.REGION.amazonaws.com/
// ACCOUNT/NAME (the region from the host, else region), or a local server's
// http://HOST/ACCOUNT/NAME.
func ARNOfQueueURL(u, region string) (string, error) {
	p, err := url.Parse(u)
	parts := strings.Split(strings.Trim(p.Path, "/"), "/")
	if err != nil || len(parts) != 2 {
		return "", fmt.Errorf("%q is not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)", u)
	}
	host := strings.Split(p.Hostname(), ".")
	if len(host) >= 3 && host[0] == "sqs" {
		region = host[1]
	}
	if region == "" {
		return "", cli.Usagef("no region for %s: give --region", u)
	}
	partition := "aws"
	switch {
	case strings.HasPrefix(region, "cn-"):
		partition = "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		partition = "aws-us-gov"
	}
	return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", partition, region, parts[0], parts[1]), nil
}
