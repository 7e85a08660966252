// Package gofn holds what the consumer and dispatcher constructs share about their bundled Go
// Lambda functions: the build (arm64, provided.al2023, CGO off, the Makefile's
// GO_LAMBDA_FLAGS), where the function sources are found, an explicit log group with a
// retention, and an explicit role that may write to that log group and nothing else until
// the construct grants more. Constructs validate Props with Validate, then call New.
//
// The function mains live in this module (functions/consumer, functions/dispatcher). Their
// directories are derived from this package's location at build time, so a CDK app that
// imports the constructs from the module cache bundles the mains from the cache too. An app
// built with -trimpath loses that location; DefaultPaths then asks the go command where the
// module is (see paths.go), and only when that fails must the app set Entry and ModuleDir.
package gofn

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/internal/checkov"
	"github.com/idempotent-sqs/pipeline/constructs/internal/logkey"
	"github.com/idempotent-sqs/pipeline/constructs/internal/nag"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// Defaults shared by both functions.
const (
	DefaultLogRetention = awslogs.RetentionDays_ONE_MONTH
	MinTimeout          = time.Second
	MaxTimeout          = 15 * time.Minute
	MinMemorySize       = 128
	MaxMemorySize       = 10240
)

// BuildFlags are the go build flags of every bundled function. The Makefile's
// GO_LAMBDA_FLAGS must be the same string (a test compares them): `make build` produces the
// binaries that are measured and tested locally, and they must be the ones deployed.
// lambda.norpc drops the legacy RPC mode that provided.al2023 never uses.
var BuildFlags = []string{"-trimpath", "-tags lambda.norpc", `-ldflags "-s -w"`}

// goBuildFlagsWarning is the id of the warning GoFunction adds whenever GoBuildFlags is set
// (flags reach a shell). Ours are the constants above, never user input, so the warning is
// acknowledged rather than left for every user of the constructs to wade through.
const goBuildFlagsWarning = "@aws-cdk/aws-lambda-go-alpha:goBuildFlagsSecurityWarning"

// Props describe one function. Zero values take the defaults noted.
type Props struct {
	// Kind is the construct's kind for errors (e.g. "IdempotentConsumer"). Default
	// "function".
	Kind string
	// Main is the directory of the Lambda main under functions/ ("consumer", "dispatcher");
	// it names the default Entry.
	Main string
	// Description of the function.
	Description string

	// NoDLQReason says why a function dead-letter queue does not apply to this function:
	// the reason on the cdk-nag LambdaDLQ suppressions (Serverless, NIST, HIPAA).
	NoDLQReason string

	// Asynchronous invocation settings (the dispatcher); zero values leave Lambda's defaults.
	OnFailure     awslambda.IDestination
	RetryAttempts *int
	MaxEventAge   time.Duration

	// Options are the construct's Function prop as FromProps gave them, with the
	// construct's defaults of Timeout and MemorySize applied; the construct replaces
	// Environment with the function's complete environment (see Environment). Validate fills
	// in the defaults of Entry, ModuleDir, Architecture, LogRetention and LogRemovalPolicy.
	function.Options
	// Given says which prop the user set each option through, for the problems' names.
	Given Given
}

// Function is what New built.
type Function struct {
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// ValidTimeout reports whether d is a function timeout Lambda takes: whole seconds from
// MinTimeout to MaxTimeout.
func ValidTimeout(d time.Duration) bool {
	return d >= MinTimeout && d <= MaxTimeout && d%time.Second == 0
}

// Validate records every problem with p in problems and fills in the defaults of Entry,
// ModuleDir and LogRetention. The construct passes prop names as its users spell them.
func (p *Props) Validate(problems *validate.Problems) {
	if !ValidTimeout(p.Timeout) {
		problems.Add(p.Prop("Timeout"), p.Timeout, "use whole seconds from 1s to 15m0s (Lambda's limits)")
	}
	if p.MemorySize < MinMemorySize || p.MemorySize > MaxMemorySize {
		problems.Add(p.Prop("MemorySize"), p.MemorySize, fmt.Sprintf("use %d to %d MB (Lambda's limits)", MinMemorySize, MaxMemorySize))
	}
	if p.MaxEventAge != 0 && (p.MaxEventAge < time.Minute || p.MaxEventAge > 6*time.Hour || p.MaxEventAge%time.Second != 0) {
		problems.Add("AsyncMaxEventAge", p.MaxEventAge, "use whole seconds from 1m0s to 6h0m0s (Lambda's asynchronous invocation limits)")
	}
	if p.RetryAttempts != nil && (*p.RetryAttempts < 0 || *p.RetryAttempts > 2) {
		problems.Add("AsyncRetryAttempts", *p.RetryAttempts, "use 0, 1 or 2 (Lambda's asynchronous invocation limits)")
	}
	p.Given.report(problems)
	p.validateOptions(problems)
	if p.LogRetention == "" {
		p.LogRetention = DefaultLogRetention
	}
	if p.LogRemovalPolicy == "" {
		p.LogRemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}

	if p.Entry == "" {
		entry, root, err := DefaultPaths(p.Main)
		if errors.Is(err, errVendored) {
			lib := roleLibrary[p.Main]
			problems.Addf(p.Prop("Entry"), "cannot find the %s function's source: %v. Set Entry to your own main package in your module "+
				"(package main whose func main calls %s.Start, as %s/functions/%s/main.go does; it and functions/%s are then vendored, "+
				"and bundling builds them from vendor/), or synth with GOFLAGS=-mod=mod so the go command uses the module cache",
				p.Main, err, lib, modulePath(), p.Main, lib)
			return
		}
		if err != nil {
			problems.Addf(p.Prop("Entry"), "cannot find the %s function's source (%v); set Entry to the directory of your %s main package "+
				"(e.g. $(go list -m -f '{{.Dir}}' %s)/functions/%s) and ModuleDir to the directory of the go.mod it builds with",
				p.Main, err, p.Main, modulePath(), p.Main)
			return
		}
		p.Entry = entry
		if p.ModuleDir == "" {
			p.ModuleDir = root
		}
	}
	if validate.Unresolved(p.Entry) || validate.Unresolved(p.ModuleDir) {
		problems.Addf(p.Prop("Entry"), "Entry and ModuleDir cannot be tokens: the function is built from them at synth; give local paths")
		return
	}
	if st, err := os.Stat(p.Entry); err != nil || !st.IsDir() {
		problems.Add(p.Prop("Entry"), p.Entry, "set it to the directory of a Go main package")
	} else if problem := checkEntry(p.Entry, p.Main, p.goarch()); problem != "" {
		problems.Add(p.Prop("Entry"), p.Entry, problem)
	}
	if p.ModuleDir != "" {
		if _, err := os.Stat(filepath.Join(p.ModuleDir, "go.mod")); err != nil {
			problems.Add(p.Prop("ModuleDir"), p.ModuleDir, "set it to the directory that holds the go.mod Entry builds with")
		}
	}
}

// vpcActions are the EC2 actions of the AWS managed AWSLambdaVPCAccessExecutionRole policy.
var vpcActions = []string{
	"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
	"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
}

// MaxLayers is Lambda's limit of layers per function.
const MaxLayers = 5

// New builds the log group, the role and the function in scope. The function's id is
// "Resource" (the construct's primary child), the role "ServiceRole", the log group
// "LogGroup". Call Validate first.
func New(scope constructs.Construct, p Props) *Function {
	logGroup, role := newLogGroupAndRole(scope, p)
	fn := newGoFunction(scope, "Resource", functionProps(p, logGroup, role), &p)
	addSource(fn, p)
	awscdk.Annotations_Of(scope).AcknowledgeWarning(jsii.String(goBuildFlagsWarning),
		jsii.String("the build flags are constants of constructs/internal/gofn, never user input"))
	recordExceptions(p, fn, role, logGroup)
	return &Function{Function: fn, Role: role, LogGroup: logGroup}
}

// newLogGroupAndRole makes the function's log group and its execution role, which may write
// to that log group alone (and, in a VPC, manage the function's network interfaces).
func newLogGroupAndRole(scope constructs.Construct, p Props) (awslogs.LogGroup, awsiam.Role) {
	lgProps := &awslogs.LogGroupProps{
		Retention:     p.LogRetention,
		RemovalPolicy: p.LogRemovalPolicy,
	}
	if p.LogGroupEncryptionKey != nil {
		lgProps.EncryptionKey = p.LogGroupEncryptionKey
	}
	logGroup := awslogs.NewLogGroup(scope, jsii.String("LogGroup"), lgProps)
	if p.LogGroupEncryptionKey != nil && !logkey.Allow(logGroup, p.LogGroupEncryptionKey) {
		awscdk.Annotations_Of(scope).AddWarningV2(jsii.String("@idempotent-sqs/pipeline:log-group-key-policy"),
			jsii.String("LogGroupEncryptionKey is an imported key: "+logkey.Requirement))
	}
	// An explicit role instead of the default one: the default attaches the AWS managed
	// AWSLambdaBasicExecutionRole (logs:* on every log group), which AwsSolutions-IAM4 flags
	// and which is wider than writing to this one log group.
	role := awsiam.NewRole(scope, jsii.String("ServiceRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of " + *scope.Node().Path()),
	})
	logGroup.GrantWrite(role)
	if p.Vpc != nil {
		// A function in a VPC needs its execution role to manage its network interfaces.
		// The function would attach the AWS managed AWSLambdaVPCAccessExecutionRole policy
		// to a role of its own making, not to this one; these are that policy's EC2 actions.
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(vpcActions...),
			Resources: jsii.Strings("*"),
		}))
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("a function in a VPC creates, describes and deletes its network interfaces; Lambda calls these EC2 actions " +
				"before the interfaces exist, so they cannot be scoped to resources (the AWS managed AWSLambdaVPCAccessExecutionRole uses * too)"),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	return logGroup, role
}

// functionProps are the GoFunction's props from p: runtime, build, environment, network.
func functionProps(p Props, logGroup awslogs.LogGroup, role awsiam.Role) *awscdklambdagoalpha.GoFunctionProps {
	tracing := awslambda.Tracing_ACTIVE
	if p.DisableTracing {
		tracing = awslambda.Tracing_DISABLED
	}
	env := make(map[string]*string, len(p.Environment))
	for k, v := range p.Environment {
		env[k] = jsii.String(v)
	}
	props := &awscdklambdagoalpha.GoFunctionProps{
		Entry: jsii.String(p.Entry),
		// Bundling sets GOARCH from the architecture (arm64 or amd64).
		Architecture: p.Architecture,
		// GoFunction's default runtime is PROVIDED_AL2 (checked in aws-lambda-go-alpha
		// 2.265.0's function.js); AL2023 is the current OS-only runtime.
		Runtime:     awslambda.Runtime_PROVIDED_AL2023(),
		Timeout:     awscdk.Duration_Seconds(jsii.Number(p.Timeout.Seconds())),
		MemorySize:  jsii.Number(float64(p.MemorySize)),
		Environment: &env,
		LogGroup:    logGroup,
		Role:        role,
		Tracing:     tracing,
		Bundling: &awscdklambdagoalpha.BundlingOptions{
			CgoEnabled:   jsii.Bool(false),
			GoBuildFlags: jsii.Strings(BuildFlags...),
		},
		OnFailure: p.OnFailure,
	}
	if p.ModuleDir != "" {
		// A path to go.mod, not its directory: Bundling takes dirname(moduleDir) as the
		// project root, so a directory would make the build run one level too high.
		props.ModuleDir = jsii.String(filepath.Join(p.ModuleDir, "go.mod"))
	}
	if p.Description != "" {
		props.Description = jsii.String(p.Description)
	}
	if p.RetryAttempts != nil {
		props.RetryAttempts = jsii.Number(float64(*p.RetryAttempts))
	}
	if p.MaxEventAge != 0 {
		props.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(p.MaxEventAge.Seconds()))
	}
	if p.Vpc != nil {
		props.Vpc = p.Vpc
		props.VpcSubnets = p.VpcSubnets
		if len(p.SecurityGroups) > 0 {
			props.SecurityGroups = &p.SecurityGroups
		}
	}
	if len(p.Layers) > 0 {
		props.Layers = &p.Layers
	}
	if p.ReservedConcurrentExecutions > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(float64(p.ReservedConcurrentExecutions))
	}
	return props
}

// recordExceptions records, for cdk-nag and checkov, each rule the function does not meet
// and why, only where the reason holds.
func recordExceptions(p Props, fn awslambda.Function, role awsiam.Role, logGroup awslogs.LogGroup) {
	if !p.DisableTracing {
		// Tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords to the role's
		// default policy. Both actions only support Resource "*" (X-Ray has no resource-level
		// permissions for them), so that is the one wildcard to accept, on this role only.
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("X-Ray active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions, so Resource must be *"),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	// Each skip and suppression only where its reason holds: a function with reserved
	// concurrency, in a VPC, or logging under a customer managed key is checked as usual.
	skips := []checkov.Skip{checkov.FunctionNoDLQ, checkov.FunctionPlainEnvironment}
	if p.ReservedConcurrentExecutions == 0 {
		skips = append(skips, checkov.FunctionNoReservedConcurrency)
		nag.Suppress(fn, false, whyNoReservedConcurrency, nag.IDs("LambdaConcurrency", nag.NIST, nag.HIPAA)...)
	}
	if p.Vpc == nil {
		skips = append(skips, checkov.FunctionNoVPC)
		nag.Suppress(fn, false, whyNoVPC, nag.IDs("LambdaInsideVPC", nag.Compliance...)...)
	}
	if p.NoDLQReason != "" {
		nag.Suppress(fn, false, p.NoDLQReason, nag.IDs("LambdaDLQ", nag.Serverless, nag.NIST, nag.HIPAA)...)
	}
	checkov.Add(fn, skips...)
	if p.LogGroupEncryptionKey == nil {
		checkov.Add(logGroup, checkov.LogGroupServiceKey)
		nag.Suppress(logGroup, false, whyLogsServiceKey, nag.IDs("CloudWatchLogGroupEncrypted", nag.Compliance...)...)
	}
	// The role's grants are its DefaultPolicy, an AWS::IAM::Policy attached to this role alone
	// (it exists: the log group grant above is its first statement).
	nag.SuppressRolePolicy(role, WhyRolePolicy, nag.IDs("IAMNoInlinePolicy", nag.Compliance...)...)
	if p.Vpc != nil {
		checkov.Add(role.Node().FindChild(jsii.String("DefaultPolicy")), checkov.NetworkInterfaceActions)
	}
}

// addSource records where the function's source is, as cloud assembly metadata on its
// AWS::Lambda::Function (the manifest, not the template: the template stays the same on
// every machine): package local builds the function from it for the machine it runs on.
func addSource(fn awslambda.Function, p Props) {
	src := cfn.Source{Entry: absPath(p.Entry), Role: p.Main}
	if p.ModuleDir != "" {
		src.ModuleDir = absPath(p.ModuleDir)
	}
	data := map[string]any{"entry": src.Entry, "role": src.Role}
	if src.ModuleDir != "" {
		data["moduleDir"] = src.ModuleDir
	}
	fn.Node().DefaultChild().Node().AddMetadata(jsii.String(cfn.SourceMetadata), data, nil)
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Reasons of the compliance packs' suppressions on every function, written for a reviewer.
const (
	whyNoReservedConcurrency = "no reserved concurrency by default: reserving takes capacity from the account's pool and fails the deploy " +
		"in accounts whose unreserved concurrency would drop below 100; the SQS event source's MaximumConcurrency or maximum pollers (the consumer) and one " +
		"scheduled run per period (the dispatcher) bound what the function uses; set Function.ReservedConcurrentExecutions (the hardened profile does)"
	whyNoVPC = "outside a VPC by default: the function calls only the DynamoDB and SQS APIs, over TLS with SigV4 and its least-privilege role, " +
		"and reaches nothing in a private network; a VPC adds interface endpoints at a monthly cost without changing what it can reach; " +
		"set Function.Vpc (the hardened profile does, with the endpoints it needs)"
	whyLogsServiceKey = "CloudWatch Logs encrypts every log group at rest (AES-256) with a key it manages; the log lines hold message ids, " +
		"idempotency keys and outcomes, never bodies; a customer managed key adds key-level access control and audit at $1 a month plus " +
		"requests: set Function.LogGroupEncryptionKey (the hardened profile does)"
	// WhyRolePolicy is the reason on the IAMNoInlinePolicy suppressions of a role's
	// DefaultPolicy, where CDK writes the role's grants (constructs/dispatcher's schedule role
	// uses it too). The rule's rationale is what managed policies offer: reuse, versions and
	// rollback; the reason says where this policy gets the last two and why it wants no reuse.
	WhyRolePolicy = "CDK writes the role's grants as this AWS::IAM::Policy (its DefaultPolicy), attached to that one role; its " +
		"statements name this stack's resources wherever the service supports resource-level permissions (docs/review.md lists each " +
		"one), and the policy is versioned and rolled back with the stack's template; a customer managed policy would hold the same " +
		"statements and could also be attached to other principals, which least privilege avoids"
)

// envName is Lambda's rule for environment variable names.
var envName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)

// lambdaReserved are the variables the Lambda runtime sets itself; a function cannot set them.
var lambdaReserved = map[string]bool{
	"_HANDLER": true, "_X_AMZN_TRACE_ID": true, "AWS_DEFAULT_REGION": true, "AWS_REGION": true,
	"AWS_EXECUTION_ENV": true, "AWS_LAMBDA_FUNCTION_NAME": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true,
	"AWS_LAMBDA_FUNCTION_VERSION": true, "AWS_LAMBDA_INITIALIZATION_TYPE": true,
	"AWS_LAMBDA_LOG_GROUP_NAME": true, "AWS_LAMBDA_LOG_STREAM_NAME": true, "AWS_ACCESS_KEY": true,
	"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"AWS_LAMBDA_RUNTIME_API": true, "LAMBDA_TASK_ROOT": true, "LAMBDA_RUNTIME_DIR": true,
}

// Environment merges a function's variables. owned are the variables the construct derives
// from its props (the contract with the function main): extra may not set them, because a
// second source for the same setting would silently win over the prop. prop is the name
// the problems give extra (p.Prop("Environment")). defaults are tunables
// the construct sets explicitly and extra may override. Every name in extra must be a valid,
// non-reserved Lambda variable name.
func Environment(problems *validate.Problems, prop string, owned, defaults, extra map[string]string) map[string]string {
	env := make(map[string]string, len(owned)+len(defaults)+len(extra))
	for k, v := range defaults {
		env[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		switch {
		case isOwned(owned, k):
			problems.Addf(prop, "%s is set by the construct from its props; set the prop instead of the variable", k)
		case lambdaReserved[k]:
			problems.Addf(prop, "%s is reserved by the Lambda runtime; remove it", k)
		case !envName.MatchString(k):
			problems.Addf(prop, "%q is not a valid variable name; use a letter followed by letters, digits or _", k)
		default:
			env[k] = extra[k]
		}
	}
	for k, v := range owned {
		if v != "" {
			env[k] = v
		}
	}
	return env
}

// isOwned reports whether the construct owns k, also when it leaves k unset (an optional
// setting that is off is still the construct's to set).
func isOwned(owned map[string]string, k string) bool {
	_, ok := owned[k]
	return ok
}

// goarch is the GOARCH bundling builds the function for.
func (p *Props) goarch() string {
	if p.Architecture != nil && *p.Architecture.Name() == *awslambda.Architecture_X86_64().Name() {
		return "amd64"
	}
	return "arm64"
}
