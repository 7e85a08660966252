package batch

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestEmptyEventRespondsWithEmptyList(t *testing.T) {
	p, _ := newTestProcessor(t, Options{})
	for name, rep := range map[string]Report{
		"Process of empty event": p.Process(context.Background(), events.SQSEvent{}, failIDs()),
		"zero Report":            {},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(rep.Response())
			if err != nil || string(raw) != `{"batchItemFailures":[]}` {
				t.Errorf("response = %s (%v), want {\"batchItemFailures\":[]}", raw, err)
			}
		})
	}
}

func TestNilHandlerFailsEveryRecord(t *testing.T) {
	p, _ := newTestProcessor(t, Options{})
	ev := fifoEvent("A:a1", "B:b1", "A:a1")
	rep := p.Process(context.Background(), ev, nil)
	checkAccounted(t, ev, rep)
	for _, res := range rep.Results {
		if res.Status != StatusFailed || !errors.Is(res.Err, ErrNilHandler) {
			t.Errorf("%s = %v (%v), want failed with ErrNilHandler", res.MessageID, res.Status, res.Err)
		}
	}
}

// A message id repeated in one event runs once; its copies mirror the outcome and the
// response names the id once.
func TestDuplicateMessageIDs(t *testing.T) {
	tests := []struct {
		name      string
		event     events.SQSEvent
		fail      []string
		wantCalls []string
		want      []Status // per record, event order
		wantDup   []bool
		wantResp  []string
	}{
		{
			name:  "standard, first copy succeeds",
			event: stdEvent("m1", "m2", "m1", "m3", "m2"), fail: []string{"m2"},
			wantCalls: []string{"m1", "m2", "m3"},
			want:      []Status{StatusSucceeded, StatusFailed, StatusSucceeded, StatusSucceeded, StatusFailed},
			wantDup:   []bool{false, false, true, false, true},
			wantResp:  []string{"m2"},
		},
		{
			name:  "fifo, copy inside the group does not stop it",
			event: fifoEvent("A:m1", "A:m1", "A:m2"),
			// Order within A kept; the copy is not run again.
			wantCalls: []string{"m1", "m2"},
			want:      []Status{StatusSucceeded, StatusSucceeded, StatusSucceeded},
			wantDup:   []bool{false, true, false},
			wantResp:  nil,
		},
		{
			name:  "fifo, first copy fails",
			event: fifoEvent("A:m1", "A:m1", "A:m2", "B:m3"), fail: []string{"m1"},
			wantCalls: []string{"m1", "m3"},
			want:      []Status{StatusFailed, StatusFailed, StatusSkippedGroupFailed, StatusSucceeded},
			wantDup:   []bool{false, true, false, false},
			wantResp:  []string{"m1", "m2"},
		},
		{
			name:      "fifo, copy in another group waits for nothing",
			event:     fifoEvent("A:m1", "B:m1", "B:m2"),
			wantCalls: []string{"m1", "m2"},
			want:      []Status{StatusSucceeded, StatusSucceeded, StatusSucceeded},
			wantDup:   []bool{false, true, false},
		},
		{
			name:  "empty ids are not duplicates of each other",
			event: stdEvent("", "", "m1"), fail: []string{""},
			wantCalls: []string{"", "", "m1"},
			want:      []Status{StatusFailed, StatusFailed, StatusSucceeded},
			wantDup:   []bool{false, false, false},
			// Lambda reads an empty itemIdentifier as "the whole batch failed": safe.
			wantResp: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProcessor(t, Options{Concurrency: 1})
			rec := newRecorder()
			rep := p.Process(context.Background(), tt.event, rec.wrap(failIDs(tt.fail...)))
			checkAccounted(t, tt.event, rep)
			if got := rec.seen(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("handler saw %q, want %q", got, tt.wantCalls)
			}
			for i, res := range rep.Results {
				if res.Status != tt.want[i] || res.Duplicate != tt.wantDup[i] {
					t.Errorf("record %d (%s) = %v dup=%v, want %v dup=%v",
						i, res.MessageID, res.Status, res.Duplicate, tt.want[i], tt.wantDup[i])
				}
			}
			var got []string
			for _, f := range rep.Response().BatchItemFailures {
				got = append(got, f.ItemIdentifier)
			}
			if !slices.Equal(got, tt.wantResp) {
				t.Errorf("batchItemFailures = %q, want %q", got, tt.wantResp)
			}
		})
	}
}

// FIFO records without MessageGroupId form one ordered group of their own.
func TestFIFOMissingGroupID(t *testing.T) {
	tests := []struct {
		name      string
		event     events.SQSEvent
		fail      []string
		wantOrder []string // calls of the ungrouped records
		wantCount float64  // ungrouped records, as logged
		want      map[string]Status
	}{
		{
			name:  "ungrouped records keep order, a failure stops only them",
			event: fifoEvent("x1", "A:a1", "x2", "x3", "A:a2"), fail: []string{"x2"},
			wantOrder: []string{"x1", "x2"}, wantCount: 3,
			want: map[string]Status{"x1": StatusSucceeded, "x2": StatusFailed, "x3": StatusSkippedGroupFailed,
				"a1": StatusSucceeded, "a2": StatusSucceeded},
		},
		{
			name: "mixed queues: one FIFO record makes the event FIFO",
			event: events.SQSEvent{Records: append(stdEvent("s1").Records,
				fifoEvent("A:a1", "A:a2").Records...)},
			fail:      []string{"a1"},
			wantOrder: []string{"s1"}, wantCount: 1,
			want: map[string]Status{"s1": StatusSucceeded, "a1": StatusFailed, "a2": StatusSkippedGroupFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, logs := newTestProcessor(t, Options{Concurrency: 4})
			rec := newRecorder()
			rep := p.Process(context.Background(), tt.event, rec.wrap(failIDs(tt.fail...)))
			checkAccounted(t, tt.event, rep)
			if got := rec.byGroup[""]; !slices.Equal(got, tt.wantOrder) {
				t.Errorf("ungrouped calls %q, want %q", got, tt.wantOrder)
			}
			if got := statusesByID(rep); !maps.Equal(got, tt.want) {
				t.Errorf("statuses %v, want %v", got, tt.want)
			}
			warn := logs.lines(t, "FIFO records without MessageGroupId run as one ordered group")
			if len(warn) != 1 || warn[0]["level"] != "WARN" || warn[0]["count"] != tt.wantCount {
				t.Errorf("want one WARN with the count, got %v", warn)
			}
		})
	}
}

func TestFailuresAreLoggedWithContext(t *testing.T) {
	p, logs := newTestProcessor(t, Options{})
	ev := fifoEvent("A:a1", "A:a2", "B:b1")
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "4"
	ev.Records[2].Attributes["ApproximateReceiveCount"] = "not-a-number"
	rep := p.Process(context.Background(), ev, failIDs("a1", "b1"))
	checkAccounted(t, ev, rep)

	got := logs.lines(t, "batch record not processed")
	want := []map[string]any{
		{"level": "WARN", "messageId": "a1", "groupId": "A", "receiveCount": float64(4), "status": "failed",
			"reason": "process a1: boom"},
		{"level": "WARN", "messageId": "a2", "groupId": "A", "receiveCount": float64(2), "status": "skipped_group_failed",
			"reason": "not run: an earlier record of its message group failed (message a1: failed)"},
		{"level": "WARN", "messageId": "b1", "groupId": "B", "receiveCount": "not-a-number", "status": "failed",
			"reason": "process b1: boom"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d failure lines, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		delete(got[i], "timestamp")
		delete(got[i], "message")
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("line %d = %v\nwant %v", i, got[i], want[i])
		}
	}
	summary := logs.lines(t, "batch processed")
	if len(summary) != 1 || summary[0]["failed"] != float64(2) || summary[0]["skippedGroupFailed"] != float64(1) ||
		summary[0]["fifo"] != true {
		t.Errorf("summary %v", summary)
	}
}

// Events as Lambda delivers them (testdata/), with the response Lambda expects back.
func TestFixtures(t *testing.T) {
	tests := []struct {
		event    string
		response string
		fail     []int // record indexes whose handler fails
		want     []Status
	}{
		{
			event: "sqs_standard_event.json", response: "sqs_standard_response.json", fail: []int{1, 2},
			want: []Status{StatusSucceeded, StatusFailed, StatusFailed, StatusSucceeded},
		},
		{
			// tenant-1 at 0, 2, 5; tenant-2 at 1, 4; tenant-3 at 3.
			event: "sqs_fifo_event.json", response: "sqs_fifo_response.json", fail: []int{2},
			want: []Status{StatusSucceeded, StatusSucceeded, StatusFailed, StatusSucceeded, StatusSucceeded,
				StatusSkippedGroupFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			var ev events.SQSEvent
			readJSON(t, tt.event, &ev)
			for i, rec := range ev.Records {
				if sum := md5.Sum([]byte(rec.Body)); hex.EncodeToString(sum[:]) != rec.Md5OfBody {
					t.Fatalf("fixture record %d: md5OfBody does not match its body", i)
				}
			}
			var failIDsList []string
			for _, i := range tt.fail {
				failIDsList = append(failIDsList, ev.Records[i].MessageId)
			}
			p, _ := newTestProcessor(t, Options{})
			rep := p.Process(context.Background(), ev, failIDs(failIDsList...))
			checkAccounted(t, ev, rep)
			for i, res := range rep.Results {
				if res.Status != tt.want[i] {
					t.Errorf("record %d (%s/%s) = %v, want %v", i, res.GroupID, res.MessageID, res.Status, tt.want[i])
				}
			}
			gotJSON, err := json.Marshal(rep.Response())
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			readJSON(t, tt.response, &want)
			if err := json.Unmarshal(gotJSON, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("response %s, want testdata/%s", gotJSON, tt.response)
			}
		})
	}
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
