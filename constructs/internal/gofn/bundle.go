package gofn

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdklambdagoalpha/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// newGoFunction is awscdklambdagoalpha.NewGoFunction with a bundling failure (the user's
// main does not compile) turned into a *validate.Error naming the construct, the entry and
// the compiler's first error, where CDK would panic with "Failed to bundle asset" and a
// stack trace, the compiler's own output scrolled away above it.
func newGoFunction(scope constructs.Construct, id string, props *awscdklambdagoalpha.GoFunctionProps, p *Props) awscdklambdagoalpha.GoFunction {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "Failed to bundle asset") {
			panic(r)
		}
		kind := p.Kind
		if kind == "" {
			kind = "function"
		}
		problems := validate.New(kind, *scope.Node().Path())
		problems.Add(p.Prop("Entry"), p.Entry, "it does not build: "+firstBuildError(p)+"; fix the main package and synth again")
		problems.Check()
	}()
	return awscdklambdagoalpha.NewGoFunction(scope, jsii.String(id), props)
}

// firstBuildError builds p's entry again as bundling does (Linux, the function's
// architecture, no cgo) and returns the compiler's first error line, or what went wrong.
func firstBuildError(p *Props) string {
	entry, err := filepath.Abs(p.Entry)
	if err != nil {
		return err.Error()
	}
	arch := p.goarch()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", os.DevNull, "-tags", "lambda.norpc", ".")
	cmd.Dir = entry // go finds the module upwards from it, as bundling's build does
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err == nil {
		return "bundling failed, but go build of it succeeds here: see the bundling output above"
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line
		}
	}
	return "go build failed without output"
}
