// Command cdk is the rooted app's CDK app, in cdk/ beside the functions, in the one module
// whose go.mod is at the repository's root, as many teams lay a Go CDK app out (cd cdk &&
// cdk synth). Each function is fed by a queue of its own:
//   - Graviton: a GoFunction for arm64 (CDK's bundling builds it);
//   - SenderArm64, SenderX86: the Makefile's zips, one per architecture (make first);
//   - TrimmedArm64, TrimmedX86: the same built with -trimpath, which keeps no directory;
//   - Legacy: a GoFunction on aws-sdk-go v1 that reads a parameter, a secret named by a
//     plain string, the secret the stack creates (by its ARN), and calls a partner's API over
//     HTTPS.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Rooted"), nil)

	graviton := awscdklambdagoalpha.NewGoFunction(stack, jsii.String("Graviton"), &awscdklambdagoalpha.GoFunctionProps{
		Entry:        jsii.String("../functions/sender"),
		Architecture: awslambda.Architecture_ARM_64(),
	})
	feed(stack, "GravitonQueue", graviton)

	token := awssecretsmanager.NewSecret(stack, jsii.String("Token"), &awssecretsmanager.SecretProps{
		SecretStringValue: awscdk.SecretValue_UnsafePlainText(jsii.String("from the stack")),
	})
	legacy := awscdklambdagoalpha.NewGoFunction(stack, jsii.String("Legacy"), &awscdklambdagoalpha.GoFunctionProps{
		Entry: jsii.String("../functions/legacy"),
		Environment: &map[string]*string{
			"GREETING_PARAMETER": jsii.String("/rooted/greeting"),
			"API_KEY_SECRET":     jsii.String("rooted/api-key"),
			"TOKEN_SECRET_ARN":   token.SecretArn(),
		},
	})
	token.GrantRead(legacy, nil)
	feed(stack, "LegacyQueue", legacy)

	for _, fn := range []struct {
		id, zip string
		arch    awslambda.Architecture
	}{
		{"SenderArm64", "../bin/sender-arm64.zip", awslambda.Architecture_ARM_64()},
		{"SenderX86", "../bin/sender-x86_64.zip", awslambda.Architecture_X86_64()},
		{"TrimmedArm64", "../bin/trimmed-arm64.zip", awslambda.Architecture_ARM_64()},
		{"TrimmedX86", "../bin/trimmed-x86_64.zip", awslambda.Architecture_X86_64()},
	} {
		f := awslambda.NewFunction(stack, jsii.String(fn.id), &awslambda.FunctionProps{
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Handler:      jsii.String("bootstrap"),
			Architecture: fn.arch,
			Code:         awslambda.Code_FromAsset(jsii.String(fn.zip), nil),
		})
		feed(stack, fn.id+"Queue", f)
	}
	app.Synth(nil)
}

// feed gives fn a queue of its own, with a DLQ.
func feed(stack awscdk.Stack, id string, fn awslambda.IFunction) {
	dlq := awssqs.NewQueue(stack, jsii.String(id+"DLQ"), nil)
	q := awssqs.NewQueue(stack, jsii.String(id), &awssqs.QueueProps{
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(3)},
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, nil))
}
