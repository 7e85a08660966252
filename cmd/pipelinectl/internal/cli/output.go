package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Truncate cuts s to n bytes, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// Streams are where a command writes, and the command line it was run with (for the
// command that resumes it).
type Streams struct {
	Out, Err io.Writer
	Argv     []string
	// SecondSignalKills, when set (main sets it), gives Ctrl-C back its default effect: a
	// command that is cleaning up after the first one (a redrive giving back what it holds)
	// calls it, so that a second Ctrl-C ends the process at once. Commands that must stop
	// what they started (local up) never call it.
	SecondSignalKills func()
	// Redrive are shorter waits of dlq redrive, for tests; the command line sets none.
	Redrive RedriveTimings
}

// RedriveTimings are dlq redrive's waits, each zero for its default: how long what a receive
// took stays hidden (Hold, 30s), how long receives may keep failing before the run stops
// (Outage, 2m), how long the summary retries counting the DLQ (Count, 30s). A test's
// seconds let a lost receive or a network cut end a run in seconds.
type RedriveTimings struct{ Hold, Outage, Count time.Duration }

// Text is where a command's human-readable lines go: stdout, or stderr when stdout carries
// JSON (--output json).
func (w Streams) Text(c *Common) io.Writer {
	if c.Output == "json" {
		return w.Err
	}
	return w.Out
}

// OutputFlag adds --output text|json to a command that can print JSON.
func OutputFlag(fs *flag.FlagSet, c *Common) {
	fs.StringVar(&c.Output, "output", "text", "text, or json: one JSON document on stdout (the text goes to stderr)")
}

// CheckOutput refuses an --output other than text or json.
func (c *Common) CheckOutput() error {
	if c.Output != "text" && c.Output != "json" {
		return Usagef("--output %s: use text or json", c.Output)
	}
	return nil
}

// WriteJSON prints v as indented JSON.
func WriteJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}
