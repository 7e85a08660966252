package batch

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

type customPanic struct{ code int }

func TestPanicFailsOnlyItsRecord(t *testing.T) {
	values := []struct {
		name     string
		value    any
		wantText string
	}{
		{name: "string", value: "index out of range", wantText: "handler panicked: index out of range"},
		{name: "error", value: errors.New("nil map write"), wantText: "handler panicked: nil map write"},
		{name: "struct", value: customPanic{code: 7}, wantText: "handler panicked: {7}"},
		{name: "nil", value: nil, wantText: "handler panicked: panic called with nil argument"},
	}
	cases := []struct {
		name  string
		event events.SQSEvent
		want  map[string]Status
	}{
		{name: "standard", event: stdEvent("m1", "boom", "m3"),
			want: map[string]Status{"m1": StatusSucceeded, "boom": StatusPanicked, "m3": StatusSucceeded}},
		{name: "fifo", event: fifoEvent("A:m1", "A:boom", "B:m3", "A:m4"),
			want: map[string]Status{"m1": StatusSucceeded, "boom": StatusPanicked, "m3": StatusSucceeded,
				"m4": StatusSkippedGroupFailed}},
	}
	for _, v := range values {
		for _, e := range cases {
			t.Run(v.name+"/"+e.name, func(t *testing.T) {
				p, logs := newTestProcessor(t, Options{Concurrency: 2})
				rep := p.Process(context.Background(), e.event, func(_ context.Context, msg events.SQSMessage) error {
					if msg.MessageId == "boom" {
						panic(v.value)
					}
					return nil
				})
				checkAccounted(t, e.event, rep)
				if got := statusesByID(rep); !maps.Equal(got, e.want) {
					t.Errorf("statuses %v, want %v", got, e.want)
				}
				var pe *PanicError
				res := rep.Results[1]
				if !errors.As(res.Err, &pe) || !strings.Contains(res.Err.Error(), v.wantText) {
					t.Fatalf("err = %v, want *PanicError containing %q", res.Err, v.wantText)
				}
				if _, isNil := pe.Value.(*runtime.PanicNilError); v.value != nil && pe.Value != v.value || v.value == nil && !isNil {
					t.Errorf("PanicError.Value = %#v, want %#v", pe.Value, v.value)
				}
				var panicLines []map[string]any
				for _, l := range logs.lines(t, "batch record not processed") {
					if l["status"] == "panicked" {
						panicLines = append(panicLines, l)
					}
				}
				if len(panicLines) != 1 || panicLines[0]["level"] != "ERROR" ||
					!strings.Contains(panicLines[0]["stack"].(string), "panic_test.go") {
					t.Errorf("want one ERROR log with the stack, got %v", panicLines)
				}
			})
		}
	}
}
