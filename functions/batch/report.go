package batch

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Status is the outcome of one record. Every status except StatusSucceeded is a batch item
// failure. The zero value is not a valid status and is reported as a failure too, so a result
// that was never filled in can only cause a redelivery, never a loss.
type Status int

// Record outcomes.
const (
	StatusSucceeded          Status = iota + 1 // handler returned nil
	StatusFailed                               // handler returned an error (or was abandoned at the deadline)
	StatusPanicked                             // handler panicked; Err is a *PanicError
	StatusSkippedGroupFailed                   // FIFO: not run, an earlier record of its group failed
	StatusSkippedDeadline                      // not run, the invocation deadline was too close (or ctx done)
)

func (s Status) String() string {
	switch s {
	case StatusSucceeded:
		return "succeeded"
	case StatusFailed:
		return "failed"
	case StatusPanicked:
		return "panicked"
	case StatusSkippedGroupFailed:
		return "skipped_group_failed"
	case StatusSkippedDeadline:
		return "skipped_deadline"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Errors set as (or wrapped in) Result.Err for records the handler did not complete.
var (
	// ErrSkippedDeadline: the record was not started because the deadline was too close or
	// the invocation context was done (the context's error is wrapped too).
	ErrSkippedDeadline = errors.New("not started: invocation deadline too close")
	// ErrGroupFailed: the record was not run because an earlier record of its FIFO group failed.
	ErrGroupFailed = errors.New("not run: an earlier record of its message group failed")
	// ErrStillRunning: the handler ignored its context and was still running when Process had
	// to return; it is left running, and its record is reported failed.
	ErrStillRunning = errors.New("handler still running at the invocation deadline")
	// ErrNilHandler: Process was called with a nil Handler.
	ErrNilHandler = errors.New("nil batch handler")
)

// PanicError is the Err of a StatusPanicked record.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack, logged with the failure
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Result is the outcome of one record.
type Result struct {
	MessageID string
	GroupID   string // MessageGroupId attribute, "" when absent
	Status    Status
	Err       error // nil only for StatusSucceeded
	// Duplicate marks a record whose MessageId already appeared earlier in the same event: it
	// was not run and carries the first occurrence's Status and Err.
	Duplicate bool
}

// Report holds one Result per record, in event order.
type Report struct {
	Results []Result
}

// Response is the value a Lambda handler returns for ReportBatchItemFailures: one entry per
// message id that did not succeed, in event order, each id once. It is never nil, so an
// all-success batch marshals as {"batchItemFailures":[]}.
func (r Report) Response() events.SQSEventResponse {
	failures := []events.SQSBatchItemFailure{}
	seen := map[string]bool{}
	for _, res := range r.Results {
		if res.Status == StatusSucceeded || seen[res.MessageID] {
			continue
		}
		seen[res.MessageID] = true
		failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: res.MessageID})
	}
	return events.SQSEventResponse{BatchItemFailures: failures}
}

// Count returns how many results have status s (duplicates included).
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}
