package dlq

import (
	"fmt"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// failedCalls is how often one kind of call failed in a run, from when to when, and the
// last failure's cause in words.
type failedCalls struct {
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Cause string    `json:"cause"`
}

// callFailures counts a run's failed calls by kind (receive, send, delete, give back,
// count), so that its summary names every kind that failed and for how long, never a raw
// SDK error chain.
type callFailures struct {
	byKind map[string]*failedCalls
	order  []string
}

// add counts one failed call of kind and returns its cause in words.
func (f *callFailures) add(kind string, err error) string {
	if f.byKind == nil {
		f.byKind = map[string]*failedCalls{}
	}
	c := f.byKind[kind]
	if c == nil {
		c = &failedCalls{First: time.Now()}
		f.byKind[kind] = c
		f.order = append(f.order, kind)
	}
	c.Count++
	c.Last = time.Now()
	c.Cause = cli.InWords(err)
	return c.Cause
}

// report is the failures for the summary's JSON, nil when no call failed.
func (f *callFailures) report() map[string]failedCalls {
	if len(f.order) == 0 {
		return nil
	}
	out := make(map[string]failedCalls, len(f.order))
	for _, k := range f.order {
		out[k] = *f.byKind[k]
	}
	return out
}

// lines are the failures for the summary's text, one per kind in the order they first
// failed: "receive: 118 failed from 03:10:07 to 03:12:07 (2m0s): no answer from ...".
func (f *callFailures) lines() []string {
	var out []string
	for _, k := range f.order {
		c := f.byKind[k]
		when := "at " + clock(c.First)
		if c.Count > 1 {
			when = fmt.Sprintf("from %s to %s (%s)", clock(c.First), clock(c.Last), c.Last.Sub(c.First).Round(time.Second))
		}
		cause := c.Cause
		if k == "receive" && strings.Contains(cause, "connection refused") {
			// Not among the lost receives: only one that was sent may hide a batch.
			cause += "; a refused receive never reached the queue, so it took no message"
		}
		out = append(out, fmt.Sprintf("%s: %d failed %s: %s", k, c.Count, when, cause))
	}
	return out
}

// clock is t as the summary prints a time of day, in UTC.
func clock(t time.Time) string { return t.UTC().Format("15:04:05Z") }
