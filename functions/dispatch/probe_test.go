package dispatch

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/idempotent-sqs/pipeline/functions/msgkey"
)

// A probe event sends one probe message, marked with msgkey.AttrProbe and without the item
// key attribute, on FIFO in its own group; a malformed probe id is rejected, and nothing
// is sent.
func TestHandleProbe(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		te := newTestEnv(t, testConfig(fifo), nil)
		sum, err := te.h.Handle(context.Background(), Event{Probe: "verify-1"})
		if err != nil || sum.Sent != 1 || sum.Items != 0 {
			t.Fatalf("fifo %v: summary %+v, err %v", fifo, sum, err)
		}
		got := te.sqs.entries()
		if len(got) != 1 {
			t.Fatalf("fifo %v: %d entries, want 1", fifo, len(got))
		}
		e := got[0]
		if v := aws.ToString(e.MessageAttributes[msgkey.AttrProbe].StringValue); v != "verify-1" || len(e.MessageAttributes) != 1 {
			t.Errorf("fifo %v: attributes %+v, want only %s=verify-1", fifo, e.MessageAttributes, msgkey.AttrProbe)
		}
		if aws.ToString(e.MessageBody) != `{"pipelineProbe":"verify-1","sentBy":"dispatcher"}` {
			t.Errorf("fifo %v: body %s", fifo, aws.ToString(e.MessageBody))
		}
		if fifo && (aws.ToString(e.MessageGroupId) != "pipelinectl-probe" || aws.ToString(e.MessageDeduplicationId) != "probe-verify-1") {
			t.Errorf("group/dedup = %q/%q", aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId))
		}
		if lines := te.logLines(t, "probe dispatched"); len(lines) != 1 {
			t.Errorf("fifo %v: %d 'probe dispatched' lines", fifo, len(lines))
		}
	}
	te := newTestEnv(t, testConfig(false), nil)
	_, err := te.h.Handle(context.Background(), Event{Probe: "not valid!"})
	if !errors.Is(err, ErrInvalidEvent) || err.Error() != `invalid dispatcher event: "probe" "not valid!": a probe id is 1 to 64 letters, digits, '-', '_', '.' and ':'` || len(te.sqs.calls) != 0 {
		t.Errorf("bad probe id: err %v, %d calls", err, len(te.sqs.calls))
	}
}
