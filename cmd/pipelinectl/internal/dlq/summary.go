package dlq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/functions/contract"
)

// PlanCounts is what a redrive's scan planned.
type PlanCounts struct {
	Scanned  int `json:"scanned"`
	Move     int `json:"move"`
	BadInput int `json:"badInput"`
	Expired  int `json:"olderThanRecordTTL"`
	Behind   int `json:"behindInFifoGroup"`
	NotSeen  int `json:"notSeen"`
}

// RedriveSummary is what a redrive did and left, printed at its end (and as --output json).
type RedriveSummary struct {
	Status      string     `json:"status"` // done, dry run, empty, not done, failed
	Done        bool       `json:"done"`
	DryRun      bool       `json:"dryRun"`
	DLQ         string     `json:"dlq"`
	Destination string     `json:"destination"`
	Method      string     `json:"method"`
	Plan        PlanCounts `json:"plan"`
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
	// LeftVisible and LeftInFlight are SQS's counts of the DLQ, read after the run's last
	// change (at LeftCountedAt); null when they could not be read (LeftUnknown says why).
	LeftVisible   *int64     `json:"leftVisible"`
	LeftInFlight  *int64     `json:"leftInFlight"`
	LeftCountedAt *time.Time `json:"leftCountedAt,omitempty"`
	LeftUnknown   string     `json:"leftUnknown,omitempty"`
	Hidden        int64      `json:"hidden"`
	// GaveBack counts the messages the run held (kept, or received when it stopped) and made
	// visible again at its end; NotGivenBack names those it could not, which stay hidden
	// until NotGivenBackBy.
	GaveBack       int                    `json:"gaveBack"`
	NotGivenBack   []string               `json:"notGivenBack,omitempty"`
	NotGivenBackBy *time.Time             `json:"notGivenBackVisibleBy,omitempty"`
	FailedCalls    map[string]failedCalls `json:"failedCalls,omitempty"`
	// LostReceives counts receives that got no answer (the network): each may have taken a
	// batch of up to 10 messages that stays hidden, with nobody to give it back, until
	// LostReceivesVisibleBy.
	LostReceives          int        `json:"lostReceives,omitempty"`
	LostReceivesVisibleBy *time.Time `json:"lostReceivesVisibleBy,omitempty"`
	Why                   string     `json:"why,omitempty"`
	Resume                string     `json:"resume,omitempty"`
	Journal               string     `json:"journal,omitempty"`
	Audit                 string     `json:"audit,omitempty"`
	// AuditIncomplete says why the audit trail misses lines (a write failed).
	AuditIncomplete string   `json:"auditIncomplete,omitempty"`
	Errors          []string `json:"errors,omitempty"`

	fails  *callFailures // the run's failed calls, the summary's own count included
	lost   *lostReceives // the run's receives that got no answer
	audit  *audit        // nil for a dry run
	hold   time.Duration // the receive path's hold: when a lost receive's messages return
	byTask bool          // the move task moved them: the trail has no per-message lines
	// taskThenMover: a FIFO move task left messages, which the mover then moved: the
	// trail has the task's total, then per-message lines.
	taskThenMover bool
	taskGoesOn    bool // the move task still runs in SQS after the run
	// downSince: the run stopped because its calls failed for the whole outage, since then;
	// the count is tried once.
	downSince time.Time
	// countWait is how long the count is retried (countWait unless a test shortens it).
	countWait time.Duration
}

// fromMover takes the receive path's counts.
func (s *RedriveSummary) fromMover(r *mover) {
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
	s.GaveBack, s.NotGivenBack = r.gaveBack, r.notGivenBack
	if !r.returnBy.IsZero() {
		s.NotGivenBackBy = &r.returnBy
	}
	s.fails, s.hold, s.downSince = &r.fails, r.hold, r.downSince
	switch {
	case r.interrupted:
		s.Status, s.Why = "not done", "interrupted"
	case r.hidden > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d messages still hidden in the DLQ after waiting %s (a receive whose response was lost, or another reader holds them)", r.hidden, r.hold+SettleMargin)
	case len(r.undeleted) > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d messages sent but not deleted from the DLQ (the network): a rerun deletes them without sending them again", len(r.undeleted))
	case len(r.failed) > 0:
		s.Status, s.Why = "not done", fmt.Sprintf("%d sends failed: those messages stay in the DLQ", len(r.failed))
	case len(r.errs) > 0:
		s.Status, s.Why = "not done", r.errs[0].Error()
	default:
		s.Status, s.Done = "done", true
	}
}

// finish reads what is left in the DLQ, prints the summary's last lines (or the JSON),
// closes the audit trail with them, and returns the command's error: nil when done with
// nothing left behind, a cli.Left when done but messages stay by rule, a cli.NotDone when a
// rerun resumes the job.
func (s *RedriveSummary) finish(ctx context.Context, api *sqs.Client, dlq cli.QueueInfo, c *cli.Common, w cli.Streams, err error) error {
	var nd *cli.NotDone
	switch {
	case errors.As(err, &nd):
		s.Status, s.Done, s.Why, s.taskGoesOn = "not done", false, nd.Why, nd.TaskGoesOn
	case err != nil && s.Status == "":
		s.Status, s.Done, s.Why = "failed", false, err.Error()
	}
	if err != nil {
		for _, e := range unjoin(err) {
			s.Errors = append(s.Errors, e.Error())
		}
	}
	if s.fails == nil {
		s.fails = &callFailures{}
	}
	if s.lost != nil {
		s.lost.mu.Lock()
		if s.LostReceives = s.lost.n; s.lost.n > 0 {
			until := s.lost.until
			s.LostReceivesVisibleBy = &until
		}
		s.lost.mu.Unlock()
	}
	s.countLeft(ctx, api, dlq.URL, w.Text(c))
	s.FailedCalls = s.fails.report()
	if s.Done {
		s.Resume = ""
	}
	var result error
	switch {
	case s.Done && err == nil && s.keptTotal() > 0:
		result = leftBehind(s.staying())
	case s.Done && err == nil:
	case s.Status == "failed" && s.Moved == 0 && s.MovedEarlier == 0:
		result, s.Resume = err, "" // nothing changed: run it again once the cause is fixed
	default:
		result = &cli.NotDone{Why: s.Why}
	}
	if s.audit != nil && s.audit.werr != nil {
		s.AuditIncomplete = s.audit.werr.Error()
	}
	text := s.text()
	if c.Output == "json" {
		cli.WriteJSON(w.Out, s)
	} else if !s.DryRun && s.Status != "empty" {
		fmt.Fprint(w.Out, text)
	}
	s.audit.close(text)
	return result
}

// messages is "1 message" or "N messages".
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}

// keptTotal is how many messages the run kept in the DLQ by rule (bad input, older than
// the record TTL, behind one of those in a FIFO group).
func (s *RedriveSummary) keptTotal() int {
	return s.Kept["badInput"] + s.Kept["olderThanRecordTTL"] + s.Kept["behindInFifoGroup"]
}

// behindThem is ", and every message behind them in their FIFO groups" on a FIFO queue, whose
// receive hands out no message behind one that stays: those are not counted as kept.
func (s *RedriveSummary) behindThem() string {
	if s.fifo() {
		return ", and every message behind them in their FIFO groups"
	}
	return ""
}

func (s *RedriveSummary) fifo() bool { return strings.HasSuffix(s.DLQ, ".fifo") }

// staying says how many messages stay in the DLQ of a run that is done: the left line's
// count (visible and in flight, read after the run's last change) when it was read, so the
// closing lines and the left line give one number; else the kept ones, "at least" on a FIFO
// queue, whose groups hold back more than the run received.
func (s *RedriveSummary) staying() string {
	n, how := s.keptTotal(), ""
	switch {
	case s.LeftVisible != nil:
		n, how = int(*s.LeftVisible+*s.LeftInFlight), " (the left line's count)"
	case s.fifo():
		how = " at least (the left count is unknown)"
	}
	verb := " stay"
	if n == 1 {
		verb = " stays"
	}
	return messages(n) + verb + " in the DLQ by rule" + how
}

// leftBehind is a redrive that did its job but left messages in the DLQ by rule (staying
// says how many), each kept one named in its summary with the flag that would move it: it
// exits cli.ExitLeft.
func leftBehind(staying string) error {
	return &cli.Left{Msg: fmt.Sprintf("done, but %s: the summary's \"kept\" says why, and which flag would move them", staying)}
}

// countLeft reads what is left in the DLQ after the run's last change. A count that fails
// (the network) is tried again for up to countWait; once only, without the SDK's retries,
// after Ctrl-C or after an outage that stopped the run. Then the counts are unknown, with why. When SQS still counts messages in flight that the run
// holds none of, it reads again, twice, a second apart: SQS's counts lag its changes.
func (s *RedriveSummary) countLeft(ctx context.Context, api *sqs.Client, url string, out io.Writer) {
	wait := cmp.Or(s.countWait, countWait)
	var opts []func(*sqs.Options)
	if !s.downSince.IsZero() {
		wait, opts = 0, []func(*sqs.Options){oneAttempt}
	}
	var failingSince time.Time
	rereads := 0
	for {
		cctx, cancel := settled(ctx)
		q, err := cli.GetQueue(cctx, api, url, opts...)
		cancel()
		if err == nil {
			if q.InFlight > 0 && rereads < 2 && !s.DryRun && s.Hidden == 0 && len(s.NotGivenBack) == 0 && s.Undeleted == 0 {
				rereads++
				time.Sleep(time.Second)
				continue
			}
			at := time.Now()
			s.LeftVisible, s.LeftInFlight, s.LeftCountedAt = &q.Visible, &q.InFlight, &at
			return
		}
		cause := s.fails.add("count", err)
		if failingSince.IsZero() {
			failingSince = time.Now()
			if ctx.Err() == nil && wait > 0 {
				fmt.Fprintf(out, "could not count what is left in the DLQ at %s: %s; trying again for up to %s\n", clock(failingSince), cause, wait)
			}
		}
		if !s.downSince.IsZero() {
			s.LeftUnknown = fmt.Sprintf("could not count at %s (one try, after no answer since %s): %s", clock(failingSince), clock(s.downSince), cause)
			return
		}
		if ctx.Err() != nil || time.Since(failingSince) >= wait {
			s.LeftUnknown = fmt.Sprintf("could not count since %s (tried for %s): %s", clock(failingSince), time.Since(failingSince).Round(time.Second), cause)
			return
		}
		time.Sleep(2 * time.Second)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// text is the summary's last lines, as printed and as the audit trail ends.
func (s *RedriveSummary) text() string {
	var w strings.Builder
	fmt.Fprintf(&w, "moved        %d", s.Moved)
	if s.MovedEarlier > 0 {
		fmt.Fprintf(&w, ", and %d whose copies an earlier run had sent (deleted from the DLQ now, not sent again)", s.MovedEarlier)
	}
	fmt.Fprintln(&w)
	if n := len(s.PossiblyDoubled); n > 0 {
		fmt.Fprintf(&w, "twice?       %d possibly in the destination twice: a send got no answer (the network) and was sent again: %s. "+
			"The consumer runs each key's effect once and answers a second copy as a duplicate (its Duplicate metric) while the record lives\n",
			n, strings.Join(s.PossiblyDoubled, ", "))
	}
	if s.GaveBack > 0 {
		fmt.Fprintf(&w, "gave back    %s this run held: visible again at once\n", messages(s.GaveBack))
	}
	if n := len(s.NotGivenBack); n > 0 {
		cause := "the call failed"
		if f := s.fails.byKind["give back"]; f != nil {
			cause = f.Cause
		}
		fmt.Fprintf(&w, "HIDDEN       %s this run held could not be given back (%s): they stay hidden until %s, then a rerun sees them: %s\n",
			messages(n), cause, clock(*s.NotGivenBackBy), strings.Join(s.NotGivenBack, ", "))
	}
	s.left(&w)
	for i, l := range s.fails.lines() {
		fmt.Fprintf(&w, "%-13s%s\n", map[bool]string{true: "failed calls", false: ""}[i == 0], l)
	}
	s.auditLine(&w)
	s.closing(&w)
	return w.String()
}

// left writes the lost and left lines: what the DLQ holds after the run, and what it kept.
func (s *RedriveSummary) left(w *strings.Builder) {
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
	if s.LostReceives > 0 {
		what := "1 receive got no whole answer (the network, or an answer cut off): it"
		if s.LostReceives > 1 {
			what = fmt.Sprintf("%d receives got no whole answer (the network, or answers cut off): each", s.LostReceives)
		}
		fmt.Fprintf(w, "lost         %s may have taken up to 10 messages that nobody can give back; "+
			"they stay hidden until %s at the latest, then a rerun sees them\n", what, clock(*s.LostReceivesVisibleBy))
	}
	switch {
	case s.LeftVisible != nil && s.taskGoesOn:
		fmt.Fprintf(w, "left         in the DLQ: %d visible, %d in flight (SQS's approximate counts, read at %s while the move task still runs: they go on falling)",
			*s.LeftVisible, *s.LeftInFlight, clock(*s.LeftCountedAt))
	case s.LeftVisible != nil:
		fmt.Fprintf(w, "left         in the DLQ: %d visible, %d in flight (SQS's approximate counts, read at %s after the run's last change",
			*s.LeftVisible, *s.LeftInFlight, clock(*s.LeftCountedAt))
		if *s.LeftInFlight > 0 && s.Hidden == 0 && len(s.NotGivenBack) == 0 {
			if s.LostReceives > 0 {
				fmt.Fprint(w, "; this run holds none of those in flight: the receives that got no answer (above) hide them, or another reader does")
			} else if s.fails.byKind["receive"] != nil {
				fmt.Fprintf(w, "; this run holds none of those in flight: a receive of this run's whose answer was lost hides its messages until %s, or another reader holds them",
					clock(s.fails.byKind["receive"].Last.Add(s.hold)))
			} else {
				fmt.Fprintf(w, "; this run holds none of those in flight: another reader does, a receive whose answer was lost hides its batch "+
					"(it reappears within the hold, %s), or SQS's count lags", cmp.Or(s.hold, RedriveHold))
			}
		}
		fmt.Fprint(w, ")")
	default:
		fmt.Fprintf(w, "left         in the DLQ: unknown: %s", s.LeftUnknown)
	}
	if len(kept) > 0 {
		fmt.Fprintf(w, "; kept: %s", strings.Join(kept, ", "))
	}
	fmt.Fprintln(w)
}

// auditLine writes where the run's audit trail is, and what it holds.
func (s *RedriveSummary) auditLine(w *strings.Builder) {
	switch {
	case s.Audit != "" && s.AuditIncomplete != "":
		fmt.Fprintf(w, "audit        %s is INCOMPLETE: a write failed (%s); this summary is what the run knows\n", s.Audit, s.AuditIncomplete)
	case s.Audit != "" && s.taskThenMover:
		fmt.Fprintf(w, "audit        %s: the command, the move task's total, then every message the receive way sent (and as which copy), deleted, kept or could not give back; read it with: less %s\n",
			s.Audit, cli.ShellQuote(s.Audit))
	case s.Audit != "" && s.byTask:
		fmt.Fprintf(w, "audit        %s: the command, the move task and this summary (a task keeps no per-message record); read it with: less %s\n",
			s.Audit, cli.ShellQuote(s.Audit))
	case s.Audit != "":
		fmt.Fprintf(w, "audit        %s: every message this run sent (and as which copy), deleted, kept or could not give back; read it with: less %s\n",
			s.Audit, cli.ShellQuote(s.Audit))
	}
}

// closing writes the closing lines: failed, done, or not done with the command that resumes.
func (s *RedriveSummary) closing(w *strings.Builder) {
	if s.Status == "failed" && s.Moved == 0 && s.MovedEarlier == 0 {
		fmt.Fprintf(w, "FAILED       %s (exit %d): nothing moved; run the command again once the cause is fixed\n", s.Why, cli.ExitError)
		return
	}
	if s.Done {
		switch n := s.keptTotal(); {
		case n == 0:
			fmt.Fprintln(w, "done         everything to move has moved (exit 0)")
		case s.Moved == 0 && s.MovedEarlier == 0:
			fmt.Fprintf(w, "done, left   nothing moved; %s: the %d kept above%s (exit %d)\n", s.staying(), n, s.behindThem(), cli.ExitLeft)
		default:
			fmt.Fprintf(w, "done, left   everything to move has moved; %s: the %d kept above%s (exit %d)\n", s.staying(), n, s.behindThem(), cli.ExitLeft)
		}
		return
	}
	fmt.Fprintf(w, "NOT DONE     %s (exit %d)\n", s.Why, cli.ExitNotDone)
	if s.Resume != "" {
		fmt.Fprintf(w, "resume with  %s\n", s.Resume)
		if s.Journal != "" {
			fmt.Fprintf(w, "             (the journal %s keeps what was sent: the rerun sends none of it again)\n", s.Journal)
		}
	}
}

// InspectReport is dlq inspect's --output json.
type InspectReport struct {
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
	j := messageJSON{ID: aws.ToString(m.MessageId), Group: group(m), Reason: reason(m), Sent: Sent(m).UTC(), FirstSent: FirstSent(m).UTC(),
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
	if a, ok := m.MessageAttributes[contract.AttrDeadLetterReason]; ok {
		j.DeadLetterReason = aws.ToString(a.StringValue)
	}
	if a, ok := m.MessageAttributes[contract.AttrSourceMessageID]; ok {
		j.SourceMessageID = aws.ToString(a.StringValue)
	}
	return j
}
