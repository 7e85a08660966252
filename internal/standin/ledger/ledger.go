// Package ledger reads the consumers' structured log lines for the local kit and the
// scenario tests: how often each key's effect ran, and every record's outcome.
package ledger

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
)

// Ledger reads the consumers' structured log lines and keeps what the scenarios check: how
// many times each idempotency key's effect ran ("effect applied", the default effect's one
// line per run) and every record's outcome ("record outcome"). Feed it every output line of
// every consumer process; it is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	effects  map[string]int // key -> runs
	order    []string       // keys in the order their effects ran
	outcomes map[string]int // outcome -> records
	records  []Outcome      // every record outcome line, in the order written
	lines    int
	bad      int // lines that are not JSON (stack traces, runtime errors)
	last     []string
}

// New returns an empty Ledger.
func New() *Ledger {
	return &Ledger{effects: map[string]int{}, outcomes: map[string]int{}}
}

type logLine struct {
	Msg     string `json:"message"` // Lambda's field name (telemetry.NewLogger)
	Key     string `json:"idempotencyKey"`
	Group   string `json:"groupId"`
	Tenant  string `json:"tenant"`
	Outcome string `json:"outcome"`
	ID      string `json:"messageId"`
	Reason  string `json:"reason"`
	// Dead is raw: json matches keys case-insensitively, so the EMF line's numeric
	// "DeadLettered" lands here too.
	Dead json.RawMessage `json:"deadLettered"`
	// DeadLetterError is why the consumer could not move a rejected record to the DLQ itself
	// (the record then failed as a whole and comes back).
	DeadLetterError string `json:"deadLetterError"`
}

// Line records one output line.
func (l *Ledger) Line(b []byte) {
	var ln logLine
	err := json.Unmarshal(b, &ln)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines++
	if err != nil {
		l.bad++
		l.last = append(l.last, string(b))
		if len(l.last) > 20 {
			l.last = l.last[1:]
		}
		return
	}
	switch ln.Msg {
	case "effect applied":
		l.effects[ln.Key]++
		l.order = append(l.order, ln.Key)
	case "record outcome":
		l.outcomes[ln.Outcome]++
		l.records = append(l.records, Outcome{MessageID: ln.ID, Key: ln.Key, Group: ln.Group, Outcome: ln.Outcome, Reason: ln.Reason,
			DeadLetterError: ln.DeadLetterError})
		if string(ln.Dead) == "true" {
			l.outcomes["dead_lettered"]++
		}
	}
}

// Effects returns how many times each key's effect ran.
func (l *Ledger) Effects() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.effects)
}

// Order returns the keys in the order their effects ran.
func (l *Ledger) Order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.order)
}

// Outcomes returns the record outcome counts, and "dead_lettered": records the consumer moved
// to the DLQ itself.
func (l *Ledger) Outcomes() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.outcomes)
}

// Outcome is one "record outcome" line: the record's SQS message id, its idempotency key
// (empty when the consumer did not read it), its message group, what became of it and why,
// and, for a record the consumer rejected but could not dead-letter, why the send failed.
type Outcome struct {
	MessageID, Key, Group, Outcome, Reason, DeadLetterError string
}

// Records returns every record outcome line so far, in the order the consumers wrote them.
func (l *Ledger) Records() []Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// Check compares the effects with the keys that must each run exactly once: it returns the
// keys that never ran (lost), ran more than once (twice), and ran without being expected.
func (l *Ledger) Check(want []string) (lost, twice, unexpected []string) {
	got := l.Effects()
	wantSet := map[string]bool{}
	for _, k := range want {
		wantSet[k] = true
		switch n := got[k]; {
		case n == 0:
			lost = append(lost, k)
		case n > 1:
			twice = append(twice, k)
		}
	}
	for k := range got {
		if !wantSet[k] {
			unexpected = append(unexpected, k)
		}
	}
	slices.Sort(unexpected)
	return lost, twice, unexpected
}

// NonJSON returns how many output lines were not JSON, and the last few of them.
func (l *Ledger) NonJSON() (int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bad, slices.Clone(l.last)
}
