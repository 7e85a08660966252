package validate

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

func TestProblemsCollectsEveryProblemAndFailsOnce(t *testing.T) {
	p := New("ProcessingQueue", "Orders")
	if err := p.Err(); err != nil {
		t.Fatalf("no problems recorded, got %v", err)
	}
	p.Add("MaxReceiveCount", 0, "use a value from 1 to 1000")
	p.Addf("VisibilityTimeout", "%s is shorter than 6x the consumer timeout", "1m0s")

	err := p.Err()
	var verr *Error
	func() {
		defer func() { verr, _ = AsError(recover()) }()
		p.Check()
	}()
	if verr == nil || len(verr.Problems) != 2 {
		t.Fatalf("Check must panic with both problems, got %#v", verr)
	}
	want := "ProcessingQueue \"Orders\": invalid props:\n  - MaxReceiveCount: got 0; use a value from 1 to 1000\n" +
		"  - VisibilityTimeout: 1m0s is shorter than 6x the consumer timeout"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant:\n%s", err, want)
	}
}

func TestAsErrorIgnoresOtherPanics(t *testing.T) {
	for _, r := range []any{nil, "boom", errors.ErrUnsupported} {
		if _, ok := AsError(r); ok {
			t.Errorf("AsError(%v) = ok, want not a validation error", r)
		}
	}
}

// invalid panics the way a construct with one bad prop does.
func invalid() {
	p := New("ProcessingQueue", "App-prod/Orders/Queue")
	p.Add("MaxReceiveCount", 0, "use a value from 1 to 1000")
	p.Check()
}

// stubExit makes ExitOnInvalidProps report into a buffer and record the status instead of
// ending the test binary.
func stubExit(t *testing.T) (out *strings.Builder, code *int) {
	t.Helper()
	out, code = &strings.Builder{}, new(int)
	*code = -1
	oldExit, oldStderr := exit, stderr
	exit, stderr = func(c int) { *code = c }, out
	t.Cleanup(func() { exit, stderr = oldExit, oldStderr })
	return out, code
}

func TestExitOnInvalidPropsPrintsTheErrorAndExits1(t *testing.T) {
	out, code := stubExit(t)
	func() {
		defer ExitOnInvalidProps()
		invalid()
	}()
	want := "\nProcessingQueue \"App-prod/Orders/Queue\": invalid props:\n  - MaxReceiveCount: got 0; use a value from 1 to 1000\n\n"
	if *code != 1 || out.String() != want {
		t.Fatalf("exit status %d, stderr %q; want 1 and %q", *code, out, want)
	}
}

func TestExitOnInvalidPropsLetsOtherPanicsThrough(t *testing.T) {
	out, code := stubExit(t)
	var got any
	func() {
		defer func() { got = recover() }()
		defer ExitOnInvalidProps()
		panic("boom")
	}()
	if got != "boom" || *code != -1 || out.Len() != 0 {
		t.Fatalf("panic %v, exit %d, stderr %q; want the panic unchanged and no exit", got, *code, out)
	}
}

func TestExitOnInvalidPropsWithoutPanicDoesNothing(t *testing.T) {
	out, code := stubExit(t)
	func() {
		defer ExitOnInvalidProps()
	}()
	if *code != -1 || out.Len() != 0 {
		t.Fatalf("exit %d, stderr %q; want neither", *code, out)
	}
}

// The real os.Exit, in a child process: status 1, the message, and no Go stack trace.
func TestExitOnInvalidPropsInAProcess(t *testing.T) {
	if os.Getenv("VALIDATE_EXIT_CHILD") == "1" {
		defer ExitOnInvalidProps()
		invalid()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExitOnInvalidPropsInAProcess$")
	cmd.Env = append(os.Environ(), "VALIDATE_EXIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), `ProcessingQueue "App-prod/Orders/Queue": invalid props:`) {
		t.Errorf("child output lacks the error:\n%s", out)
	}
	if strings.Contains(string(out), "goroutine") || strings.Contains(string(out), "panic:") {
		t.Errorf("child printed a stack trace:\n%s", out)
	}
}

// PathOf must predict the path the constructs library gives the node, including its
// replacement of "/" in an id, at the root, under a stack and deeper.
func TestPathOfMatchesTheNodePath(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("App-prod"), nil)
	parent := constructs.NewConstruct(stack, jsii.String("Orders"))
	for _, tc := range []struct {
		scope constructs.Construct
		id    string
	}{{app, "Root"}, {stack, "Queue"}, {parent, "Queue"}, {parent, "a/b"}} {
		want := *constructs.NewConstruct(tc.scope, jsii.String(tc.id)).Node().Path()
		if got := PathOf(tc.scope, tc.id); got != want {
			t.Errorf("PathOf(%s, %q) = %q, node path %q", *tc.scope.Node().Path(), tc.id, got, want)
		}
	}
	if got, want := NewIn("ProcessingQueue", parent, "DLQ").construct, `ProcessingQueue "App-prod/Orders/DLQ"`; got != want {
		t.Errorf("NewIn names %s, want %s", got, want)
	}
}

// A CfnParameter's number converted to a Go int, int64, *int or time.Duration, as a user
// passing param.ValueAsNumber() to an int prop does, is reported as a token, naming the prop
// and the escape hatch; a real number, however wrong, is reported as itself.
func TestNumberTokensAreNamedAsTokens(t *testing.T) {
	token := *awscdk.Token_AsNumber(map[string]any{"Ref": "MemoryParam"})
	n := int(token)
	for _, got := range []any{n, int64(token), &n, time.Duration(token), time.Duration(token * float64(time.Second))} {
		if !NumberToken(got) {
			t.Errorf("%T %v from a token is not recognised as one", got, got)
		}
	}
	for _, got := range []any{0, -1, int64(10241), time.Duration(-1), "x", (*int)(nil)} {
		if NumberToken(got) {
			t.Errorf("%T %v is taken for a token", got, got)
		}
	}
	p := New("IdempotentConsumer", "Orders/Consumer")
	p.Add("MemorySize", n, "use 128 to 10240 MB (Lambda's limits)")
	p.Add("MemorySize", 64, "use 128 to 10240 MB (Lambda's limits)")
	want := []string{
		"MemorySize: got a CloudFormation token (a deploy-time value such as a CfnParameter's ValueAsNumber, which a Go integer or duration holds as -9223372036854775808); " +
			"MemorySize cannot be a token: the construct checks it and derives other settings from it at synth. Give a number (use 128 to 10240 MB (Lambda's limits)); " +
			"to set it at deploy time anyway, override the synthesized property on the L1 resource with the escape hatch, " +
			`e.g. fn.Node().DefaultChild().(awslambda.CfnFunction).AddPropertyOverride("MemorySize", param.ValueAsNumber())`,
		"MemorySize: got 64; use 128 to 10240 MB (Lambda's limits)",
	}
	var verr *Error
	errors.As(p.Err(), &verr)
	if verr == nil || strings.Join(verr.Problems, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%v\nwant:\n%s", verr, strings.Join(want, "\n"))
	}
}

// An error CDK itself raises, as jsii passes it on: a CDK v1 feature flag in the app's
// cdk.json (the CDK v1 templates wrote several), which CDK v2 refuses when a construct asks
// for it (a KMS key does).
func TestExitOnInvalidPropsReportsCDKsOwnError(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("cdk.json", []byte(`{"app":"go run .","context":{"@aws-cdk/aws-kms:defaultKeyPolicies":true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := stubExit(t)
	func() {
		defer ExitOnInvalidProps()
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"@aws-cdk/aws-kms:defaultKeyPolicies": true}})
		awskms.NewKey(awscdk.NewStack(app, jsii.String("S"), nil), jsii.String("Key"), nil)
	}()
	want := "\ncdk synth: the context sets @aws-cdk/aws-kms:defaultKeyPolicies, a CDK v1 feature flag that CDK v2 removed and refuses " +
		"(v2 behaves as if it were true): delete it from cdk.json (CDK raised it at "
	if *code != 1 || !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "validate_test.go:") || strings.Count(out.String(), "\n") != 3 {
		t.Fatalf("exit status %d, stderr %q; want 1 and one line starting %q and naming this file's line", *code, out, want)
	}

	out, code = stubExit(t)
	func() {
		defer ExitOnInvalidProps()
		stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
		awscdk.NewCfnOutput(stack, jsii.String("Twice"), &awscdk.CfnOutputProps{Value: jsii.String("a")})
		awscdk.NewCfnOutput(stack, jsii.String("Twice"), &awscdk.CfnOutputProps{Value: jsii.String("b")})
	}()
	want = "\ncdk synth: CDK raised: There is already a Construct with name 'Twice' in "
	if *code != 1 || !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "validate_test.go:") {
		t.Fatalf("exit status %d, stderr %q; want 1 and %q...", *code, out, want)
	}
}
