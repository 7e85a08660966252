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
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	secondSignalKills = stop
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// secondSignalKills, when set (by main), gives Ctrl-C back its default effect: a command
// that is cleaning up after the first one (a redrive giving back what it holds) calls it, so
// that a second Ctrl-C ends the process at once. Commands that must stop what they started
// (local up) never call it.
var secondSignalKills func()

// Exit codes: one table for every command (docs/operator-cli.md, and the usage text; a test
// holds the three to each other).
const (
	exitOK      = 0 // done; nothing the command was to do is left (a dry run included)
	exitError   = 1 // failed, or found a problem (status, verify): the message says what, and changed nothing more than it says
	exitUsage   = 2 // the command line is wrong: nothing ran
	exitNotDone = 3 // not done: interrupted, or stopped by the network, hidden messages or a move task still running; the summary says what is where and the command that resumes
	exitLeft    = 4 // done, but messages stay in the DLQ by rule (bad input, older than the record TTL, behind those in a FIFO group): the summary says which flag moves them
)

// usageError is a command line that cannot run; it exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, streams{out: stdout, err: stderr, argv: args}, newAWS)
	var ue *usageError
	var nd *notDone
	var lb *leftBehind
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "pipelinectl: %s\n%s\n", ue.msg, usageHint(args))
		return exitUsage
	case errors.As(err, &nd):
		fmt.Fprintf(stderr, "pipelinectl: not done: %s\n", nd.why)
		return exitNotDone
	case errors.As(err, &lb):
		fmt.Fprintf(stderr, "pipelinectl: %s\n", lb)
		return exitLeft
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "pipelinectl: interrupted before anything changed\n")
		return exitNotDone
	default:
		fmt.Fprintf(stderr, "pipelinectl: %v\n", explain(err))
		return exitError
	}
}

// errHelp ends a command that printed its help.
var errHelp = errors.New("help printed")

const usage = `pipelinectl operates the idempotent SQS pipelines of a deployed stack.

Usage:
  pipelinectl dlq inspect    --stack STACK --pipeline NAME [--sample N] [--max N] [--record-ttl D]
                             [--output json]
  pipelinectl dlq redrive    --stack STACK --pipeline NAME [--yes] [--rate N] [--include-invalid]
                             [--include-expired] [--record-ttl D] [--to QUEUE] [--output json]
  pipelinectl record get     --stack STACK --pipeline NAME KEY   (or --id RAW_ID) [--output json]
  pipelinectl record release --stack STACK --pipeline NAME KEY [--force]
  pipelinectl status         --stack STACK [--pipeline NAME] [--output json]
  pipelinectl verify         --stack STACK [--pipeline NAME] [--timeout D]
  pipelinectl backfill       --stack STACK --pipeline NAME --from TIME --to TIME [--yes]
  pipelinectl policy         --stack STACK --pipeline NAME [--access read|operate]
  pipelinectl local up       --assembly DIR [--stack NAME] [--send FILE] [--fire NAME]
  pipelinectl local install
  pipelinectl help [COMMAND]

Where the resources are (one of --stack or --outputs, or the overrides):
  --stack NAME         CloudFormation stack: its outputs <Pipeline>QueueUrl,
                       <Pipeline>DeadLetterQueueUrl, <Pipeline>RecordTTL and
                       IdempotencyTableName
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

const dlqUsage = `pipelinectl dlq inspect: what is in a dead-letter queue, without consuming it.

  Counts (SQS's approximate ones, and what a scan received), messages grouped by
  DeadLetterReason code (the consumer's reason for bad input; "redrive policy" for
  messages SQS moved after maxReceiveCount receives), the oldest of each group, a sample
  per group (body truncated, attributes), and on a FIFO queue the message groups.

  Read-only, best effort: the scan holds each received message invisible (--hold, at most
  30 s) until the scan ends, then makes every one visible again at once. For those seconds
  another reader of the DLQ does not see them. A FIFO queue hands out the messages of a
  group only in order and none behind one in flight, so a scan sees the first messages of
  each group; the approximate count covers the rest.

  Each message's age is checked against the consumer's record TTL (the pipeline's
  RecordTTL output, or --record-ttl): a message first sent more than the TTL less 1h ago
  may have outlived its idempotency record, and is listed by id.

  The REDRIVE column says what a redrive would do, with the redrive's own rules: on FIFO a
  message behind one that stays in its group stays too, and each such group is named.
  Ctrl-C stops the scan and gives every message back at once.

  --sample N         messages shown per group (default 1, 0 for none)
  --max N            stop the scan after N messages (default 1000)
  --hold D           visibility timeout of the scan (default 30s)
  --record-ttl D     the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (default: the RecordTTL output)
  --include-invalid  plan as 'redrive --include-invalid' would; --include-expired likewise
  --output json      one JSON document on stdout: counts, every scanned message (id,
                     group, reason, times, attributes, whole body, what a redrive does)

pipelinectl dlq redrive: move dead-lettered messages back once their cause is fixed.

  Dry run unless --yes: it scans, says what would move where, and changes nothing.
  Destination: the pipeline's queue (its QueueUrl output, else the DLQ's redrive-allow
  policy), or --to QUEUE_URL, a queue of the same type (standard or FIFO).
  Messages the consumer dead-lettered as bad input (any DeadLetterReason: invalid_input,
  payload_mismatch, value_missing, ...) can never succeed unchanged: they stay in the DLQ
  unless --include-invalid.
  A redrive is safe while the idempotency records live: a message whose effect completed
  is acknowledged as a duplicate. A message first sent more than the record TTL (less 1h)
  ago may have outlived its record, and would run its effect again: it stays in the DLQ,
  named, unless --include-expired. Without a known TTL (no RecordTTL output and no
  --record-ttl) ages are not checked, and the run says so.

  Standard queue: SQS's message move task (StartMessageMoveTask), waited for and reported,
  when every message moves and the scan saw them all; else receive, send, delete (a copy
  carries the first send's time in a FirstSentTimestamp attribute, where SQS's limit of
  10 attributes leaves room, so its age still counts from the first send).
  FIFO queue: the move task where the server supports it, else receive, send with the
  original group id and a deduplication id derived from the message id, delete only after
  the send succeeded: each group keeps its order and no message is lost, and a copy sent
  again within SQS's 5-minute deduplication window is dropped. A group whose message stays
  (bad input without --include-invalid) stays whole from it on; the dry run counts it so.

  Interrupted, cut off, resumed: Ctrl-C stops between messages (a send or delete under way
  finishes first), gives back what the run holds, prints the counts and the command that
  resumes, and exits 3. Receive, send, delete are journaled (--journal, default in the
  user's cache directory): a rerun deletes a message whose copy an earlier run sent instead
  of sending it again. A send that got no answer (a network cut) is sent again and named
  in the summary as possibly doubled; on a standard queue it may be: the consumer answers
  the second copy as a duplicate while its record lives. A run does not end while the DLQ
  hides messages it did not account for (a receive whose answer was lost): it waits for
  them up to the hold (30s) and moves them. A move task already running (an earlier,
  interrupted run's) is waited for, not started again.

  The summary counts what is left in the DLQ after the run's last change, or says
  "unknown" and why (the network), names every kind of call that failed with its cause,
  and names any message the run could not give back with when it reappears. Done with
  messages kept by rule (bad input, older than the record TTL), it exits 4, not 0.
  Every --yes run that moves or keeps messages (not one that finds the DLQ empty) keeps
  an audit trail (runs/ beside the journal; the summary's "audit" line names it): the
  command, each message sent (as which copy, with its body's MD5), deleted, kept and why,
  possibly doubled or not given back, and the summary; a move task's run, the task's total.
  After a first Ctrl-C the run gives back what it holds; a second one ends it at once,
  leaving those hidden until their hold runs out.

  --yes              move (default: dry run)
  --rate N           at most N messages per second, 1 to 500 (default: no limit)
  --include-invalid  move bad-input messages too (the consumer dead-letters them again
                     unless the producer or the key configuration was fixed)
  --include-expired  move messages older than the record TTL too, each named with a
                     WARNING: one whose effect had completed runs it again
  --record-ttl D     the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (default: the RecordTTL output)
  --to QUEUE         another destination of the same queue type: its URL, ARN or name
  --wait D           how long to wait for a move task (default 15m)
  --journal FILE     the journal of this DLQ's moves (default: in the cache directory);
                     the audit trails go in runs/ beside it
  --output json      the summary as one JSON document on stdout (the text goes to stderr)
`

const recordUsage = `pipelinectl record get KEY: read the idempotency record of KEY.

  Status, owner (the fencing token of the last attempt), attempt, the lock's end and the
  TTL as times, the payload's sha256 and the stored result's size. The id is
  <key prefix>#KEY; the key prefix is the pipeline's name unless --key-prefix says
  otherwise. --id RAW_ID takes the id as the table holds it.

pipelinectl record release KEY: free a stuck INPROGRESS record so that the next delivery
of KEY runs at once (as the next attempt).

  The release is the consumer's own: the lock is reset on the condition that the record
  is still INPROGRESS and held by the owner read just before, so an attempt that took the
  record over meanwhile is never released. Refused for a COMPLETED record (its effect has
  run), an expired or already released one, and for a live lock unless --force, naming
  its owner and when the lock runs out.

  --id RAW_ID          the record's partition key value, instead of KEY
  --sort-key VALUE     with --id on a table with a sort key: the sort key value
  --tenant TENANT      the tenant of KEY on a table with a sort key (composite layout)
  --key-prefix PREFIX  the consumer's IDEMPOTENCY_KEY_PREFIX (default: the pipeline name)
  --force              (release) release a live lock: its owner may still be running the
                       effect, and the next delivery runs it again concurrently; it prints
                       a WARNING naming the live owner and when its lock would have run out
  --output json        (get) the record as one JSON document
`

// dispatch runs the command in args.
func dispatch(ctx context.Context, args []string, w streams, connect connector) error {
	stdout := w.out
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return usagef("no command given")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) > 1 && args[1] == "dlq":
			fmt.Fprint(stdout, dlqUsage)
		case len(args) > 1 && args[1] == "record":
			fmt.Fprint(stdout, recordUsage)
		case len(args) > 1 && args[1] == "policy":
			fmt.Fprint(stdout, policyUsage)
		case len(args) > 1 && args[1] == "backfill":
			fmt.Fprint(stdout, backfillUsage)
		case len(args) > 1 && args[1] == "verify":
			fmt.Fprint(stdout, verifyUsage)
		case len(args) > 1 && args[1] == "status":
			fmt.Fprint(stdout, statusUsage)
		case len(args) > 1 && args[1] == "local":
			fmt.Fprint(stdout, localUsage)
		default:
			fmt.Fprint(stdout, usage)
		}
		return errHelp
	case "policy":
		return dlqPolicy(ctx, args[1:], w, connect)
	case "backfill":
		return backfill(ctx, args[1:], w, connect)
	case "verify":
		return verify(ctx, args[1:], w, connect)
	case "status":
		return status(ctx, args[1:], w, connect)
	case "local":
		return localCmd(ctx, args[1:], w)
	case "dlq", "record":
		if len(args) < 2 {
			return usagef("%s needs a subcommand: %s", args[0], map[string]string{"dlq": "inspect or redrive", "record": "get or release"}[args[0]])
		}
		sub := args[0] + " " + args[1]
		switch sub {
		case "dlq inspect":
			return dlqInspect(ctx, args[2:], w, connect)
		case "dlq redrive":
			return dlqRedrive(ctx, args[2:], w, connect)
		case "record get":
			return recordGet(ctx, args[2:], w, connect)
		case "record release":
			return recordRelease(ctx, args[2:], w, connect)
		}
		return usagef("unknown command %q%s", sub, didYouMean(sub, []string{"dlq inspect", "dlq redrive", "record get", "record release"}))
	}
	return usagef("unknown command %q%s", args[0], didYouMean(args[0], []string{"dlq", "record", "status", "verify", "backfill", "policy", "local", "help"}))
}

// usageHint is the line after a usage error: where the command's help is.
func usageHint(args []string) string {
	if len(args) > 0 && (args[0] == "dlq" || args[0] == "record" || args[0] == "policy" || args[0] == "backfill" || args[0] == "verify" || args[0] == "status" || args[0] == "local") {
		return fmt.Sprintf("Run 'pipelinectl help %s' for its flags.", args[0])
	}
	return "Run 'pipelinectl help' for usage."
}

// didYouMean is " (did you mean X?)" for the candidate closest to got, or "" when none is
// close (an edit distance of at most 2, or a prefix).
func didYouMean(got string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(got, c)
		if strings.HasPrefix(c, got) && len(got) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
