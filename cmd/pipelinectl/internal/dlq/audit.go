package dlq

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// audit is a redrive's audit trail: a file kept after the run ends, which nothing deletes.
// It has the command line at its head, then one line per thing the run did to a message:
// sent (with the copy's message id and the body's MD5, which SQS also reports for the copy),
// deleted, kept and why, possibly doubled, not given back; and the summary at its end. It is
// how an operator traces a run afterwards: which copy came from which message, which were
// sent twice. The journal is different: it is the state a rerun resumes from, compacted when
// the job is done.
type audit struct {
	path string
	f    *os.File
	werr error
}

// auditDir is where the audit trails go: a runs directory beside the journal.
func auditDir(journalPath string) (string, error) {
	if journalPath != "" {
		return filepath.Join(filepath.Dir(journalPath), "runs"), nil
	}
	dir, err := journalDir()
	if err != nil {
		return "", fmt.Errorf("redrive audit trail: no cache directory (%v); give --journal FILE, the trail goes beside it", err)
	}
	return filepath.Join(dir, "runs"), nil
}

// openAudit creates the audit trail of a run from dlq to dest in dir, named after the DLQ
// and the run's start (UTC), and writes its head.
func openAudit(dir string, dlq, dest cli.QueueInfo, method string, argv []string) (*audit, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("redrive audit trail: %v; give --journal FILE in a writable directory (the trail goes beside it)", err)
	}
	start := time.Now().UTC()
	name := dlq.ARN[strings.LastIndex(dlq.ARN, ":")+1:]
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.log", name, start.Format("20060102T150405Z"), os.Getpid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("redrive audit trail: %v; give --journal FILE in a writable directory (the trail goes beside it)", err)
	}
	a := &audit{path: path, f: f}
	a.write("# pipelinectl dlq redrive: audit trail (times UTC; md5 is the body's MD5, as SQS's MD5OfBody reports it for each copy)\n")
	a.write(fmt.Sprintf("# command      %s\n", cli.ResumeCommand(argv, true)))
	a.write(fmt.Sprintf("# DLQ          %s (%s)\n# destination  %s\n# method       %s\n", dlq.URL, dlq.ARN, dest.URL, method))
	a.event("started")
	return a, nil
}

func (a *audit) write(s string) {
	if _, err := a.f.WriteString(s); err != nil && a.werr == nil {
		a.werr = err
	}
}

// event appends one timestamped line. A nil trail (a dry run) writes nothing.
func (a *audit) event(format string, args ...any) {
	if a == nil {
		return
	}
	a.write(time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + " " + fmt.Sprintf(format, args...) + "\n")
}

// close appends the summary's text, each line as a comment, and closes the file.
func (a *audit) close(summary string) {
	if a == nil {
		return
	}
	a.event("ended")
	for line := range strings.Lines(summary) {
		a.write("# " + line)
	}
	a.f.Close()
}

// keptWhy is why a message stays in the DLQ, for the audit trail.
func keptWhy(d decision) string {
	switch d.v {
	case vBad:
		return "bad input (" + reason(d.m) + ")"
	case vExpired:
		return "older than the record TTL (first sent " + FirstSent(d.m).UTC().Format(time.RFC3339) + ")"
	case vBehind:
		return "behind " + d.blocker + " in FIFO group " + group(d.m)
	}
	return "kept"
}
