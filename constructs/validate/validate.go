// Package validate collects every problem with a construct's props and fails once, with
// messages that name the prop, the value it got and the fix (the aws-cdk
// validate-queue-props style). Constructs call Check at construction time, so a wrong prop
// fails `cdk synth` before anything reaches CloudFormation.
package validate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
)

// Error is the value constructs panic with when their props are invalid. The CDK app's main
// recovers it and prints it without a stack trace (see stacks/app).
type Error struct {
	// Construct is the construct's path or kind and id, e.g. `IdempotentConsumer "Standard"`.
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

// New starts a collection for the construct described by kind and id.
func New(kind, id string) *Problems {
	return &Problems{construct: fmt.Sprintf("%s %q", kind, id)}
}

// Add records that prop has value got, and how to fix it.
func (p *Problems) Add(prop string, got any, fix string) {
	p.list = append(p.list, fmt.Sprintf("%s: got %v; %s", prop, got, fix))
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
