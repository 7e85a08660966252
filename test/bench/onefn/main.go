// Command onefn is the smallest CDK app that builds like the pipeline: one stack, one
// GoFunction (the consumer's code) bundled as constructs/internal/gofn bundles it (arm64,
// provided.al2023, CGO off, -trimpath -tags lambda.norpc -ldflags "-s -w"), without cdk-nag.
// test/bench/devloop.sh synthesizes it beside the full stack: the ratio of the two is the
// developer-loop figure: how much slower the full synth is than the smallest (goal <= 1.5x).
//
//	cd test/bench/onefn && ../../../node_modules/.bin/cdk synth --quiet -o "$(mktemp -d)"
package main

import (
	"path/filepath"
	"runtime"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("OneFunction"), nil)
	addFunction(stack, root)
	app.Synth(nil)
}

func addFunction(stack awscdk.Stack, root string) {
	awscdklambdagoalpha.NewGoFunction(stack, jsii.String("Fn"), &awscdklambdagoalpha.GoFunctionProps{
		Entry:        jsii.String(filepath.Join(root, "functions", "consumer")),
		ModuleDir:    jsii.String(filepath.Join(root, "go.mod")),
		Architecture: awslambda.Architecture_ARM_64(),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Bundling: &awscdklambdagoalpha.BundlingOptions{
			CgoEnabled:   jsii.Bool(false),
			GoBuildFlags: jsii.Strings("-trimpath", "-tags lambda.norpc", `-ldflags "-s -w"`),
		},
	})
}
