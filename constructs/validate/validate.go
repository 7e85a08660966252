// Package validate collects every problem with a construct's props and fails once, with
// messages that name the prop, the value it got and the fix (the aws-cdk
// validate-queue-props style). Constructs call Check at construction time, so a wrong prop
// fails `cdk synth` before anything reaches CloudFormation.
package validate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// Error is the value constructs panic with when their props are invalid. A CDK app's main
// prints it without a stack trace by deferring ExitOnInvalidProps.
type Error struct {
	// Construct is the construct's kind and path, e.g.
	// `IdempotentConsumer "IdempotentSqsPipeline-dev/Standard/Consumer"`: the path tells
	// which stack (stage) and which parent the invalid construct is in.
	Construct string
	// Problems are the individual messages, each naming prop, value and fix.
	Problems []string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: invalid props:", e.Construct)
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p)
	}
	return b.String()
}

// Problems accumulates problems for one construct.
type Problems struct {
	construct string
	list      []string
}

// New starts a collection for the construct described by kind and name. Constructs pass
// their path (NewIn does that); name is quoted as given.
func New(kind, name string) *Problems {
	return &Problems{construct: fmt.Sprintf("%s %q", kind, name)}
}

// NewIn starts a collection for the construct of kind that will be added to scope as id. A
// construct validates its props before it creates its own node (nothing is built from
// invalid props), so its path is computed from scope and id rather than read from the node.
func NewIn(kind string, scope constructs.IConstruct, id string) *Problems {
	return New(kind, PathOf(scope, id))
}

// PathOf is the path Node().Path() will return for a child id of scope: the ids from the
// root down, joined by "/", the root's own empty id left out. The constructs library
// replaces a "/" inside an id with "--", and so does PathOf.
func PathOf(scope constructs.IConstruct, id string) string {
	id = strings.ReplaceAll(id, "/", "--")
	if scope == nil {
		return id
	}
	parent := *scope.Node().Path()
	if parent == "" {
		return id
	}
	return parent + "/" + id
}

// Add records that prop has value got, and how to fix it. A number that is a CloudFormation
// token (NumberToken) is reported as one: the prop cannot be a token, and the escape hatch.
func (p *Problems) Add(prop string, got any, fix string) {
	if NumberToken(got) {
		p.list = append(p.list, fmt.Sprintf("%s: got a CloudFormation token (a deploy-time value such as a CfnParameter's "+
			"ValueAsNumber, which a Go integer or duration holds as %d); %s cannot be a token: the construct checks it and "+
			"derives other settings from it at synth. Give a number (%s); to set it at deploy time anyway, override the "+
			"synthesized property on the L1 resource with the escape hatch, e.g. fn.Node().DefaultChild()"+
			".(awslambda.CfnFunction).AddPropertyOverride(\"MemorySize\", param.ValueAsNumber())", prop, int64(math.MinInt64), prop, fix))
		return
	}
	p.list = append(p.list, fmt.Sprintf("%s: got %v; %s", prop, got, fix))
}

// NumberToken reports whether got, an integer or a time.Duration (or a pointer to an int),
// is a CloudFormation token converted to Go: a token number (-1.888e+289) converted to int,
// int64 or time.Duration is math.MinInt64 on amd64 and arm64. No prop takes that value.
// A duration built as time.Duration(token) * time.Second wraps to 0, the value that selects
// a default: no check can tell that from a prop left unset.
func NumberToken(got any) bool {
	switch v := got.(type) {
	case int:
		return int64(v) == math.MinInt64
	case int64:
		return v == math.MinInt64
	case time.Duration:
		return v == math.MinInt64
	case *int:
		return v != nil && int64(*v) == math.MinInt64
	}
	return false
}

// Addf records a free-form problem about prop (used where the value is a relation between props).
func (p *Problems) Addf(prop, format string, args ...any) {
	p.list = append(p.list, prop+": "+fmt.Sprintf(format, args...))
}

// Err returns nil when no problem was recorded, or an *Error listing them all.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &Error{Construct: p.construct, Problems: append([]string(nil), p.list...)}
}

// Check panics with the collected *Error if any problem was recorded. Constructs call it once,
// after every rule has run, as CDK's own constructs throw from their constructors.
func (p *Problems) Check() {
	if err := p.Err(); err != nil {
		panic(err)
	}
}

// Unresolved reports whether s is a CDK token (a value only known at deploy time), which
// validation must skip rather than judge.
func Unresolved(s string) bool {
	return s != "" && *awscdk.Token_IsUnresolved(s)
}

// AsError extracts a validation *Error from a recovered panic value.
func AsError(r any) (*Error, bool) {
	err, ok := r.(error)
	if !ok {
		return nil, false
	}
	var v *Error
	if errors.As(err, &v) {
		return v, true
	}
	return nil, false
}

// exit and stderr are where ExitOnInvalidProps reports; tests replace them.
var (
	exit             = os.Exit
	stderr io.Writer = os.Stderr
)

// ExitOnInvalidProps turns a construct's invalid props into what a command-line tool prints:
// the *Error's message on stderr, no Go stack trace, exit status 1. Any other panic goes on
// unchanged. A CDK app's main defers it first thing:
//
//	func main() {
//		defer validate.ExitOnInvalidProps()
//		app := awscdk.NewApp(nil)
//		...
//	}
//
// Defer the function itself, not a closure that calls it: recover only stops a panic when
// the deferred function calls it directly, so `defer func() { validate.ExitOnInvalidProps() }()`
// lets the stack trace through.
//
// An error CDK itself raises (jsii passes it on as a Go panic: a feature flag in cdk.json that
// CDK v2 removed, a construct id used twice) is printed the same way, as one line naming the
// cause, the line of the app that called into CDK, and the file to change when it is the
// context's; Go's stack trace of jsii's internals is left out.
func ExitOnInvalidProps() {
	r := recover()
	if r == nil {
		return
	}
	if verr, ok := AsError(r); ok {
		fmt.Fprintf(stderr, "\n%s\n\n", verr)
		exit(1)
		return
	}
	if err, ok := r.(error); ok {
		if at, ok := raisedByCDK(); ok {
			fmt.Fprintf(stderr, "\n%s\n\n", cdkError(err.Error(), at))
			exit(1)
			return
		}
	}
	panic(r)
}

// Go packages whose frames are CDK's (and jsii's) rather than an app's.
var cdkPackages = []string{"github.com/aws/jsii-runtime-go", "github.com/aws/aws-cdk-go/", "github.com/aws/constructs-go/", "github.com/cdklabs/"}

func isCDK(function string) bool {
	return slices.ContainsFunc(cdkPackages, func(p string) bool { return strings.HasPrefix(function, p) })
}

// raisedByCDK reports whether the panic being recovered was raised in jsii's runtime (an
// error of CDK's JavaScript), and where the app called into CDK: "file:line (function)" of
// the first frame outside CDK's packages.
func raisedByCDK() (string, bool) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	panicked, fromJSII := false, false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicked = true
		case !panicked || strings.HasPrefix(f.Function, "runtime."):
		case !fromJSII && !strings.HasPrefix(f.Function, "github.com/aws/jsii-runtime-go"):
			return "", false // raised by the app, or by a construct's Go code: not CDK's error
		case !fromJSII:
			fromJSII = true
		case !isCDK(f.Function):
			return fmt.Sprintf("%s:%d (%s)", f.File, f.Line, f.Function), true
		}
		if !more {
			return "", fromJSII
		}
	}
}

// removedFlag finds the name of a feature flag in CDK's "Unsupported feature flag" error.
var removedFlag = regexp.MustCompile(`^Unsupported feature flag '([^']+)'`)

// cdkError is the line ExitOnInvalidProps prints for an error CDK raised at the app's line at.
func cdkError(msg, at string) string {
	first, _, _ := strings.Cut(msg, "\n")
	if m := removedFlag.FindStringSubmatch(first); m != nil {
		file := "the -c option that sets it"
		for _, f := range []string{"cdk.json", "cdk.context.json"} {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), m[1]) {
				file = f
				break
			}
		}
		return fmt.Sprintf("cdk synth: the context sets %s, a CDK v1 feature flag that CDK v2 removed and refuses (v2 behaves as if it were true): "+
			"delete it from %s (CDK raised it at %s)", m[1], file, at)
	}
	return fmt.Sprintf("cdk synth: CDK raised: %s (at %s)", first, at)
}
