package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Handler processes one SQS record. Returning an error fails that record only; it is reported
// in batchItemFailures so SQS delivers it again. The ctx expires DeadlineMargin before the
// invocation deadline: stop and return when it is done.
type Handler func(ctx context.Context, msg events.SQSMessage) error

// Defaults and limits of Options.
const (
	DefaultConcurrency    = 10
	DefaultDeadlineMargin = 2 * time.Second
	// MinDeadlineMargin is the smallest margin New accepts. The margin is Process's own time:
	// records stop starting at the margin and the hard stop fires at half of it, and what is
	// left has to carry the response through the Lambda runtime before Lambda ends the
	// invocation. With no margin Process would start records up to the deadline and answer
	// only as Lambda kills the invocation, which redelivers the whole batch, records that
	// succeeded included. 100ms keeps 50ms after the hard stop for that; it is a floor against
	// a broken setting, not advice: handlers need the margin to notice their context ending.
	MinDeadlineMargin = 100 * time.Millisecond
	// MaxDeadlineMargin is Lambda's maximum timeout: a larger margin would skip every record.
	MaxDeadlineMargin = 15 * time.Minute
)

// Options configure a Processor. The zero value is valid and gives the defaults.
type Options struct {
	// Concurrency bounds the records (standard queue) or message groups (FIFO queue) that run
	// at the same time. Default 10 (DefaultConcurrency); negative is an error.
	Concurrency int
	// DeadlineMargin is the time kept back before the invocation deadline: records are not
	// started closer to the deadline than this, and handlers' contexts expire this much
	// before it. 0 means the default 2s (DefaultDeadlineMargin): no margin at all cannot be
	// asked for (see MinDeadlineMargin). Otherwise it must be from 100ms (MinDeadlineMargin)
	// to 15m (MaxDeadlineMargin); anything else is an error.
	DeadlineMargin time.Duration
	// Logger receives one line per record that did not succeed. Default slog.Default().
	Logger *slog.Logger
}

// ErrInvalidOptions is wrapped by the error New returns for invalid Options.
var ErrInvalidOptions = errors.New("invalid batch options")

// Processor runs the records of SQS events through a Handler. It holds no per-event state and
// is safe for concurrent use; build one at cold start: it keeps up to Concurrency worker
// goroutines parked between calls for the life of the process (workers.go).
type Processor struct {
	concurrency int
	margin      time.Duration
	log         *slog.Logger
	workers     *workers // goroutines kept across calls (workers.go)

	// Clock seams for deterministic deadline tests: the deadline guard and the hard stop use
	// these; handlers' contexts necessarily use the real clock.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

// New validates opts, applies the defaults and returns a Processor. All problems are reported
// at once, each naming the field, the value and the accepted range.
func New(opts Options) (*Processor, error) {
	var problems []error
	if opts.Concurrency < 0 {
		problems = append(problems, fmt.Errorf(
			"Options.Concurrency = %d: must be >= 1, or 0 for the default %d", opts.Concurrency, DefaultConcurrency))
	}
	if m := opts.DeadlineMargin; m != 0 && (m < MinDeadlineMargin || m > MaxDeadlineMargin) {
		problems = append(problems, fmt.Errorf(
			"Options.DeadlineMargin = %s: must be 0 for the default %s, or from %s (the least that leaves time to answer Lambda) to %s (the maximum Lambda timeout)",
			m, DefaultDeadlineMargin, MinDeadlineMargin, MaxDeadlineMargin))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(problems...))
	}
	p := &Processor{
		concurrency: opts.Concurrency,
		margin:      opts.DeadlineMargin,
		log:         opts.Logger,
		now:         time.Now,
		after:       time.After,
	}
	if p.concurrency == 0 {
		p.concurrency = DefaultConcurrency
	}
	p.workers = newWorkers(p.concurrency)
	if p.margin == 0 {
		p.margin = DefaultDeadlineMargin
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p, nil
}

// Concurrency returns the effective concurrency bound.
func (p *Processor) Concurrency() int { return p.concurrency }

// DeadlineMargin returns the effective deadline margin.
func (p *Processor) DeadlineMargin() time.Duration { return p.margin }
