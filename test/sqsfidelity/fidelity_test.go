package sqsfidelity

import (
	"os"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/testmain"
)

var srv *sqslocal.Server

func TestMain(m *testing.M) { os.Exit(testmain.With(m, sqslocal.Start, &srv)) }

// knownGaps are the checks each server is measured to fail (test/sqsfidelity/README.md), with
// what that means for the e2e suite. The test requires exactly these to fail: any other
// failure is a regression, and a gap that closes must be removed here (and from the README).
var knownGaps = map[sqslocal.Kind]map[string]string{
	sqslocal.Fauxqs: {
		"FIFO batch of one group":                      "ReceiveMessage returns one message of a group a call, never its followers",
		"FIFO receive count of batch followers":        "followers are never received with the head, so they are not dead-lettered with it",
		"batch results (send, partial delete failure)": "DeleteMessageBatch reports an invalid receipt handle as deleted",
		"RedriveAllowPolicy enforced":                  "a DLQ's RedriveAllowPolicy is kept but not enforced",
	},
	sqslocal.ElasticMQ: {
		"template attributes kept (read back)": "MessageRetentionPeriod and RedriveAllowPolicy are accepted and dropped",
		"RedriveAllowPolicy enforced":          "a DLQ's RedriveAllowPolicy is not enforced",
	},
	sqslocal.Moto: {
		"FIFO order within a group":             "received FIFO messages carry no SequenceNumber",
		"FIFO receive count of batch followers": "when a group's batch becomes visible again, it serves the last message first, alone",
		"FIFO dedup id (also after delete)":     "a deleted message's dedup id is forgotten",
		"template attributes kept (read back)":  "RedriveAllowPolicy is accepted and dropped",
		"RedriveAllowPolicy enforced":           "a DLQ's RedriveAllowPolicy is not enforced",
	},
}

// TestFidelity runs every check against the server the e2e suite uses (sqslocal.Default, or
// $SQSLOCAL_KIND). A check that fails unexpectedly means that server would let an e2e test pass
// on behaviour SQS does not have, or fail on behaviour it has.
//
// As RunChecks does: the Timed checks run one after another, alone, and the others in
// parallel after them (a parallel subtest waits until this function has returned).
func TestFidelity(t *testing.T) {
	e := NewEnv(srv)
	gaps := knownGaps[srv.Kind()]
	for _, c := range Checks {
		t.Run(c.Name, func(t *testing.T) {
			if !c.Timed {
				t.Parallel()
			}
			note, err := c.Run(t.Context(), e)
			gap, known := gaps[c.Name]
			switch {
			case err != nil && known:
				t.Logf("%s: known gap (%s): %v", srv.Kind(), gap, err)
			case err != nil:
				t.Fatalf("%s: %v", srv.Kind(), err)
			case known:
				t.Fatalf("%s: passes now (%s), but knownGaps says %q: remove it there and in README.md", srv.Kind(), note, gap)
			default:
				t.Logf("%s: %s", srv.Kind(), note)
			}
		})
	}
}

func TestKnownGapsNameChecks(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Checks {
		names[c.Name] = true
	}
	for kind, gaps := range knownGaps {
		for name := range gaps {
			if !names[name] {
				t.Errorf("knownGaps[%s] names %q, which is no check", kind, name)
			}
		}
	}
}
