package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/backfill"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/dlq"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/health"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/localkit"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/policy"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/record"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"

	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Every usage error exits 2 with its message; every command error exits 1 with its.
func TestErrors(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	fifo := newPipe(t, true)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notJSON := write("bad.json", "not json")
	two := write("two.json", `{"A": {"StandardDeadLetterQueueUrl": "u"}, "B": {}}`)
	empty := write("empty.json", `{}`)
	other := write("other.json", `{"S": {"BucketName": "b"}}`)
	noTable := write("notable.json", `{"S": {"StandardDeadLetterQueueUrl": "u"}}`)
	noSource := write("nosource.json", `{"S": {"SDeadLetterQueueUrl": "`+p.dlqURL+`"}}`)
	badTTL := write("badttl.json", `{"S": {"SDeadLetterQueueUrl": "`+p.dlqURL+`", "SRecordTTL": "4 days"}}`)
	sk := newPipe(t, false)
	if err := ddbSrv.CreateTable(t.Context(), sk.table+"-sk", "id", "sk"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, cli.ExitUsage, "pipelinectl: no command given"},
		{[]string{"frobnicate"}, cli.ExitUsage, `unknown command "frobnicate"`},
		{[]string{"dlq"}, cli.ExitUsage, "dlq needs a subcommand: inspect or redrive"},
		{[]string{"record"}, cli.ExitUsage, "record needs a subcommand: get or release"},
		{[]string{"dlq", "purge"}, cli.ExitUsage, `unknown command "dlq purge"`},
		{[]string{"dlq inspect"}, cli.ExitUsage, `unknown command "dlq inspect"`},
		{[]string{"dlq", "inspect", "--bogus"}, cli.ExitUsage, "dlq inspect: unknown flag --bogus\nRun 'pipelinectl help dlq' for its flags.\n"},
		{[]string{"dlq", "redrive", "--pipline", "Fifo"}, cli.ExitUsage, "dlq redrive: unknown flag --pipline; did you mean --pipeline?\n"},
		{[]string{"dlq", "redrive", "-include-invalid=true", "--yess"}, cli.ExitUsage, "dlq redrive: unknown flag --yess; did you mean --yes?\n"},
		{[]string{"dlq", "inspec"}, cli.ExitUsage, `unknown command "dlq inspec"; did you mean dlq inspect?`},
		{[]string{"records", "get"}, cli.ExitUsage, `unknown command "records"; did you mean record?`},
		{[]string{"dlq", "redrive", "--rate", "0"}, cli.ExitUsage, "--rate 0: use 1 to 500 messages per second, or leave it out for no limit"},
		{[]string{"dlq", "inspect", "--output", "yaml"}, cli.ExitUsage, "--output yaml: use text or json"},
		{[]string{"verify", "--timeout", "1s"}, cli.ExitUsage, "--timeout 1s: use 5s to 30m"},
		{[]string{"verify"}, cli.ExitUsage, "verify needs the stack's outputs: give --stack or --outputs (--pipeline picks one pipeline)"},
		{[]string{"status"}, cli.ExitUsage, "status needs the stack's outputs: give --stack or --outputs (--pipeline picks one pipeline)"},
		{[]string{"status", "--outputs", "x.json", "extra"}, cli.ExitUsage, "status takes no arguments"},
		{[]string{"statsu"}, cli.ExitUsage, `unknown command "statsu"; did you mean status?`},
		{[]string{"verify", "--outputs", other}, cli.ExitUsage, "has no pipeline outputs (<Pipeline>DeadLetterQueueUrl)"},
		{[]string{"verifi"}, cli.ExitUsage, `unknown command "verifi"; did you mean verify?`},
		{append(p.args("dlq", "redrive"), "--to", "Standard"), cli.ExitUsage, "--to Standard: no queue of that name in this account and region; give the queue's URL, ARN or name (a pipeline is named with --pipeline, and its queue is the destination by default)"},
		{append(p.args("dlq", "redrive"), "--to", "sqs/x"), cli.ExitUsage, "--to sqs/x: not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), ARN or name"},
		{[]string{"dlq", "inspect", "extra"}, cli.ExitUsage, `dlq inspect takes no arguments, got ["extra"]`},
		{[]string{"dlq", "redrive", "extra"}, cli.ExitUsage, `dlq redrive takes no arguments, got ["extra"]`},
		{[]string{"dlq", "inspect", "--sample", "-1"}, cli.ExitUsage, "--sample -1: use 0 or more"},
		{[]string{"dlq", "inspect", "--max", "0"}, cli.ExitUsage, "--max 0: use 1 or more"},
		{[]string{"dlq", "redrive", "--max", "0"}, cli.ExitUsage, "--max 0: use 1 or more"},
		{[]string{"dlq", "inspect", "--hold", "1s"}, cli.ExitUsage, "--hold 1s: use between 2s and 30s"},
		{[]string{"dlq", "inspect", "--hold", "31s"}, cli.ExitUsage, "--hold 31s: use between 2s and 30s"},
		{[]string{"dlq", "redrive", "--rate", "501"}, cli.ExitUsage, "--rate 501: use 1 to 500 messages per second, or leave it out for no limit"},
		{[]string{"dlq", "redrive", "--rate", "-1"}, cli.ExitUsage, "--rate -1: use 1 to 500 messages per second, or leave it out for no limit"},
		{[]string{"dlq", "redrive", "--wait", "0s"}, cli.ExitUsage, "--wait 0s: use a positive duration"},
		{[]string{"dlq", "redrive", "--record-ttl", "-1h"}, cli.ExitUsage, "--record-ttl -1h0m0s: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (at least 1s), or leave it out to read the pipeline's RecordTTL output"},
		{[]string{"dlq", "inspect", "--record-ttl", "0s"}, cli.ExitUsage, "--record-ttl 0s: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (at least 1s)"},
		{[]string{"dlq", "inspect", "--record-ttl", "25 days"}, cli.ExitUsage, `dlq inspect: invalid value "25 days" for flag -record-ttl: want a duration such as 25d or 600h`},
		{[]string{"dlq", "redrive", "--rate", "fast"}, cli.ExitUsage, `dlq redrive: invalid value "fast" for flag -rate: want a whole number of messages a second, e.g. 50`},
		{[]string{"backfill", "--rate", "fast"}, cli.ExitUsage, `backfill: invalid value "fast" for flag -rate: want a whole number of invocations a second, e.g. 50`},
		{[]string{"dlq", "inspect", "--record-ttl", "10ms"}, cli.ExitUsage, "--record-ttl 10ms: use the consumer's IDEMPOTENCY_RECORD_TTL, e.g. 25d or 600h (at least 1s)"},
		{[]string{"dlq", "inspect", "--outputs", badTTL, "--pipeline", "S"}, cli.ExitError, "stack S in " + badTTL + `: output SRecordTTL is "4 days", not a duration; give --record-ttl`},
		{[]string{"dlq", "inspect", "--queue-url", "u", "--profile", "nope"}, cli.ExitUsage, `no AWS profile "nope" (from --profile or AWS_PROFILE) in the shared config files`},
		{[]string{"dlq", "inspect", "--queue-url", "u", "--endpoint-url", "localhost:9324"}, cli.ExitUsage, "--endpoint-url localhost:9324: give a URL with its scheme, e.g. http://localhost:9324"},
		{[]string{"dlq", "inspect", "--queue-url", "http://127.0.0.1:1/q", "--endpoint-url", "http://127.0.0.1:1"}, cli.ExitError, "queue http://127.0.0.1:1/q: SQS GetQueueAttributes: no answer from http://127.0.0.1:1 (connection refused): is the endpoint up, and the URL right?\ncannot reach the SQS endpoint: check AWS_ENDPOINT_URL_SQS (or --endpoint-url, or AWS_ENDPOINT_URL; unset them for AWS itself)"},
		{[]string{"dlq", "inspect", "--stack", "S", "--pipeline", "Standard", "--endpoint-url", "http://127.0.0.1:1"}, cli.ExitError, "stack S: CloudFormation DescribeStacks: no answer from http://127.0.0.1:1 (connection refused): is the endpoint up, and the URL right?; without CloudFormation, give the outputs as a file: --outputs FILE (cdk deploy --outputs-file FILE writes it)\ncannot reach the CloudFormation endpoint: check AWS_ENDPOINT_URL_CLOUDFORMATION"},
		{[]string{"dlq", "inspect", "--outputs", p.outputs, "--pipeline", "standard"}, cli.ExitUsage, `has no pipeline "standard" (no output standardDeadLetterQueueUrl); did you mean Standard?; its pipelines: Standard`},
		{[]string{"dlq", "inspect", "--outputs", other, "--pipeline", "Standard"}, cli.ExitUsage, `has no pipeline "Standard", and no pipeline at all: no output ends in DeadLetterQueueUrl (is it a stack of these constructs? its outputs: BucketName)`},
		{[]string{"dlq", "inspect"}, cli.ExitUsage, "which dead-letter queue? Give --stack or --outputs with --pipeline, or --queue-url"},
		{[]string{"dlq", "inspect", "--queue-url", p.dlqURL + "-nope"}, cli.ExitError, "queue " + p.dlqURL + "-nope does not exist in this account and region " +
			"(QueueDoesNotExist): check the URL (--queue-url, or the outputs it came from), --region and the SQS endpoint; a stack deleted and deployed again has new queue names\n"},
		{[]string{"local", "up", "--parameter", "RefundsTableArn"}, cli.ExitUsage, `local up: invalid value "RefundsTableArn" for flag -parameter: "RefundsTableArn": want NAME=VALUE`},
		{[]string{"local", "up", "--env", "=x"}, cli.ExitUsage, `local up: invalid value "=x" for flag -env: "=x": want NAME=VALUE`},
		{[]string{"dlq", "inspect", "--outputs", filepath.Join(dir, "absent.json")}, cli.ExitUsage, "absent.json: no such file; 'cdk deploy --outputs-file " + filepath.Join(dir, "absent.json") + "' writes it, or give --stack NAME to read the outputs from CloudFormation"},
		{[]string{"dlq", "inspect", "--outputs", notJSON}, cli.ExitUsage, "--outputs " + notJSON + ": not JSON (invalid character 'o' in literal null (expecting 'u')); 'cdk deploy --outputs-file FILE' writes {\"Stack\": {\"Output\": \"value\"}}"},
		{[]string{"dlq", "inspect", "--outputs", write("blank.json", "\n")}, cli.ExitUsage, "blank.json: the file is empty; 'cdk deploy --outputs-file FILE' writes"},
		{[]string{"dlq", "inspect", "--outputs", write("list.json", `[{"S": {}}]`)}, cli.ExitUsage, "list.json: a JSON list, not an object of stacks;"},
		{[]string{"dlq", "inspect", "--outputs", write("flat.json", `{"StandardDeadLetterQueueUrl": "u"}`)}, cli.ExitUsage,
			`flat.json: "StandardDeadLetterQueueUrl" is a string, not a stack's outputs: are these one stack's outputs without the stack's name around them?`},
		{[]string{"dlq", "inspect", "--outputs", write("number.json", `{"S": {"RecordTTL": 5}}`)}, cli.ExitUsage, "number.json: output RecordTTL of stack S is a number, not a string"},
		{[]string{"dlq", "inspect", "--outputs", two}, cli.ExitUsage, "holds stacks A, B: pick one with --stack"},
		{[]string{"dlq", "inspect", "--outputs", two, "--stack", "C"}, cli.ExitUsage, `has no stack "C"; it has A, B`},
		{[]string{"dlq", "inspect", "--outputs", empty}, cli.ExitUsage, "holds no stack"},
		{[]string{"dlq", "inspect", "--outputs", p.outputs}, cli.ExitUsage, "--pipeline is required with --stack or --outputs: stack " + p.stack + " in " + p.outputs + " has pipelines Standard"},
		{[]string{"dlq", "inspect", "--outputs", p.outputs, "--pipeline", "Fifo"}, cli.ExitUsage, `has no pipeline "Fifo" (no output FifoDeadLetterQueueUrl); its pipelines: Standard`},
		{[]string{"dlq", "redrive", "--outputs", noSource, "--pipeline", "S"}, cli.ExitUsage, "no destination: the outputs name no source queue and the DLQ's redrive-allow policy names 0 source queues (none); give --to QUEUE (its URL, ARN or name)"},
		{[]string{"dlq", "redrive", "--queue-url", p.queueURL}, cli.ExitUsage, "no destination: the outputs name no source queue and the DLQ's redrive-allow policy names 0 source queues (none); give --to QUEUE (its URL, ARN or name)"},
		{append(p.args("dlq", "redrive"), "--to", p.dlqURL), cli.ExitUsage, "the destination " + p.dlqURL + " is the DLQ itself"},
		{append(p.args("dlq", "redrive"), "--to", fifo.queueURL), cli.ExitUsage, "is standard but the destination " + fifo.queueURL + " is FIFO: redrive to a queue of the same type"},
		{[]string{"record", "get"}, cli.ExitUsage, "record get needs one KEY (or --id RAW_ID), got 0 arguments"},
		{[]string{"record", "get", "a", "b"}, cli.ExitUsage, "record get needs one KEY (or --id RAW_ID), got 2 arguments"},
		{[]string{"record", "release", "k", "--id", "x"}, cli.ExitUsage, "record release: give KEY or --id, not both"},
		{[]string{"record", "get", "--id", "x", "--tenant", "t"}, cli.ExitUsage, "record get: --id is the whole id: --tenant and --key-prefix go with KEY"},
		{[]string{"record", "get", "k", "--sort-key", "s"}, cli.ExitUsage, "record get: --sort-key goes with --id; with KEY, give --tenant"},
		{[]string{"record", "get", "k", "--table", "t"}, cli.ExitUsage, "record get: whose KEY? Give --pipeline (the key prefix is its output <Pipeline>KeyPrefix, else the pipeline's name) or --key-prefix, or --id"},
		{[]string{"record", "get", "--id", "x"}, cli.ExitUsage, "which table? Give --stack or --outputs, or --table"},
		{[]string{"record", "get", "--id", "x", "--outputs", noTable}, cli.ExitUsage, "stack S in " + noTable + " has no output IdempotencyTableName: give --table"},
		{[]string{"record", "get", "k", "--pipeline", "Standard", "--outputs", noTable}, cli.ExitUsage,
			"stack S in " + noTable + " has no output StandardIdempotencyTableName or IdempotencyTableName: give --table"},
		{[]string{"record", "get", "--id", "x", "--table", "absent-table"}, cli.ExitError, "table absent-table: "},
		{append(p.args("record", "get", "k"), "--tenant", "t"), cli.ExitUsage, `record get: --tenant "t", but table ` + p.table + " has no sort key (no tenants)"},
		{[]string{"record", "get", "k", "--key-prefix", "a#b", "--table", sk.table}, cli.ExitError, `Config.KeyPrefix = "a#b" contains "#"`},
		{[]string{"record", "get", "k", "--key-prefix", "P", "--table", sk.table + "-sk"}, cli.ExitError, "Request.Tenant is empty: with Config.SortKeyAttr set, every message needs a tenant"},
	} {
		code, out, errOut := ctl(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("pipelinectl %q: exit %d, stderr %q; want exit %d with %q (stdout %q)", tc.args, code, errOut, tc.code, tc.want, out)
		}
		if strings.Contains(errOut, "operation error") {
			t.Errorf("pipelinectl %q: stderr %q has the SDK's chain; want the thing and the cause in words", tc.args, errOut)
		}
	}
}

// The errors of a shell whose environment is wrong: no credentials, an endpoint variable
// without a scheme, DynamoDB's endpoint pointing at the SQS server.
func TestEnvironmentErrors(t *testing.T) {
	p := newPipe(t, false)
	// An instance metadata service that refuses, as one does with no role for the process.
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer imds.Close()
	const lookedIn = "no AWS credentials: looked in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), " +
		"the shared config and credentials files (AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, else ~/.aws), and "
	const setThem = "; set AWS_PROFILE (after 'aws sso login' for SSO), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; against ElasticMQ or DynamoDB Local any static pair works"
	for _, tc := range []struct {
		name string
		env  []string // NAME, VALUE, ...
		args []string
		code int
		want string
	}{
		{"no credentials, IMDS off", []string{"AWS_ACCESS_KEY_ID", "", "AWS_SECRET_ACCESS_KEY", ""}, p.args("dlq", "inspect"), cli.ExitError,
			"SQS GetQueueAttributes: " + lookedIn + "not the EC2 instance metadata service (AWS_EC2_METADATA_DISABLED=true)" + setThem},
		{"no credentials, IMDS refuses", []string{"AWS_ACCESS_KEY_ID", "", "AWS_SECRET_ACCESS_KEY", "", "AWS_EC2_METADATA_DISABLED", "false",
			"AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL}, p.args("dlq", "inspect"), cli.ExitError,
			"SQS GetQueueAttributes: " + lookedIn + "the EC2 instance metadata service, which refused (HTTP 403: no instance role, or IMDS closed to this process)" + setThem},
		{"no scheme", []string{"AWS_ENDPOINT_URL_SQS", "localhost:9324"}, p.args("dlq", "inspect"), cli.ExitUsage,
			"AWS_ENDPOINT_URL_SQS=localhost:9324: give a URL with its scheme, e.g. http://localhost:9324"},
		{"DynamoDB endpoint at the SQS server", []string{"AWS_ENDPOINT_URL_DYNAMODB", sqsSrv.Endpoint()}, p.args("record", "get", "k"), cli.ExitError,
			"DynamoDB DescribeTable: the DynamoDB endpoint answered as another service (its reply is not DynamoDB's): does AWS_ENDPOINT_URL_DYNAMODB (or --endpoint-url) point at another service, such as the SQS server?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < len(tc.env); i += 2 {
				t.Setenv(tc.env[i], tc.env[i+1])
			}
			code, _, errOut := ctl(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", code, errOut, tc.code, tc.want)
			}
			if strings.Contains(errOut, "operation error") {
				t.Errorf("stderr %q has the SDK's chain; want the call and its cause in words", errOut)
			}
			if strings.Contains(errOut, "WARN") {
				t.Errorf("the SDK's warnings reach the operator: %q", errOut)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for args, want := range map[string]string{
		"help":                 "pipelinectl operates the idempotent SQS pipelines of a deployed stack.",
		"--help":               "pipelinectl operates the idempotent SQS pipelines of a deployed stack.",
		"help dlq":             "pipelinectl dlq redrive: move dead-lettered messages back once their cause is fixed.",
		"help record":          "pipelinectl record release KEY: free a stuck INPROGRESS record",
		"dlq inspect -h":       "Read-only, best effort",
		"record release -h":    "--force              (release) release a live lock",
		"dlq redrive --help":   "pipelinectl dlq redrive: move dead-lettered messages back",
		"help policy":          "pipelinectl policy: the least-privilege IAM policy",
		"policy -h":            "--access read|operate",
		"local install --help": "pipelinectl local install\n",
		"local -h":             "pipelinectl local install\n",
		"local up -h":          "pipelinectl local install\n",
	} {
		code, out, errOut := ctl(t, strings.Fields(args)...)
		if code != cli.ExitOK || !strings.Contains(out, want) || errOut != "" {
			t.Errorf("pipelinectl %s: exit %d, stderr %q, stdout lacks %q", args, code, errOut, want)
		}
		if first := strings.SplitN(out, "\n", 2)[0]; strings.Count(out, first) != 1 {
			t.Errorf("pipelinectl %s prints its help %d times", args, strings.Count(out, first))
		}
	}
	// A command's -h is its own help, not its family's.
	for args, other := range map[string]string{"dlq redrive --help": "pipelinectl dlq inspect:", "dlq inspect -h": "pipelinectl dlq redrive:"} {
		if _, out, _ := ctl(t, strings.Fields(args)...); strings.Contains(out, other) {
			t.Errorf("pipelinectl %s prints another command's help too (%q)", args, other)
		}
	}
}

// No region anywhere is a usage error naming the ways to set one.
func TestNoRegion(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	code, _, errOut := ctl(t, "dlq", "inspect", "--queue-url", "http://x")
	if code != cli.ExitUsage || !strings.Contains(errOut, "no AWS region: set --region, AWS_REGION, or a region in the profile") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// --endpoint-url wins over AWS_ENDPOINT_URL_SQS (which points nowhere here).
func TestEndpointFlag(t *testing.T) {
	p := newPipe(t, false)
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:1")
	if code, _, errOut := ctl(t, "dlq", "inspect", "--queue-url", p.dlqURL); code != cli.ExitError || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("without the flag: exit %d, %q; want the variable's endpoint refused", code, errOut)
	}
	out := mustCtl(t, "dlq", "inspect", "--queue-url", p.dlqURL, "--endpoint-url", sqsSrv.Endpoint())
	wantContains(t, "inspect", out, "DLQ       "+p.dlqURL+" (standard)", "scanned   0")
}

// fakeStacks is CloudFormation's DescribeStacks for one stack.
type fakeStacks struct {
	name    string
	outputs map[string]string
}

func (f fakeStacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != f.name {
		return nil, fmt.Errorf("ValidationError: Stack with id %s does not exist", aws.ToString(in.StackName))
	}
	s := cfntypes.Stack{StackName: aws.String(f.name)}
	for k, v := range f.outputs {
		s.Outputs = append(s.Outputs, cfntypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{s}}, nil
}

// --stack reads the outputs from CloudFormation.
func TestStackOutputs(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	connect := func(ctx context.Context, c *cli.Common) (*cli.Clients, error) {
		cl, err := cli.NewAWS(ctx, c)
		if err == nil {
			cl.CloudFormation = fakeStacks{name: "Pipeline", outputs: map[string]string{
				"StandardQueueUrl": p.queueURL, "StandardDeadLetterQueueUrl": p.dlqURL, "IdempotencyTableName": p.table,
			}}
		}
		return cl, err
	}
	var out bytes.Buffer
	if err := dispatch(t.Context(), []string{"dlq", "redrive", "--stack", "Pipeline", "--pipeline", "Standard"}, cli.Streams{Out: &out, Err: &out}, connect); err != nil {
		t.Fatal(err)
	}
	wantContains(t, "redrive", out.String(), "destination  "+p.queueURL, "the DLQ is empty: nothing to move")
	err := dispatch(t.Context(), []string{"record", "get", "k", "--stack", "Other", "--pipeline", "Standard"}, cli.Streams{Out: &out, Err: &out}, connect)
	if err == nil || err.Error() != "stack Other: ValidationError: Stack with id Other does not exist (the stack's name as 'cdk list' prints it, in this account and region: --region, --profile)" {
		t.Errorf("unknown stack: %v", err)
	}
}

// Without the outputs, redrive finds the source in the DLQ's redrive-allow policy. ElasticMQ
// keeps no such policy, so its two steps are tested apart: the policy's source ARNs
// (internal/cli's TestParseRedriveAllow), and here the URL of an ARN.
func TestRedriveAllowPolicySource(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	src, err := cli.GetQueue(t.Context(), sqsSrv.Client(), p.queueURL)
	if err != nil {
		t.Fatal(err)
	}
	if url, err := dlq.URLOfARN(t.Context(), sqsSrv.Client(), src.ARN); err != nil || url != p.queueURL {
		t.Errorf("URLOfARN(%s) = %q, %v; want %s", src.ARN, url, err, p.queueURL)
	}
	if _, err := dlq.URLOfARN(t.Context(), sqsSrv.Client(), "arn:aws:sns:us-east-1:1:topic"); err == nil || err.Error() != `"arn:aws:sns:us-east-1:1:topic" is not an SQS queue ARN` {
		t.Errorf("URLOfARN(SNS ARN) = %v", err)
	}
}

// A move task that outlasts --wait goes on, and the command says how to follow it.
func TestMoveTaskOutlastsWait(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	for i := range 20 { // 20 s at 1 per second: a wide margin over --wait 1s
		if _, err := sqsSrv.Client().SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(p.dlqURL), MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := ctl(t, append(p.args("dlq", "redrive", "--yes", "--rate", "1"), "--wait", "1s")...)
	if code != cli.ExitNotDone || !strings.Contains(errOut, "not done: the move task is still RUNNING after --wait 1s; the move task goes on in SQS (") ||
		!strings.Contains(errOut, "rerun the command to wait for it, follow it with aws sqs list-message-move-tasks --source-arn ") ||
		!strings.Contains(out, "NOT DONE     the move task is still RUNNING") {
		t.Errorf("move task outlasting --wait: exit %d, %q\n%s", code, errOut, out)
	}
}

// What a scan cannot see is said: messages past --max, and on a FIFO queue the messages
// behind the ones a receive handed out in their group.
func TestInspectPartialScan(t *testing.T) {
	t.Parallel()
	fill := func(p *pipe, n int) {
		for i := range n {
			in := &sqs.SendMessageInput{QueueUrl: aws.String(p.dlqURL), MessageBody: aws.String(fmt.Sprint(i))}
			if p.fifo {
				in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String(fmt.Sprint(i))
			}
			if _, err := sqsSrv.Client().SendMessage(t.Context(), in); err != nil {
				t.Fatal(err)
			}
		}
	}
	std, fifo := newPipe(t, false), newPipe(t, true)
	fill(std, 5)
	fill(fifo, 12)
	out := mustCtl(t, std.args("dlq", "inspect", "--max", "3", "--sample", "0")...)
	wantContains(t, "inspect --max 3", out, "(stopped at --max 3)")
	out = mustCtl(t, fifo.args("dlq", "inspect", "--sample", "0")...)
	wantContains(t, "FIFO inspect", out, "12 visible", "scanned   10 in ", "(FIFO: a receive hands out no message behind one in flight in its group)", "FIFO groups scanned: g (10)")
	if q := queueCounts(t, fifo.dlqURL); q != [2]int64{12, 0} {
		t.Errorf("FIFO DLQ after inspect = %v, want [12 0]", q)
	}
}

// fillDLQ puts messages straight in a DLQ: per group (FIFO; "" on standard), bodies in
// order; a body starting with "bad" carries the consumer's DeadLetterReason.
func fillDLQ(t *testing.T, p *pipe, group string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(p.dlqURL), MessageBody: aws.String(b)}
		if strings.HasPrefix(b, "bad") {
			in.MessageAttributes = map[string]sqstypes.MessageAttributeValue{"DeadLetterReason": {DataType: aws.String("String"), StringValue: aws.String("invalid_input: test")}}
		}
		if p.fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(group), aws.String(fmt.Sprint(seq.Add(1)))
		} else if group != "" {
			in.MessageGroupId = aws.String(group) // a fair queue's tenant
		}
		if _, err := sqsSrv.Client().SendMessage(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
}

// On FIFO the dry run and inspect count the messages behind a bad one in its group as
// staying, and name the group: what they predict is what moves.
func TestFifoPlanIsExact(t *testing.T) {
	t.Parallel()
	p := newPipe(t, true)
	fillDLQ(t, p, "A", "a1", "a2", "bad-a3", "a4", "a5")
	fillDLQ(t, p, "B", "b1", "b2", "b3")
	fillDLQ(t, p, "C", "bad-c1", "c2")
	out := mustCtl(t, p.args("dlq", "redrive")...)
	wantContains(t, "dry run", out, "scanned      10: 5 to move, 5 to leave (2 bad input, 0 older than the record TTL, 3 behind those in their FIFO group)",
		"FIFO group A stays from message ", "(invalid_input, bad input): 2 scanned behind it stay too",
		"FIFO group C stays from message ", "(invalid_input, bad input): 1 scanned behind it stay too")
	out = mustCtl(t, p.args("dlq", "inspect", "--sample", "0")...)
	wantContains(t, "inspect", out, "redrive policy  8 ", "5 move; 3 stay: behind a message that stays in their FIFO group",
		"invalid_input   2 ", "stays (bad input; --include-invalid moves it)")
	out = mustCtl(t, p.args("dlq", "inspect", "--output", "json")...)
	var rep dlq.InspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("inspect --output json: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, m := range rep.Messages {
		verdicts[m.Body] = m.Redrive
	}
	if verdicts["a2"] != "moves" || verdicts["bad-a3"] != "stays: bad input" || !strings.HasPrefix(verdicts["a4"], "stays: behind ") || len(rep.BlockedGroups) != 2 {
		t.Errorf("inspect --output json verdicts %v, blocked %v", verdicts, rep.BlockedGroups)
	}
	code, out, _ := ctl(t, p.args("dlq", "redrive", "--yes", "--output", "json")...)
	var s dlq.RedriveSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != cli.ExitLeft {
		t.Fatalf("redrive --output json: exit %d, %v\n%s", code, err, out)
	}
	if s.Moved != 5 || s.LeftVisible == nil || *s.LeftVisible != 5 || s.Kept["badInput"] != 2 || s.Kept["behindInFifoGroup"] != 3 || !s.Done {
		t.Errorf("redrive summary %+v: want 5 moved, 5 left (2 bad input, 3 behind)", s)
	}
}

// On FIFO, a group held back by a bad message may hold more than the run received (a receive
// hands out no message behind one in flight): the closing lines give the left line's count of
// what stays, one number printed thrice, not the kept ones alone.
func TestFifoClosingLineCountsWhatStays(t *testing.T) {
	t.Parallel()
	p := newPipe(t, true)
	group := []string{"bad-g01"}
	for i := 2; i <= 15; i++ {
		group = append(group, fmt.Sprintf("g%02d", i))
	}
	fillDLQ(t, p, "G", group...)
	fillDLQ(t, p, "H", "h1")
	code, out, errOut := ctl(t, p.args("dlq", "redrive", "--yes")...)
	if code != cli.ExitLeft {
		t.Fatalf("redrive: exit %d, want %d\n%s%s", code, cli.ExitLeft, out, errOut)
	}
	wantContains(t, "redrive", out+errOut, "moved        1\n", "left         in the DLQ: 15 visible, 0 in flight",
		"done, left   everything to move has moved; 15 messages stay in the DLQ by rule (the left line's count): the ",
		"and every message behind them in their FIFO groups (exit 4)",
		"pipelinectl: done, but 15 messages stay in the DLQ by rule (the left line's count): the summary's \"kept\" says why")
}

// A fair queue's message (a standard queue, its tenant in MessageGroupId) keeps its tenant
// through a redrive: a consumer whose tenant is the group would refuse it without one. A bad
// message stays, so the run moves by receive, send and delete rather than a move task.
func TestRedriveKeepsAFairQueueTenant(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	fillDLQ(t, p, "tenant-7", "m1", "bad-1")
	ctlWant(t, cli.ExitLeft, p.args("dlq", "redrive", "--yes")...)
	got := drainAll(t, p.queueURL)
	if len(got) != 1 || got[0] != (drained{"m1", "tenant-7"}) {
		t.Errorf("the queue got %+v, want m1 with its tenant-7", got)
	}
}

// A dry run whose scan stopped at --max, with nothing to leave behind among what it saw,
// says why it would not use a move task: it names the limit, not messages to leave behind.
func TestRedrivePlanSaysWhyNoMoveTask(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	fillDLQ(t, p, "", "m1", "m2", "m3")
	out := mustCtl(t, append(p.args("dlq", "redrive"), "--max", "2")...)
	want := "method       receive, send, delete (the scan stopped at --max 2: a move task would also move messages the plan did not check)\n"
	if !strings.Contains(out, want) || strings.Contains(out, "messages to leave behind") {
		t.Errorf("dry run with --max 2 of 3: want %q", want)
	}
}

// Ctrl-C during inspect gives back every message it holds at once.
func TestInspectInterrupted(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	for i := range 30 {
		fillDLQ(t, p, "", fmt.Sprint("m", i))
	}
	// Ctrl-C (a cancelled context, as the signal handler's) while the scan waits on its last,
	// empty receive: the receive that follows the one that handed out the 30th message. An
	// event, not a time: a deadline could fall on a slow first call instead, on a busy machine.
	proxy, err := ddbproxy.New(sqsSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var handed atomic.Int64
	proxy.Observe = func(c ddbproxy.Call, r ddbproxy.Reply) {
		if c.Op == "ReceiveMessage" {
			handed.Add(int64(bytes.Count(r.Body, []byte(`"MessageId"`))))
		}
	}
	proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if c.Op == "ReceiveMessage" && handed.Load() >= 30 {
			cancel()
		}
		return ddbproxy.Fault{}
	}
	var out, errOut bytes.Buffer
	code := run(ctx, append(p.args("dlq", "inspect"), "--endpoint-url", proxy.URL), &out, &errOut)
	if code != cli.ExitNotDone || !strings.Contains(errOut.String(), "not done: interrupted after scanning ") || !strings.Contains(errOut.String(), "all of them are visible again") {
		t.Errorf("interrupted inspect: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if q := queueCounts(t, p.dlqURL); q != [2]int64{30, 0} {
		t.Errorf("DLQ right after the interrupted inspect = %v, want [30 0]: nothing left hidden", q)
	}
}

// An inspect whose receives get answers that break off (the third receive's on, after 20
// messages) ends as an interrupted one does: exit 3, what it scanned reported and visible
// again, and the receive whose answer was lost named with when its messages come back.
func TestInspectWhoseReceiveFailsForGood(t *testing.T) {
	t.Parallel()
	p := newPipe(t, false)
	for i := range 30 {
		fillDLQ(t, p, "", fmt.Sprint("m", i))
	}
	proxy, err := ddbproxy.New(sqsSrv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var receives atomic.Int64
	proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		return ddbproxy.Fault{Truncate: c.Op == "ReceiveMessage" && receives.Add(1) > 2}
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(t.Context(), append(p.args("dlq", "inspect"), "--endpoint-url", proxy.URL), &out, &errOut)
	t.Logf("exit %d\n%s%s", code, out.String(), errOut.String())
	if code != cli.ExitNotDone {
		t.Errorf("exit %d, want %d", code, cli.ExitNotDone)
	}
	want := "not done: a receive failed after scanning 20 messages: the answer from " + proxy.URL + " was cut off while it came (HTTP 200, then unexpected EOF)"
	if !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), "; all of them are visible again; 3 receives got no whole answer, each may hide up to 10 messages until ") ||
		!strings.Contains(out.String(), "scanned   20 in ") || !strings.Contains(out.String(), "all visible again (a receive failed)") {
		t.Errorf("want %q, the lost receives and their time, and the 20 scanned reported", want)
	}
	until := regexp.MustCompile(`until (\d\d:\d\d:\d\dZ): inspect again after that`).FindStringSubmatch(errOut.String())
	if until == nil {
		t.Fatal("no time the hidden messages come back")
	}
	// The scan's hold (30 s) from when the lost receive was sent: between the run's start and
	// its end, plus the hold.
	clock, _ := time.Parse("15:04:05Z", until[1])
	lo, hi := start.UTC().Add(dlq.RedriveHold).Truncate(time.Second), time.Now().UTC().Add(dlq.RedriveHold)
	if at := time.Date(lo.Year(), lo.Month(), lo.Day(), clock.Hour(), clock.Minute(), clock.Second(), 0, time.UTC); at.Before(lo) || at.After(hi) {
		t.Errorf("hidden until %s, want between %s and %s", until[1], lo.Format(time.TimeOnly), hi.Format(time.TimeOnly))
	}
	if q := queueCounts(t, p.dlqURL); q[1] != 10 {
		t.Errorf("DLQ after the inspect = %v, want 10 in flight: the one lost batch a standard queue's receive hands out, the 20 scanned given back", q)
	}
}

// One table of exit codes: the code's constants, pipelinectl help and docs/operator-cli.md
// say the same, and the docs carry every help text as the command prints it.
func TestExitCodesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/operator-cli.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	codes := []int{cli.ExitOK, cli.ExitError, cli.ExitUsage, cli.ExitNotDone, cli.ExitLeft}
	for i, c := range codes {
		if c != i {
			t.Fatalf("exit codes %v: want 0 to %d in order", codes, len(codes)-1)
		}
		if !strings.Contains(doc, fmt.Sprintf("\n| %d | ", c)) {
			t.Errorf("docs/operator-cli.md's exit code table has no row for %d", c)
		}
		if !strings.Contains(usage, fmt.Sprintf("\n  %d  ", c)) {
			t.Errorf("pipelinectl help has no exit status line for %d", c)
		}
	}
	if strings.Contains(doc, fmt.Sprintf("\n| %d | ", len(codes))) || strings.Contains(usage, fmt.Sprintf("\n  %d  ", len(codes))) {
		t.Errorf("the docs or the help name exit code %d, which pipelinectl does not use", len(codes))
	}
	for _, h := range []struct{ cmd, text string }{{"help", usage}, {"help dlq", dlq.Usage}, {"help record", record.Usage}, {"help policy", policy.Usage},
		{"help backfill", backfill.Usage}, {"help verify", health.VerifyUsage}, {"help status", health.StatusUsage}, {"help local", localkit.Usage}} {
		if !strings.Contains(doc, h.text) {
			t.Errorf("docs/operator-cli.md does not carry 'pipelinectl %s' as the command prints it: copy it from there", h.cmd)
		}
	}
}
