package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// childExit is an error that carries another program's exit code, as *exec.ExitError does.
type childExit struct{}

func (childExit) Error() string { return "exit status 2" }
func (childExit) ExitCode() int { return 2 }

// Each kind of error a command returns has its exit status and line, wrapped or not.
func TestOutcome(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		code int
		line string
	}{
		{live, nil, ExitOK, ""},
		{live, fmt.Errorf("dlq: %w", ErrHelp), ExitOK, ""},
		{live, fmt.Errorf("dlq redrive: %w", Usagef("--rate %d: use 1 to 500", 0)), ExitUsage, "--rate 0: use 1 to 500"},
		{live, fmt.Errorf("redrive: %w", &NotDone{Why: "interrupted"}), ExitNotDone, "not done: interrupted"},
		{live, fmt.Errorf("redrive: %w", &Left{Msg: "done, but 2 messages stay"}), ExitLeft, "done, but 2 messages stay"},
		{live, fmt.Errorf("mvn: %w", childExit{}), ExitError, "mvn: exit status 2"},
		{cancelled, fmt.Errorf("sqs GetQueueAttributes: %w", context.Canceled), ExitNotDone, "interrupted before anything changed"},
		{live, fmt.Errorf("sqs GetQueueAttributes: %w", context.Canceled), ExitError, "sqs GetQueueAttributes: context canceled"},
		{live, errors.New("table t: not found"), ExitError, "table t: not found"},
	} {
		if code, line := Outcome(c.ctx, c.err); code != c.code || line != c.line {
			t.Errorf("Outcome(%v) = %d, %q; want %d, %q", c.err, code, line, c.code, c.line)
		}
	}
}
