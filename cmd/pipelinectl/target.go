package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// Output names of the reference stack (constructs/pipeline.Outputs and stacks): per
// pipeline <Pipeline>QueueUrl and <Pipeline>DeadLetterQueueUrl, and one table.
const (
	outQueueURL    = "QueueUrl"
	outDLQURL      = "DeadLetterQueueUrl"
	outTableName   = "IdempotencyTableName"
	outRecordTTL   = "RecordTTL"
	defaultMaxScan = 1000
)

// common holds the flags every command takes: where the resources are and how to reach AWS.
type common struct {
	stack, outputs, pipeline string
	queueURL, table          string
	region, profile          string
	endpoint                 string
	output                   string        // text or json (commands with --output)
	recordTTL                time.Duration // dlq commands only
	recordTTLSet             bool          // --record-ttl was given
}

// newFlags returns a flag set with the common flags; help is what -h prints.
func newFlags(name, help string, stdout io.Writer) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(stdout, help) }
	c := &common{}
	fs.StringVar(&c.stack, "stack", "", "CloudFormation stack name")
	fs.StringVar(&c.outputs, "outputs", "", "cdk deploy --outputs-file JSON")
	fs.StringVar(&c.pipeline, "pipeline", "", "pipeline name (Standard, Fifo)")
	fs.StringVar(&c.queueURL, "queue-url", "", "dead-letter queue URL override")
	fs.StringVar(&c.table, "table", "", "idempotency table override")
	fs.StringVar(&c.region, "region", "", "AWS region")
	fs.StringVar(&c.profile, "profile", "", "AWS shared config profile")
	fs.StringVar(&c.endpoint, "endpoint-url", "", "endpoint of every AWS service called")
	return fs, c
}

// parse parses args with flags and positional arguments in any order, and returns the
// positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	// The flag package prints the usage on every error; the help prints only for -h, once.
	help := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = help }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help()
				return nil, errHelp
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
				var names []string
				fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
				return nil, usagef("%s: unknown flag --%s%s", fs.Name(), strings.TrimLeft(name, "-"), didYouMean("--"+strings.TrimLeft(name, "-"), names))
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// stacksAPI is the CloudFormation call that reads a stack's outputs.
type stacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// clients are the AWS clients a command uses.
type clients struct {
	sqs *sqs.Client
	ddb *dynamodb.Client
	cfn stacksAPI
	// rest calls the services pipelinectl has no SDK client for (Lambda Invoke, Scheduler
	// GetSchedule), signed with the same configuration.
	rest *restClient
}

// connector builds the clients for the common flags (newAWS; tests may wrap it).
type connector func(ctx context.Context, c *common) (*clients, error)

// newAWS loads the SDK's default configuration (credentials chain, region, the
// AWS_ENDPOINT_URL* variables) with the flags' overrides.
func newAWS(ctx context.Context, c *common) (*clients, error) {
	if err := checkEndpoints(c.endpoint, os.Getenv); err != nil {
		return nil, err
	}
	// The SDK's own warnings (a response body not drained, a missing checksum) would come
	// before the error that explains them; the error says what went wrong.
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if c.region != "" {
		opts = append(opts, config.WithRegion(c.region))
	}
	if c.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	var pe config.SharedConfigProfileNotExistError
	if errors.As(err, &pe) {
		return nil, usagef("no AWS profile %q (from --profile or AWS_PROFILE) in the shared config files (~/.aws/config, ~/.aws/credentials, "+
			"or AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE): 'aws configure list-profiles' lists them", pe.Profile)
	}
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, usagef("no AWS region: set --region, AWS_REGION, or a region in the profile")
	}
	// LoadDefaultConfig leaves HTTPClient nil (each SDK client then makes its own) unless
	// AWS_CA_BUNDLE is set; the REST calls use the config's, so it must be there.
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = awshttp.NewBuildableClient()
	}
	// The flag is set on each client, after the SDK resolved its endpoint: set in the
	// config, AWS_ENDPOINT_URL_<SERVICE> would win over it.
	var ep *string
	if c.endpoint != "" {
		ep = aws.String(c.endpoint)
	}
	return &clients{
		rest: &restClient{cfg: cfg, endpoint: c.endpoint},
		sqs:  sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
		ddb:  dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
		cfn:  cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
	}, nil
}

// checkEndpoints refuses an endpoint without a scheme, which the SDK would otherwise take
// as a path and fail on later with an error that does not say why.
func checkEndpoints(flagValue string, getenv func(string) string) error {
	if flagValue != "" && !strings.Contains(flagValue, "://") {
		return usagef("--endpoint-url %s: give a URL with its scheme, e.g. http://%s", flagValue, flagValue)
	}
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_CLOUDFORMATION",
		"AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_SCHEDULER"} {
		if e := getenv(v); e != "" && !strings.Contains(e, "://") {
			return usagef("%s=%s: give a URL with its scheme, e.g. http://%s", v, e, e)
		}
	}
	return nil
}

// explain adds to an AWS error what to check: credentials, the endpoint, the service
// behind it.
func explain(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "get credentials") || strings.Contains(msg, "no EC2 IMDS role"):
		return fmt.Errorf("%w\nno AWS credentials: set AWS_PROFILE (after 'aws sso login' for SSO), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "+
			"against ElasticMQ or DynamoDB Local any static pair works", err)
	case strings.Contains(msg, "\ncannot reach the "): // explained already, by a callee
		return err
	case strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") || strings.Contains(msg, "i/o timeout"):
		var op *smithy.OperationError
		if !errors.As(err, &op) {
			return fmt.Errorf("%w\ncannot reach the endpoint: check --endpoint-url or the AWS_ENDPOINT_URL_<SERVICE> variables "+
				"(unset for AWS itself) and --region, and that the server is up", err)
		}
		// The variable the SDK reads for this service: its service id, upper case, spaces as _.
		v := "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(op.Service(), " ", "_"))
		return fmt.Errorf("%s\ncannot reach the %s endpoint: check %s (or --endpoint-url, or AWS_ENDPOINT_URL; unset them for AWS itself) "+
			"and --region, and that the server is up", inWordsWhole(err, op), op.Service(), v)
	case strings.Contains(msg, "DynamoDB") && (strings.Contains(msg, "invalid character") || strings.Contains(msg, "deserialization failed")):
		return fmt.Errorf("%w\nthe endpoint did not answer as DynamoDB: does AWS_ENDPOINT_URL_DYNAMODB (or --endpoint-url) point at another service, such as the SQS server?", err)
	case strings.Contains(msg, "SQS") && (strings.Contains(msg, "invalid character") || strings.Contains(msg, "deserialization failed")):
		return fmt.Errorf("%w\nthe endpoint did not answer as SQS: does AWS_ENDPOINT_URL_SQS (or --endpoint-url) point at another service?", err)
	}
	// Any other failed AWS call: what the CLI was doing, the call, and its cause in words
	// (throttled, access denied with the command that prints the policy, refused with the
	// service's reason), not the SDK's chain of attempts and request ids.
	var op *smithy.OperationError
	if errors.As(err, &op) {
		return errors.New(inWordsWhole(err, op))
	}
	return err
}

// inWordsWhole is err's message with the SDK's chain of op (operation error ..., exceeded
// maximum number of attempts, https response error ...) replaced by the call and its cause
// in words: what the CLI was doing stays, the transport's internals go.
func inWordsWhole(err error, op *smithy.OperationError) string {
	return strings.Replace(err.Error(), op.Error(), op.Service()+" "+op.Operation()+": "+inWords(op), 1)
}

// stackOutputs returns the outputs of the stack the flags name, and a description of where
// they came from; nil when neither --stack nor --outputs is set.
func (c *common) stackOutputs(ctx context.Context, cl *clients) (map[string]string, string, error) {
	if c.outputs != "" {
		b, err := os.ReadFile(c.outputs)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", usagef("--outputs %s: no such file; 'cdk deploy --outputs-file %s' writes it, or give --stack NAME to read the outputs from CloudFormation", c.outputs, c.outputs)
		}
		if err != nil {
			return nil, "", fmt.Errorf("--outputs: %w", err)
		}
		stacks, why := parseOutputsFile(b)
		if why != "" {
			return nil, "", usagef("--outputs %s: %s; 'cdk deploy --outputs-file FILE' writes {\"Stack\": {\"Output\": \"value\"}}", c.outputs, why)
		}
		names := slices.Sorted(maps.Keys(stacks))
		switch {
		case c.stack != "":
			out, ok := stacks[c.stack]
			if !ok {
				return nil, "", usagef("--outputs %s has no stack %q; it has %s", c.outputs, c.stack, strings.Join(names, ", "))
			}
			return out, fmt.Sprintf("stack %s in %s", c.stack, c.outputs), nil
		case len(names) == 1:
			return stacks[names[0]], fmt.Sprintf("stack %s in %s", names[0], c.outputs), nil
		case len(names) == 0:
			return nil, "", usagef("--outputs %s holds no stack", c.outputs)
		default:
			return nil, "", usagef("--outputs %s holds stacks %s: pick one with --stack", c.outputs, strings.Join(names, ", "))
		}
	}
	if c.stack == "" {
		return nil, "", nil
	}
	out, err := cl.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(c.stack)})
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return nil, "", fmt.Errorf("stack %s: %w (the stack's name as 'cdk list' prints it, in this account and region: --region, --profile)", c.stack, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("stack %s: %w; without CloudFormation, give the outputs as a file: --outputs FILE (cdk deploy --outputs-file FILE writes it)", c.stack, err)
	}
	if len(out.Stacks) == 0 {
		return nil, "", fmt.Errorf("stack %s: DescribeStacks returned no stack", c.stack)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m, "stack " + c.stack, nil
}

// parseOutputsFile reads the file 'cdk deploy --outputs-file' writes: outputs by stack name, each
// value a string. why says, in words, what else the file holds.
func parseOutputsFile(b []byte) (stacks map[string]map[string]string, why string) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, "the file is empty"
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, "not JSON (" + err.Error() + ")"
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("a JSON %s, not an object of stacks", jsonKind(doc))
	}
	stacks = map[string]map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(top)) {
		outs, ok := top[name].(map[string]any)
		if !ok {
			return nil, fmt.Sprintf("%q is a %s, not a stack's outputs: are these one stack's outputs without the stack's name around them?", name, jsonKind(top[name]))
		}
		stacks[name] = map[string]string{}
		for k, v := range outs {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Sprintf("output %s of stack %s is a %s, not a string", k, name, jsonKind(v))
			}
			stacks[name][k] = s
		}
	}
	return stacks, ""
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// pipelines lists the pipelines the outputs describe (the prefixes of *DeadLetterQueueUrl).
func pipelines(outputs map[string]string) []string {
	var ps []string
	for k := range outputs {
		if p, ok := strings.CutSuffix(k, outDLQURL); ok && p != "" {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// pipelineDLQ returns the pipeline's DLQ URL from the outputs, or an error that lists the
// pipelines there are.
func (c *common) pipelineDLQ(outputs map[string]string, from string) (string, error) {
	if c.pipeline == "" {
		return "", usagef("--pipeline is required with --stack or --outputs: %s has pipelines %s", from, strings.Join(pipelines(outputs), ", "))
	}
	v, ok := outputs[c.pipeline+outDLQURL]
	if ps := pipelines(outputs); !ok && len(ps) == 0 {
		return "", usagef("%s has no pipeline %q, and no pipeline at all: no output ends in %s (is it a stack of these constructs? its outputs: %s); "+
			"a pipeline's outputs come from pipeline.Outputs, or give --queue-url and --table", from, c.pipeline, outDLQURL, cmp.Or(strings.Join(slices.Sorted(maps.Keys(outputs)), ", "), "none"))
	} else if !ok {
		return "", usagef("%s has no pipeline %q (no output %s%s)%s; its pipelines: %s", from, c.pipeline, c.pipeline, outDLQURL,
			didYouMean(c.pipeline, ps), strings.Join(ps, ", "))
	}
	return v, nil
}

// dlqTarget is what the dlq commands work on.
type dlqTarget struct {
	dlqURL    string
	sourceURL string // the pipeline's queue, "" when unknown
	// recordTTL is how long the consumer keeps completed records (--record-ttl, else the
	// pipeline's RecordTTL output); 0 when unknown. ttlFrom says where it came from.
	recordTTL time.Duration
	ttlFrom   string
}

func (c *common) dlq(ctx context.Context, cl *clients) (dlqTarget, error) {
	outputs, from, err := c.stackOutputs(ctx, cl)
	if err != nil {
		return dlqTarget{}, err
	}
	var t dlqTarget
	switch {
	case c.queueURL != "":
		t.dlqURL = c.queueURL
		if outputs != nil && c.pipeline != "" {
			t.sourceURL = outputs[c.pipeline+outQueueURL]
		}
	case outputs != nil:
		if t.dlqURL, err = c.pipelineDLQ(outputs, from); err != nil {
			return dlqTarget{}, err
		}
		// Without it, redrive falls back to the DLQ's redrive-allow policy (or --to).
		t.sourceURL = outputs[c.pipeline+outQueueURL]
	}
	if t.dlqURL == "" {
		return dlqTarget{}, usagef("which dead-letter queue? Give --stack or --outputs with --pipeline, or --queue-url")
	}
	switch v, ok := outputs[c.pipeline+outRecordTTL]; {
	case c.recordTTL > 0:
		t.recordTTL, t.ttlFrom = c.recordTTL, "--record-ttl"
	case ok && c.pipeline != "":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return dlqTarget{}, fmt.Errorf("%s: output %s%s is %q, not a duration; give --record-ttl", from, c.pipeline, outRecordTTL, v)
		}
		t.recordTTL, t.ttlFrom = d, fmt.Sprintf("output %s%s of %s", c.pipeline, outRecordTTL, from)
	}
	return t, nil
}

// tableName is the idempotency table the record commands read.
func (c *common) tableName(ctx context.Context, cl *clients) (string, error) {
	if c.table != "" {
		return c.table, nil
	}
	outputs, from, err := c.stackOutputs(ctx, cl)
	if err != nil {
		return "", err
	}
	if outputs == nil {
		return "", usagef("which table? Give --stack or --outputs, or --table")
	}
	t, ok := outputs[outTableName]
	if !ok {
		return "", fmt.Errorf("%s has no output %s: give --table", from, outTableName)
	}
	return t, nil
}
