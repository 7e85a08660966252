// Package function holds Options, the Lambda settings of a bundled Go function that the
// consumer and dispatcher constructs take as one prop (their Function field) and pass to
// the function unchanged. A setting Lambda gains is added here once and both constructs
// offer it.
//
//	consumer.NewIdempotentConsumer(stack, "Orders", &consumer.IdempotentConsumerProps{
//		Queue: q, Table: t,
//		Function: function.Options{Timeout: time.Minute, MemorySize: 512},
//	})
//
// Each construct validates the options at synth with its own rules on top (the consumer's
// Timeout against the queue's visibility timeout, for one) and documents them on its
// Function field; an error names the prop as Function.<field> (or by its deprecated
// top-level name, where the construct still has one and the user set that).
package function

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
)

// Options are a bundled Go function's Lambda settings. Every zero value takes the default
// in its comment, or the construct's where the construct names one.
type Options struct {
	// Entry is the directory of the function's Go main package, built at synth with the
	// constructs' build flags for Architecture. Default: the construct's own main of this
	// module (found in the module cache when another app imports the constructs). Cannot be
	// a token.
	Entry string
	// ModuleDir is the directory holding the go.mod Entry builds with. Default: this
	// module's root when Entry is defaulted, else found by searching upwards from Entry.
	ModuleDir string

	// Timeout of the function: whole seconds from 1s to 15m. Default: the construct's
	// (30s for the consumer, 60s for the dispatcher). Cannot be a token.
	Timeout time.Duration
	// MemorySize in MB, 128 to 10240. Default 256. Cannot be a token: it sizes the Go
	// runtime (GOMEMLIMIT) at synth.
	MemorySize int
	// Architecture is awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64();
	// the function is built for it. Default arm64.
	Architecture awslambda.Architecture
	// Environment adds variables (your code's own settings) or overrides the tunables the
	// construct names. Setting a variable the construct owns is a validation error. Values
	// may be tokens. Default none.
	Environment map[string]string
	// Layers added to the function, at most 5 (Lambda's limit), e.g. a Lambda extension.
	// Default none.
	Layers []awslambda.ILayerVersion

	// Vpc runs the function in a VPC. Its subnets must still reach the AWS services the
	// function calls (NAT gateway or VPC endpoints); the construct grants the EC2 actions
	// Lambda needs for the function's network interfaces. Default: no VPC.
	Vpc awsec2.IVpc
	// VpcSubnets selects the subnets of Vpc. Requires Vpc. Default: Vpc's private subnets.
	VpcSubnets *awsec2.SubnetSelection
	// SecurityGroups of the function. Requires Vpc. Default: one new group allowing all
	// outbound traffic.
	SecurityGroups []awsec2.ISecurityGroup

	// ReservedConcurrentExecutions reserves that many concurrent executions for the
	// function, which also caps it. Default 0: none reserved. Cannot be a token.
	ReservedConcurrentExecutions int

	// LogRetention of the function's log group. Default one month.
	LogRetention awslogs.RetentionDays
	// LogRemovalPolicy of the log group. Default RETAIN: logs often matter most after the
	// stack that wrote them is gone (incident review); retention still expires them.
	LogRemovalPolicy awscdk.RemovalPolicy
	// LogGroupEncryptionKey is a customer managed key for the log group. A key of this app
	// gets a policy statement that lets CloudWatch Logs use it for this log group only; an
	// imported key must allow that already (a synth warning says so). Default nil:
	// CloudWatch Logs' own encryption.
	LogGroupEncryptionKey awskms.IKey
	// DisableTracing turns X-Ray active tracing off. Default false (tracing on).
	DisableTracing bool
}
