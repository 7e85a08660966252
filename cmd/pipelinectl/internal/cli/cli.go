package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/editdist"
)

// Exit codes: one table for every command (docs/operator-cli.md, and the usage text; a test
// holds the three to each other).
const (
	ExitOK      = 0 // done; nothing the command was to do is left (a dry run included)
	ExitError   = 1 // failed, or found a problem (status, verify): the message says what, and changed nothing more than it says
	ExitUsage   = 2 // the command line is wrong: nothing ran
	ExitNotDone = 3 // not done: interrupted, or stopped by the network, hidden messages or a move task still running; the summary says what is where and the command that resumes
	ExitLeft    = 4 // done, but messages stay in the DLQ by rule (bad input, older than the record TTL, behind those in a FIFO group): the summary says which flag moves them
)

// UsageError is a command line that cannot run; it exits with ExitUsage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// ErrHelp ends a command that printed its help.
var ErrHelp = errors.New("help printed")

// DidYouMean is "; did you mean X?" for the candidate closest to got, or "" when none is
// close (an edit distance of at most 2, or a prefix).
func DidYouMean(got string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editdist.Distance(got, c)
		if strings.HasPrefix(c, got) && len(got) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// Pause waits d or until ctx ends; it reports whether the whole d passed.
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// NotDone is a run that stopped before its job was done: it exits ExitNotDone, and its
// summary says what is where and how to resume.
type NotDone struct {
	Why        string
	TaskGoesOn bool // a move task still runs in SQS: the DLQ's counts go on changing
}

func (e *NotDone) Error() string { return e.Why }

// Left is a command that did its job but left something by rule, which its summary names
// with the flag that would take it too (dlq redrive's kept messages): it exits ExitLeft.
type Left struct{ Msg string }

func (e *Left) Error() string { return e.Msg }

// Outcome is the exit status of a command that returned err under ctx, and the line that
// says why ("" when there is nothing to say): the one table of exit codes, for main and for
// each command's tests. Only this package's error types choose a status other than
// ExitError: an error from elsewhere that carries an exit code of its own (a child
// process's *exec.ExitError) is a failure like any other.
func Outcome(ctx context.Context, err error) (code int, line string) {
	var ue *UsageError
	var nd *NotDone
	var left *Left
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return ExitOK, ""
	case errors.As(err, &ue):
		return ExitUsage, ue.Msg
	case errors.As(err, &nd):
		return ExitNotDone, "not done: " + nd.Why
	case errors.As(err, &left):
		return ExitLeft, left.Msg
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return ExitNotDone, "interrupted before anything changed"
	default:
		return ExitError, Explain(err).Error()
	}
}

// ResumeCommand is the command line that resumes a run: the same one, with --yes.
func ResumeCommand(argv []string, yes bool) string {
	if !yes || len(argv) == 0 {
		return ""
	}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return "pipelinectl " + strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
