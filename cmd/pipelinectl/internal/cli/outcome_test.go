package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type keptByRule struct{}

func (keptByRule) Error() string { return "done, but 2 messages stay" }
func (keptByRule) ExitCode() int { return ExitLeft }

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
		{live, fmt.Errorf("redrive: %w", keptByRule{}), ExitLeft, "done, but 2 messages stay"},
		{cancelled, fmt.Errorf("sqs GetQueueAttributes: %w", context.Canceled), ExitNotDone, "interrupted before anything changed"},
		{live, fmt.Errorf("sqs GetQueueAttributes: %w", context.Canceled), ExitError, "sqs GetQueueAttributes: context canceled"},
		{live, errors.New("table t: not found"), ExitError, "table t: not found"},
	} {
		if code, line := Outcome(c.ctx, c.err); code != c.code || line != c.line {
			t.Errorf("Outcome(%v) = %d, %q; want %d, %q", c.err, code, line, c.code, c.line)
		}
	}
}
