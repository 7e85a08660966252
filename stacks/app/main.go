// Command app is the CDK app: `cdk synth`, `cdk deploy` and `make synth` run it (see
// cdk.json). It reads its settings from CDK context, builds the pipeline stack with cdk-nag
// checks attached, and turns a construct's invalid props into a short error instead of a
// Go stack trace.
//
// Context keys (cdk.json, or `cdk synth -c key=value`):
//
//	stage              name suffix of the stack, e.g. dev or prod           (default "dev")
//	alarmEmail         comma-separated addresses subscribed to every alarm (default none)
//	ticketEmail        comma-separated addresses for ticketing alarms only (default none)
//	slackWorkspace     AWS Chatbot Slack workspace id, with slackChannel   (default none)
//	slackChannel       Slack channel id that gets every alarm              (default none)
//	schedule           the dispatchers' cron, AWS 6-field form              (default "0 * * * ? *")
//	timezone           IANA time zone of the schedule                       (default "UTC")
//	consumerTimeout    the consumer functions' timeout, a Go duration       (default 30s)
//	visibilityTimeout  both processing queues' visibility timeout           (default 6 x consumerTimeout)
//	maxMessageSize     both queues' largest message in bytes, up to 1048576 (default 262144)
//	tableCapacity      on-demand, or provisioned write units MIN-MAX[@TARGET%], e.g. 5-500@70 (default on-demand)
//	tableMaxWriteUnits an on-demand table's cap, write request units a second (default none)
//	consumerPollers    provisioned mode for both consumers, MIN-MAX event pollers, e.g. 2-20 (default none)
//	consumerBatchSize  the standard consumer's batch size, 1-10000      (default 10; FIFO keeps 10)
//	consumerBatchWindow the standard consumer's batching window, e.g. 1s (default none)
//	consumerMemory     both consumers' memory in MB                     (default 256)
//	consumerMaxConcurrency both mappings' maximum concurrency, 2-1000 (default 10; not with consumerPollers)
//	hardened           true: Hardening, docs/compliance.md (VPC, keys, backups) (default false)
//	heartbeat          each pipeline's heartbeat probe interval, or off     (default 5m)
//	account            12-digit account id the stack is pinned to           (default none: environment-agnostic)
//	region             region the stack is pinned to, e.g. eu-west-1        (default none: environment-agnostic)
//
// cdk.json also turns the CDK CLI's telemetry (context key cli-telemetry), its notices and
// version reporting (the AWS::CDK::Metadata resource) off; docs/development.md says how to turn
// them on.
//
// Without account and region the stack is environment-agnostic: the template is the same
// whoever synthesizes it, and a deploy goes to the deploying credentials' account and region.
// The app ignores the CLI's CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION: the CLI fills the
// account by calling STS GetCallerIdentity whenever it finds credentials, which `make synth`
// keeps from it (synth_network_test.go holds both). The app looks nothing up, but for one
// case: pinned to an account and region, the hardened stage's VPC asks EC2 for the region's
// availability zones at synth (through the account's CDK lookup role; cdk.context.json keeps
// the answer). Environment-agnostic, it takes two zones from Fn::GetAZs at deploy instead.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/stacks"
)

func main() {
	// Invalid props: the message on stderr and exit status 1, no Go stack trace.
	defer validate.ExitOnInvalidProps()

	app := awscdk.NewApp(nil)
	cfg, err := stacks.ConfigFromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stacks.Build(app, cfg)
	app.Synth(nil)
}
