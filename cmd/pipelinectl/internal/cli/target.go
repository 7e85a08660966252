package cli

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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"
	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
)

// Output names (package contract): per pipeline <Pipeline>QueueUrl, <Pipeline>DeadLetterQueueUrl,
// its consumer's, dispatcher's, table and composite alarm (pipeline.Outputs); a table or a
// monitoring that pipelines share has its own (table.Outputs, monitoring.Outputs).
const (
	OutQueueURL      = contract.OutQueueURL
	OutDLQURL        = contract.OutDLQURL
	OutConsumer      = contract.OutConsumerFunction
	OutKeyPrefix     = contract.OutKeyPrefix
	OutDispatcher    = contract.OutDispatcherFunction
	OutSchedule      = contract.OutSchedule
	OutScheduleGroup = contract.OutScheduleGroup
	OutTableName     = contract.OutTableName
	// OutUnhealthy names a composite "pipeline unhealthy" alarm (in ALARM while any
	// paging alarm of its monitoring is): status and verify read its children.
	OutUnhealthy = contract.OutUnhealthy
)

// PipelineOutput is pipeline p's own output name (<p><name>) when the outputs have it, else
// the stack's (name, from table.Outputs or monitoring.Outputs), else "".
func PipelineOutput(outputs map[string]string, p, name string) string {
	if v := outputs[p+name]; p != "" && v != "" {
		return v
	}
	return outputs[name]
}

// KeyPrefix is pipeline p's consumer's key prefix: its output <p>KeyPrefix, else p (the
// reference stack's consumers are keyed by their pipeline's name).
func KeyPrefix(outputs map[string]string, p string) string {
	return cmp.Or(outputs[p+OutKeyPrefix], p)
}

// Composites are the composite alarms the outputs name for the pipelines ps: the stack's
// (monitoring.Outputs) and each pipeline's own (pipeline.Outputs), once each, sorted.
func Composites(outputs map[string]string, ps []string) []string {
	var names []string
	for _, p := range append([]string{""}, ps...) {
		if v := outputs[p+OutUnhealthy]; v != "" && !slices.Contains(names, v) {
			names = append(names, v)
		}
	}
	slices.Sort(names)
	return names
}

// Common holds the flags every command takes: where the resources are and how to reach AWS.
type Common struct {
	Stack, Outputs, Pipeline string
	queueURL, table          string
	Region, profile          string
	endpoint                 string
	Output                   string        // text or json (commands with --output)
	read                     *stackOutputs // StackOutputs' answer, read once a command
}

// stackOutputs is what StackOutputs read.
type stackOutputs struct {
	outputs map[string]string
	from    string
	err     error
}

// NewFlags returns a flag set with the common flags; help is what -h prints.
func NewFlags(name, help string, stdout io.Writer) (*flag.FlagSet, *Common) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(stdout, help) }
	c := &Common{}
	fs.StringVar(&c.Stack, "stack", "", "CloudFormation stack name")
	fs.StringVar(&c.Outputs, "outputs", "", "cdk deploy --outputs-file JSON")
	fs.StringVar(&c.Pipeline, "pipeline", "", "pipeline name (Standard, Fifo)")
	fs.StringVar(&c.queueURL, "queue-url", "", "dead-letter queue URL override")
	fs.StringVar(&c.table, "table", "", "idempotency table override")
	fs.StringVar(&c.Region, "region", "", "AWS region")
	fs.StringVar(&c.profile, "profile", "", "AWS shared config profile")
	fs.StringVar(&c.endpoint, "endpoint-url", "", "endpoint of every AWS service called")
	return fs, c
}

// Parse parses args with flags and positional arguments in any order, and returns the
// positional ones.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	// The flag package prints the usage on every error; the help prints only for -h, once.
	help := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = help }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help()
				return nil, ErrHelp
			}
			if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
				var names []string
				fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
				return nil, Usagef("%s: unknown flag --%s%s", fs.Name(), strings.TrimLeft(name, "-"), DidYouMean("--"+strings.TrimLeft(name, "-"), names))
			}
			return nil, Usagef("%s: %v", fs.Name(), err)
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

// StacksAPI is the CloudFormation call that reads a stack's outputs.
type StacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// Clients are the AWS clients a command uses.
type Clients struct {
	SQS            *sqs.Client
	DynamoDB       *dynamodb.Client
	CloudFormation StacksAPI
	// REST calls the services pipelinectl has no SDK client for (Lambda Invoke, Scheduler
	// GetSchedule), signed with the same configuration.
	REST *RESTClient
}

// Connector builds the clients for the common flags (NewAWS; tests may wrap it).
type Connector func(ctx context.Context, c *Common) (*Clients, error)

// NewAWS loads the SDK's default configuration (credentials chain, region, the
// AWS_ENDPOINT_URL* variables) with the flags' overrides.
func NewAWS(ctx context.Context, c *Common) (*Clients, error) {
	if err := checkEndpoints(c.endpoint, os.Getenv); err != nil {
		return nil, err
	}
	// The SDK's own warnings (a response body not drained, a missing checksum) would come
	// before the error that explains them; the error says what went wrong.
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	var pe config.SharedConfigProfileNotExistError
	if errors.As(err, &pe) {
		return nil, Usagef("no AWS profile %q (from --profile or AWS_PROFILE) in the shared config files (~/.aws/config, ~/.aws/credentials, "+
			"or AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE): 'aws configure list-profiles' lists them", pe.Profile)
	}
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, Usagef("no AWS region: set --region, AWS_REGION, or a region in the profile")
	}
	// LoadDefaultConfig leaves HTTPClient nil (each SDK client then makes its own) unless
	// AWS_CA_BUNDLE is set; the REST calls use the config's, so it must be there. sdkhttp
	// keeps an answer from being cut off by a connection this process closed ("use of closed
	// network connection": the SDK closes a request body its transport may still read).
	cfg.HTTPClient = sdkhttp.Wrap(cfg.HTTPClient)
	// The flag is set on each client, after the SDK resolved its endpoint: set in the
	// config, AWS_ENDPOINT_URL_<SERVICE> would win over it.
	var ep *string
	if c.endpoint != "" {
		ep = aws.String(c.endpoint)
	}
	return &Clients{
		REST:           &RESTClient{Cfg: cfg, Endpoint: c.endpoint},
		SQS:            sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
		DynamoDB:       dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
		CloudFormation: cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = cmp.Or(ep, o.BaseEndpoint) }),
	}, nil
}

// checkEndpoints refuses an endpoint without a scheme, which the SDK would otherwise take
// as a path and fail on later with an error that does not say why.
func checkEndpoints(flagValue string, getenv func(string) string) error {
	if flagValue != "" && !strings.Contains(flagValue, "://") {
		return Usagef("--endpoint-url %s: give a URL with its scheme, e.g. http://%s", flagValue, flagValue)
	}
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_CLOUDFORMATION",
		"AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_SCHEDULER"} {
		if e := getenv(v); e != "" && !strings.Contains(e, "://") {
			return Usagef("%s=%s: give a URL with its scheme, e.g. http://%s", v, e, e)
		}
	}
	return nil
}

// StackOutputs returns the outputs of the stack the flags name, and a description of where
// they came from; nil when neither --stack nor --outputs is set. They are read once: a
// command that asks again (record: the key prefix, then the table) gets the same answer.
func (c *Common) StackOutputs(ctx context.Context, cl *Clients) (map[string]string, string, error) {
	if c.read == nil {
		outputs, from, err := c.readStackOutputs(ctx, cl)
		c.read = &stackOutputs{outputs, from, err}
	}
	return c.read.outputs, c.read.from, c.read.err
}

// readStackOutputs reads the outputs: the --outputs file, else CloudFormation's DescribeStacks.
func (c *Common) readStackOutputs(ctx context.Context, cl *Clients) (map[string]string, string, error) {
	if c.Outputs != "" {
		b, err := os.ReadFile(c.Outputs)
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", Usagef("--outputs %s: no such file; 'cdk deploy --outputs-file %s' writes it, or give --stack NAME to read the outputs from CloudFormation", c.Outputs, c.Outputs)
		}
		if err != nil {
			return nil, "", fmt.Errorf("--outputs: %w", err)
		}
		stacks, why := parseOutputsFile(b)
		if why != "" {
			return nil, "", Usagef("--outputs %s: %s; 'cdk deploy --outputs-file FILE' writes {\"Stack\": {\"Output\": \"value\"}}", c.Outputs, why)
		}
		names := slices.Sorted(maps.Keys(stacks))
		switch {
		case c.Stack != "":
			out, ok := stacks[c.Stack]
			if !ok {
				return nil, "", Usagef("--outputs %s has no stack %q; it has %s", c.Outputs, c.Stack, strings.Join(names, ", "))
			}
			return out, fmt.Sprintf("stack %s in %s", c.Stack, c.Outputs), nil
		case len(names) == 1:
			return stacks[names[0]], fmt.Sprintf("stack %s in %s", names[0], c.Outputs), nil
		case len(names) == 0:
			return nil, "", Usagef("--outputs %s holds no stack", c.Outputs)
		default:
			return nil, "", Usagef("--outputs %s holds stacks %s: pick one with --stack", c.Outputs, strings.Join(names, ", "))
		}
	}
	if c.Stack == "" {
		return nil, "", nil
	}
	out, err := cl.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(c.Stack)})
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return nil, "", fmt.Errorf("stack %s: %w (the stack's name as 'cdk list' prints it, in this account and region: --region, --profile)", c.Stack, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("stack %s: %w; without CloudFormation, give the outputs as a file: --outputs FILE (cdk deploy --outputs-file FILE writes it)", c.Stack, err)
	}
	if len(out.Stacks) == 0 {
		return nil, "", fmt.Errorf("stack %s: DescribeStacks returned no stack", c.Stack)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m, "stack " + c.Stack, nil
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
		if p, ok := strings.CutSuffix(k, OutDLQURL); ok && p != "" {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// PipelineDLQ returns the pipeline's DLQ URL from the outputs, or an error that lists the
// pipelines there are.
func (c *Common) PipelineDLQ(outputs map[string]string, from string) (string, error) {
	if c.Pipeline == "" {
		return "", Usagef("--pipeline is required with --stack or --outputs: %s has pipelines %s", from, strings.Join(pipelines(outputs), ", "))
	}
	v, ok := outputs[c.Pipeline+OutDLQURL]
	if ps := pipelines(outputs); !ok && len(ps) == 0 {
		return "", Usagef("%s has no pipeline %q, and no pipeline at all: no output ends in %s (is it a stack of these constructs? its outputs: %s); "+
			"a pipeline's outputs come from pipeline.Outputs, or give --queue-url and --table", from, c.Pipeline, OutDLQURL, cmp.Or(strings.Join(slices.Sorted(maps.Keys(outputs)), ", "), "none"))
	} else if !ok {
		return "", Usagef("%s has no pipeline %q (no output %s%s)%s; its pipelines: %s", from, c.Pipeline, c.Pipeline, OutDLQURL,
			DidYouMean(c.Pipeline, ps), strings.Join(ps, ", "))
	}
	return v, nil
}

// StackPipelines connects, reads the stack's outputs and returns the pipelines a command of
// the whole stack works on: every pipeline the outputs name, or --pipeline's.
func (c *Common) StackPipelines(ctx context.Context, connect Connector, cmd string) (*Clients, map[string]string, []string, error) {
	if c.Stack == "" && c.Outputs == "" {
		return nil, nil, nil, Usagef("%s needs the stack's outputs: give --stack or --outputs (--pipeline picks one pipeline)", cmd)
	}
	cl, err := connect(ctx, c)
	if err != nil {
		return nil, nil, nil, err
	}
	outputs, from, err := c.StackOutputs(ctx, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	names := pipelines(outputs)
	if c.Pipeline != "" {
		if _, err := c.PipelineDLQ(outputs, from); err != nil {
			return nil, nil, nil, err
		}
		names = []string{c.Pipeline}
	}
	if len(names) == 0 {
		return nil, nil, nil, Usagef("%s has no pipeline outputs (<Pipeline>DeadLetterQueueUrl)", from)
	}
	return cl, outputs, names, nil
}

// QueueURL is --queue-url: the dead-letter queue the dlq commands work on, instead of the
// outputs' ("" when not given).
func (c *Common) QueueURL() string { return c.queueURL }

// TableName is the idempotency table the record commands read.
func (c *Common) TableName(ctx context.Context, cl *Clients) (string, error) {
	if c.table != "" {
		return c.table, nil
	}
	outputs, from, err := c.StackOutputs(ctx, cl)
	if err != nil {
		return "", err
	}
	if outputs == nil {
		return "", Usagef("which table? Give --stack or --outputs, or --table")
	}
	t := PipelineOutput(outputs, c.Pipeline, OutTableName)
	if tables := pipelineTables(outputs); t == "" && c.Pipeline == "" && len(tables) == 1 {
		t = tables[0] // every pipeline of the stack writes the one table
	}
	switch {
	case t == "" && c.Pipeline != "":
		return "", Usagef("%s has no output %s%s or %s: give --table", from, c.Pipeline, OutTableName, OutTableName)
	case t == "":
		return "", Usagef("%s has no output %s: give --table", from, OutTableName)
	}
	return t, nil
}

// pipelineTables are the distinct tables the stack's pipelines name (<Pipeline>IdempotencyTableName).
func pipelineTables(outputs map[string]string) []string {
	var ts []string
	for _, p := range pipelines(outputs) {
		if v := outputs[p+OutTableName]; v != "" && !slices.Contains(ts, v) {
			ts = append(ts, v)
		}
	}
	return ts
}

// TableConfig is the idempotency configuration of records with the key prefix in table,
// with the table's key attributes as DescribeTable gives them.
func TableConfig(ctx context.Context, cl *Clients, table, prefix string) (idempotency.Config, error) {
	desc, err := cl.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return idempotency.Config{}, fmt.Errorf("table %s: %w", table, err)
	}
	cfg := idempotency.Config{TableName: table, KeyPrefix: prefix}
	for _, k := range desc.Table.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			cfg.PartitionKeyAttr = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			cfg.SortKeyAttr = aws.ToString(k.AttributeName)
		}
	}
	return cfg, nil
}
