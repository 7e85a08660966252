package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/consume"
)

// streams are where a command writes, and the command line it was run with (for the
// command that resumes it).
type streams struct {
	out, err io.Writer
	argv     []string
}

// text is where a command's human-readable lines go: stdout, or stderr when stdout carries
// JSON (--output json).
func (w streams) text(c *common) io.Writer {
	if c.output == "json" {
		return w.err
	}
	return w.out
}

// outputFlag adds --output to a command that can print JSON.
func outputFlag(fs *flag.FlagSet, c *common) {
	fs.StringVar(&c.output, "output", "text", "text, or json: one JSON document on stdout (the text goes to stderr)")
}

func (c *common) checkOutput() error {
	if c.output != "text" && c.output != "json" {
		return usagef("--output %s: use text or json", c.output)
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// planCounts is what a redrive's scan planned.
type planCounts struct {
	Scanned  int `json:"scanned"`
	Move     int `json:"move"`
	BadInput int `json:"badInput"`
	Expired  int `json:"olderThanRecordTTL"`
	Behind   int `json:"behindInFifoGroup"`
	NotSeen  int `json:"notSeen"`
}

// redriveSummary is what a redrive did and left, printed at its end (and as --output json).
type redriveSummary struct {
	Status      string     `json:"status"` // done, dry run, empty, not done, failed
	Done        bool       `json:"done"`
	DryRun      bool       `json:"dryRun"`
	DLQ         string     `json:"dlq"`
	Destination string     `json:"destination"`
	Method      string     `json:"method"`
	Plan        planCounts `json:"plan"`
	// Moved counts the messages this run sent and deleted (by the move task or one by one).
	Moved int64 `json:"moved"`
	// MovedEarlier counts messages whose copies an earlier run had sent; this run deleted
	// them from the DLQ without sending them again.
	MovedEarlier int `json:"movedByEarlierRun"`
	// PossiblyDoubled names messages whose send got no answer and was sent again: their
	// copy may be in the destination twice.
	PossiblyDoubled []string          `json:"possiblyDoubled"`
	Kept            map[string]int    `json:"kept"`
	SendFailed      map[string]string `json:"sendFailed,omitempty"`
	Undeleted       int               `json:"sentNotDeleted"`
	LeftVisible     int64             `json:"leftVisible"`
	LeftInFlight    int64             `json:"leftInFlight"`
	Hidden          int64             `json:"hidden"`
	Why             string            `json:"why,omitempty"`
	Resume          string            `json:"resume,omitempty"`
	Journal         string            `json:"journal,omitempty"`
	Errors          []string          `json:"errors,omitempty"`
}

// fromMover takes the receive path's counts.
func (s *redriveSummary) fromMover(r *mover) {
	s.Moved += int64(r.moved)
	s.MovedEarlier = r.movedEarlier
	s.PossiblyDoubled = r.doubled
	s.Kept = map[string]int{}
	for _, v := range r.kept {
		s.Kept[map[verdict]string{vBad: "badInput", vExpired: "olderThanRecordTTL", vBehind: "behindInFifoGroup", vFailed: "sendFailed"}[v]]++
	}
	if len(r.failed) > 0 {
		s.SendFailed = r.failed
	}
	s.Undeleted = len(r.undeleted)
	s.Hidden = r.hidden
	switch {
	case r.interrupted:
		s.Status, s.Why = "not done", "interrupted"
	case r.hidden > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d messages still hidden in the DLQ after waiting %s (a receive whose response was lost, or another reader holds them)", r.hidden, r.hold+settleMargin)
	case len(r.undeleted) > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d messages sent but not deleted from the DLQ (the network): a rerun deletes them without sending them again", len(r.undeleted))
	case len(r.failed) > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d sends failed: those messages stay in the DLQ", len(r.failed))
	case len(r.errs) > 0:
		s.Status, s.Why = "not done", "errors"
	default:
		s.Status, s.Done = "done", true
	}
}

// finish reads what is left in the DLQ, prints the summary's last lines (or the JSON), and
// returns the command's error: nil when done, a notDone when a rerun resumes the job.
func (s *redriveSummary) finish(ctx context.Context, api *sqs.Client, dlq queueInfo, c *common, w streams, err error) error {
	var nd *notDone
	switch {
	case errors.As(err, &nd):
		s.Status, s.Done, s.Why = "not done", false, nd.why
	case err != nil && s.Status == "":
		s.Status, s.Done, s.Why = "failed", false, err.Error()
	}
	if err != nil {
		for _, e := range unjoin(err) {
			s.Errors = append(s.Errors, e.Error())
		}
	}
	cctx, cancel := settled(ctx)
	left, lerr := getQueue(cctx, api, dlq.url)
	cancel()
	if lerr == nil {
		s.LeftVisible, s.LeftInFlight = left.visible, left.inFlight
	}
	if s.Done {
		s.Resume = ""
	}
	if c.output == "json" {
		writeJSON(w.out, s)
	} else if !s.DryRun && s.Status != "empty" {
		s.print(w.out)
	}
	switch {
	case s.Done && err == nil:
		return nil
	case s.Status == "failed" && s.Moved == 0 && s.MovedEarlier == 0:
		return err
	}
	return &notDone{why: s.Why}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (s *redriveSummary) print(w io.Writer) {
	fmt.Fprintf(w, "moved        %d", s.Moved)
	if s.MovedEarlier > 0 {
		fmt.Fprintf(w, ", and %d whose copies an earlier run had sent (deleted from the DLQ now, not sent again)", s.MovedEarlier)
	}
	fmt.Fprintln(w)
	if n := len(s.PossiblyDoubled); n > 0 {
		fmt.Fprintf(w, "twice?       %d possibly in the destination twice: a send got no answer (the network) and was sent again: %s. "+
			"The consumer runs each key's effect once and answers a second copy as a duplicate (its Duplicate metric) while the record lives\n",
			n, strings.Join(s.PossiblyDoubled, ", "))
	}
	var kept []string
	for _, k := range []struct{ key, what string }{
		{"badInput", "bad input (--include-invalid moves them)"},
		{"olderThanRecordTTL", "older than the record TTL (--include-expired moves them, and runs their effects again if they had completed)"},
		{"behindInFifoGroup", "behind those in their FIFO group"},
		{"sendFailed", "whose send failed"},
	} {
		if n := s.Kept[k.key]; n > 0 {
			kept = append(kept, fmt.Sprintf("%d %s", n, k.what))
		}
	}
	fmt.Fprintf(w, "left         in the DLQ: %d visible, %d in flight (SQS's approximate counts)", s.LeftVisible, s.LeftInFlight)
	if len(kept) > 0 {
		fmt.Fprintf(w, "; kept: %s", strings.Join(kept, ", "))
	}
	fmt.Fprintln(w)
	if s.Done {
		fmt.Fprintln(w, "done         everything to move has moved (exit 0)")
		return
	}
	fmt.Fprintf(w, "NOT DONE     %s (exit %d)\n", s.Why, exitNotDone)
	if s.Resume != "" {
		fmt.Fprintf(w, "resume with  %s\n", s.Resume)
		if s.Journal != "" {
			fmt.Fprintf(w, "             (the journal %s keeps what was sent: the rerun sends none of it again)\n", s.Journal)
		}
	}
}

// inspectReport is dlq inspect's --output json.
type inspectReport struct {
	DLQ           string          `json:"dlq"`
	Kind          string          `json:"kind"`
	Source        string          `json:"source,omitempty"`
	Visible       int64           `json:"visible"`
	InFlight      int64           `json:"inFlight"`
	Delayed       int64           `json:"delayed"`
	Scanned       int             `json:"scanned"`
	NotSeen       int             `json:"notSeen"`
	StoppedAtMax  bool            `json:"stoppedAtMax"`
	Interrupted   bool            `json:"interrupted"`
	RecordTTL     string          `json:"recordTTL,omitempty"`
	Messages      []messageJSON   `json:"messages"`
	BlockedGroups []blockedReport `json:"blockedGroups,omitempty"`
}

type messageJSON struct {
	ID                 string            `json:"id"`
	Group              string            `json:"group,omitempty"`
	Reason             string            `json:"reason"`
	DeadLetterReason   string            `json:"deadLetterReason,omitempty"`
	SourceMessageID    string            `json:"sourceMessageId,omitempty"`
	Sent               time.Time         `json:"sent"`
	FirstSent          time.Time         `json:"firstSent"`
	Receives           string            `json:"receives"`
	OlderThanRecordTTL bool              `json:"olderThanRecordTTL"`
	Redrive            string            `json:"redrive"` // moves, stays: bad input, ...
	Attributes         map[string]string `json:"attributes,omitempty"`
	Body               string            `json:"body"`
}

type blockedReport struct {
	Group  string `json:"group"`
	From   string `json:"fromMessage"`
	Why    string `json:"why"`
	Behind int    `json:"scannedBehind"`
}

func messageReport(d decision, now time.Time, ttl time.Duration) messageJSON {
	m := d.m
	j := messageJSON{ID: aws.ToString(m.MessageId), Group: group(m), Reason: reason(m), Sent: sent(m).UTC(), FirstSent: firstSent(m).UTC(),
		Receives: sysAttr(m, types.MessageSystemAttributeNameApproximateReceiveCount), OlderThanRecordTTL: outlivesRecord(m, ttl, now),
		Body: aws.ToString(m.Body)}
	j.Redrive = map[verdict]string{vMove: "moves", vBad: "stays: bad input", vExpired: "stays: older than the record TTL",
		vBehind: "stays: behind " + d.blocker + " in its FIFO group"}[d.v]
	for k, a := range m.MessageAttributes {
		if j.Attributes == nil {
			j.Attributes = map[string]string{}
		}
		j.Attributes[k] = aws.ToString(a.StringValue)
	}
	if a, ok := m.MessageAttributes[consume.AttrDeadLetterReason]; ok {
		j.DeadLetterReason = aws.ToString(a.StringValue)
	}
	if a, ok := m.MessageAttributes[consume.AttrSourceMessageID]; ok {
		j.SourceMessageID = aws.ToString(a.StringValue)
	}
	return j
}
