// Package envconf reads a Lambda function's configuration from its environment the way both
// functions of this module do: every problem at once, each an *Error naming the variable, the
// value and the accepted form, and an optional variable set to "" counting as unset (so a
// construct can always set every variable). The consumer and the dispatcher share it, so a
// rule such as what a queue URL must look like is written once.
package envconf

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// Error names one environment variable whose value is unusable, and the accepted form.
type Error struct {
	Var, Value string
	Set        bool // false: the variable is missing
	Want       string
}

// Error names the variable, its value and the accepted form.
func (e *Error) Error() string {
	if !e.Set {
		return fmt.Sprintf("%s is not set: want %s", e.Var, e.Want)
	}
	return fmt.Sprintf("%s=%q: want %s", e.Var, e.Value, e.Want)
}

// Reader reads variables through lookup and collects what is wrong with them.
type Reader struct {
	lookup   func(string) (string, bool)
	problems []error
}

// New returns a Reader over lookup (os.LookupEnv in Lambda).
func New(lookup func(string) (string, bool)) *Reader { return &Reader{lookup: lookup} }

// Bad records a problem with a variable.
func (r *Reader) Bad(name, value string, set bool, want string) {
	r.problems = append(r.problems, &Error{Var: name, Value: value, Set: set, Want: want})
}

// Optional is the variable's value, and whether it is set to something other than "".
func (r *Reader) Optional(name string) (string, bool) {
	v, ok := r.lookup(name)
	return v, ok && v != ""
}

// Required is the variable's value; a missing or empty one is a problem, wanting want.
func (r *Reader) Required(name, want string) (string, bool) {
	v, ok := r.lookup(name)
	if !ok || v == "" {
		r.Bad(name, v, ok, want)
		return "", false
	}
	return v, true
}

// Duration is the variable as a Go duration from lo to hi, def when unset.
func (r *Reader) Duration(name string, def, lo, hi time.Duration, want string) time.Duration {
	v, ok := r.Optional(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		r.Bad(name, v, true, want)
		return def
	}
	return d
}

// Int is the variable as an integer from lo to hi, def when unset.
func (r *Reader) Int(name string, def, lo, hi int) int {
	v, ok := r.Optional(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.Bad(name, v, true, fmt.Sprintf("an integer from %d to %d", lo, hi))
		return def
	}
	return n
}

// Bool is the variable as true or false (any case), def when unset.
func (r *Reader) Bool(name string, def bool) bool {
	v, ok := r.Optional(name)
	if !ok {
		return def
	}
	switch strings.ToLower(v) {
	case "true":
		return true
	case "false":
		return false
	}
	r.Bad(name, v, true, "true or false")
	return def
}

// QueueWant is the form QueueURL accepts, for messages.
const QueueWant = "an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>"

// IsQueueURL reports whether v has the form of an SQS queue URL: http or https, a host, and
// a path of exactly an account and a queue name, as SQS's own URLs and local servers' have.
func IsQueueURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.RawQuery == "" && u.Fragment == "" && strings.Count(strings.Trim(u.Path, "/"), "/") == 1
}

// QueueURL is the variable as an SQS queue URL (IsQueueURL); required reports a missing one.
func (r *Reader) QueueURL(name string, required bool) string {
	v, ok := r.Optional(name)
	switch {
	case !ok && required:
		r.Required(name, QueueWant) // reports it missing or empty
	case ok && !IsQueueURL(v):
		r.Bad(name, v, true, QueueWant)
	case ok:
		return v
	}
	return ""
}

// MetricsNamespace is the variable as a CloudWatch namespace, def when unset.
func (r *Reader) MetricsNamespace(name, def string) string {
	v, ok := r.Optional(name)
	if !ok {
		return def
	}
	if err := telemetry.ValidateNamespace(v); err != nil {
		r.Bad(name, v, true, "a CloudWatch namespace: 1-255 characters of 0-9A-Za-z._-/#: and space, not starting with AWS/")
		return def
	}
	return v
}

// LogLevel is the variable as DEBUG, INFO, WARN or ERROR, INFO when unset.
func (r *Reader) LogLevel(name string) slog.Level {
	v, ok := r.Optional(name)
	if !ok {
		return slog.LevelInfo
	}
	level, err := telemetry.ParseLevel(v)
	if err != nil {
		r.Bad(name, v, true, "DEBUG, INFO, WARN or ERROR")
		return slog.LevelInfo
	}
	return level
}

// Err is every problem found, joined under sentinel, or nil.
func (r *Reader) Err(sentinel error) error {
	if len(r.problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", sentinel, errors.Join(r.problems...))
}
