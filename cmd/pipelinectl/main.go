// Command pipelinectl operates the pipelines of the reference stack: it shows what is in a
// dead-letter queue, moves it back once the cause is fixed, and reads or releases the
// idempotency record of a key.
//
// Install it with
//
//	go install github.com/idempotent-sqs/pipeline/cmd/pipelinectl@<version>
//
// and run `pipelinectl help` for the commands. It finds the queues and the table from the
// stack's outputs (`--stack NAME`, or `--outputs FILE` as `cdk deploy --outputs-file` writes
// it), so an operator types `pipelinectl dlq redrive --stack Pipeline --pipeline Fifo`, not
// ARNs. Credentials and region come from the AWS SDK's default chain (environment, shared
// config and profiles, SSO, container and instance roles); endpoints from `--endpoint-url` or
// the SDK's AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> variables, so it runs against
// ElasticMQ and DynamoDB Local as well.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/backfill"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/dlq"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/health"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/localkit"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/policy"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/record"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(runWith(ctx, cli.Streams{Out: os.Stdout, Err: os.Stderr, Argv: os.Args[1:], SecondSignalKills: stop}))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, cli.Streams{Out: stdout, Err: stderr, Argv: args})
}

// runWith is run with the streams, the hooks and the timings given (w.Argv the arguments).
func runWith(ctx context.Context, w cli.Streams) int {
	code, line := cli.Outcome(ctx, dispatch(ctx, w.Argv, w, cli.NewAWS))
	if line != "" {
		fmt.Fprintf(w.Err, "pipelinectl: %s\n", line)
	}
	if code == cli.ExitUsage {
		fmt.Fprintln(w.Err, usageHint(w.Argv))
	}
	return code
}

const usage = `pipelinectl operates the idempotent SQS pipelines of a deployed stack.

Usage:
  pipelinectl dlq inspect    --stack STACK --pipeline NAME [--sample N] [--max N] [--record-ttl D]
                             [--output json]
  pipelinectl dlq redrive    --stack STACK --pipeline NAME [--yes] [--rate N] [--include-invalid]
                             [--include-expired] [--record-ttl D] [--to QUEUE] [--output json]
  pipelinectl record get     --stack STACK --pipeline NAME KEY   (or --id RAW_ID) [--output json]
  pipelinectl record release --stack STACK --pipeline NAME KEY [--force]
  pipelinectl status         --stack STACK [--pipeline NAME] [--output json]
  pipelinectl verify         --stack STACK [--pipeline NAME] [--timeout D] [--output json]
  pipelinectl backfill       --stack STACK --pipeline NAME --from TIME --to TIME [--yes]
                             [--output json]
  pipelinectl policy         --stack STACK --pipeline NAME [--access read|operate]
  pipelinectl local up       --assembly DIR [--stack NAME] [--send FILE] [--fire NAME]
  pipelinectl local install
  pipelinectl help [COMMAND]

Where the resources are (one of --stack or --outputs, or the overrides):
  --stack NAME         CloudFormation stack: its outputs <Pipeline>QueueUrl,
                       <Pipeline>DeadLetterQueueUrl, <Pipeline>RecordTTL,
                       <Pipeline>KeyPrefix, <Pipeline>IdempotencyTableName (or
                       IdempotencyTableName), ... (pipeline.Outputs adds them)
  --outputs FILE       the JSON 'cdk deploy --outputs-file FILE' writes (with several
                       stacks in it, --stack picks one)
  --pipeline NAME      the pipeline, as the outputs name it (Standard, Fifo)
  --queue-url URL      the dead-letter queue (dlq commands), instead of the outputs
  --table NAME         the idempotency table (record commands), instead of the outputs

AWS access: the SDK's default chain (AWS_PROFILE, SSO, environment, roles) for
credentials and region; --region and --profile override. Endpoints: --endpoint-url, or
AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_DYNAMODB /
AWS_ENDPOINT_URL_CLOUDFORMATION (ElasticMQ, DynamoDB Local), and _LAMBDA, _SCHEDULER and
_CLOUDWATCH for status, verify and backfill.

Exit status, every command:
  0  done; nothing the command was to do is left (a dry run included)
  1  failed, or found a problem (status, verify): the message says what
  2  the command line is wrong: nothing ran
  3  not done: interrupted, or stopped by the network, hidden messages or a move task
     still running; the summary says what is where and the command that resumes
  4  done, but messages stay in the DLQ by rule (dlq redrive: bad input, older than the
     record TTL, behind those in a FIFO group); the summary says which flag moves them

Run 'pipelinectl help dlq', 'help record', 'help status', 'help verify', 'help backfill',
'help policy' or 'help local' for each command's details.
`

// command is one of pipelinectl's commands: its name (with its subcommand, for dlq and
// record), the help `pipelinectl help <first word>` prints, and what runs it.
type command struct {
	name string
	help string
	run  func(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error
}

// commands is every command, in the order of the usage text.
var commands = []command{
	{"dlq inspect", dlq.InspectUsage, dlq.Inspect},
	{"dlq redrive", dlq.RedriveUsage, dlq.Redrive},
	{"record get", record.Usage, record.Get},
	{"record release", record.Usage, record.Release},
	{"status", health.StatusUsage, health.Status},
	{"verify", health.VerifyUsage, health.Verify},
	{"backfill", backfill.Usage, backfill.Run},
	{"policy", policy.Usage, policy.Run},
	{"local", localkit.Usage, func(ctx context.Context, args []string, w cli.Streams, _ cli.Connector) error {
		return localkit.Run(ctx, args, w)
	}},
}

// group is the commands whose name starts with the word first, and their full names.
func group(first string) (cs []command, names []string) {
	if strings.Contains(first, " ") {
		return nil, nil // one argument "dlq inspect" is not the command dlq inspect
	}
	for _, c := range commands {
		if c.name == first || strings.HasPrefix(c.name, first+" ") {
			cs, names = append(cs, c), append(names, c.name)
		}
	}
	return cs, names
}

// firstWords are the commands' first words, each once, and help.
func firstWords() []string {
	var ws []string
	for _, c := range commands {
		if w, _, _ := strings.Cut(c.name, " "); !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return append(ws, "help")
}

// dispatch runs the command in args.
func dispatch(ctx context.Context, args []string, w cli.Streams, connect cli.Connector) error {
	if len(args) == 0 {
		fmt.Fprint(w.Out, usage)
		return cli.Usagef("no command given")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		help := usage
		if len(args) > 1 {
			if cs, _ := group(args[1]); len(cs) > 0 {
				help = ""
				for i, c := range cs { // a family's help: each of its commands' once
					if slices.ContainsFunc(cs[:i], func(o command) bool { return o.help == c.help }) {
						continue
					}
					if help != "" {
						help += "\n"
					}
					help += c.help
				}
			}
		}
		fmt.Fprint(w.Out, help)
		return cli.ErrHelp
	}
	cs, names := group(args[0])
	switch {
	case len(cs) == 0:
		return cli.Usagef("unknown command %q%s", args[0], cli.DidYouMean(args[0], firstWords()))
	case len(cs) == 1 && cs[0].name == args[0]:
		return cs[0].run(ctx, args[1:], w, connect)
	case len(args) < 2:
		var subs []string
		for _, n := range names {
			subs = append(subs, strings.TrimPrefix(n, args[0]+" "))
		}
		return cli.Usagef("%s needs a subcommand: %s", args[0], strings.Join(subs, " or "))
	}
	name := args[0] + " " + args[1]
	for _, c := range cs {
		if c.name == name {
			return c.run(ctx, args[2:], w, connect)
		}
	}
	var all []string
	for _, c := range commands {
		if strings.Contains(c.name, " ") {
			all = append(all, c.name)
		}
	}
	return cli.Usagef("unknown command %q%s", name, cli.DidYouMean(name, all))
}

// usageHint is the line after a usage error: where the command's help is.
func usageHint(args []string) string {
	if len(args) > 0 {
		if cs, _ := group(args[0]); len(cs) > 0 {
			return fmt.Sprintf("Run 'pipelinectl help %s' for its flags.", args[0])
		}
	}
	return "Run 'pipelinectl help' for usage."
}
