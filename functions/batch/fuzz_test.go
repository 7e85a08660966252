package batch

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// FuzzProcess drives arbitrary mixes of groups, failures, panics, duplicate and missing ids
// through Process and checks the invariants that must hold for every event: nothing lost,
// each unique id run at most once, FIFO order kept and nothing run after a group failed.
// Each input byte is one record: bits 0-1 group, bit 2 fail, bit 3 panic, bit 4 reuse the
// previous id, bit 5 no group; the first byte also picks FIFO (bit 7) and the bound.
func FuzzProcess(f *testing.F) {
	f.Add([]byte{0x80, 0x01, 0x05, 0x02, 0x01})
	f.Add([]byte{0x03, 0x14, 0x08, 0x00})
	f.Add([]byte{0x81, 0x20, 0x24, 0x21, 0x10, 0x09})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 200 {
			return
		}
		fifo := data[0]&0x80 != 0
		conc := int(data[0]&0x07) + 1
		var ev events.SQSEvent
		fail, panics := map[string]bool{}, map[string]bool{}
		for i, b := range data {
			id := fmt.Sprintf("m%d", i)
			if b&0x10 != 0 && i > 0 {
				id = ev.Records[i-1].MessageId
			}
			group := fmt.Sprintf("g%d", b&0x03)
			if b&0x20 != 0 {
				group = ""
			}
			arn := stdARN
			if fifo {
				arn = fifoARN
			}
			ev.Records = append(ev.Records, sqsMsg(id, group, arn))
			fail[id] = fail[id] || b&0x04 != 0
			panics[id] = panics[id] || b&0x08 != 0
		}
		p, _ := newTestProcessor(t, Options{Concurrency: conc})
		rec := newRecorder()
		rep := p.Process(context.Background(), ev, rec.wrap(func(_ context.Context, m events.SQSMessage) error {
			if panics[m.MessageId] {
				panic("fuzz panic")
			}
			if fail[m.MessageId] {
				return errBoom
			}
			return nil
		}))
		checkAccounted(t, ev, rep)
		for id, n := range rec.count {
			if n != 1 {
				t.Fatalf("%s ran %d times", id, n)
			}
		}
		if !fifo {
			for _, r := range ev.Records {
				if rec.count[r.MessageId] != 1 {
					t.Fatalf("standard: %s ran %d times, want once", r.MessageId, rec.count[r.MessageId])
				}
			}
			return
		}
		// FIFO: per group, calls follow event order (of first occurrences) and stop at the
		// first failure.
		for g, calls := range rec.byGroup {
			var want []string
			for i, r := range ev.Records {
				if r.Attributes["MessageGroupId"] != g || rep.Results[i].Duplicate {
					continue
				}
				want = append(want, r.MessageId)
				if fail[r.MessageId] || panics[r.MessageId] {
					break
				}
			}
			if !slices.Equal(calls, want) {
				t.Fatalf("group %q ran %q, want %q", g, calls, want)
			}
		}
	})
}
