package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
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
}

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
