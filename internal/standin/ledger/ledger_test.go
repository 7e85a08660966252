package ledger

import (
	"slices"
	"testing"
)

// A ledger that miscounts would let every scenario pass.
func TestLedgerCheck(t *testing.T) {
	l := New()
	for _, line := range []string{
		`{"message":"effect applied","idempotencyKey":"a"}`,
		`{"message":"effect applied","idempotencyKey":"b"}`,
		`{"message":"effect applied","idempotencyKey":"b"}`,
		`{"message":"effect applied","idempotencyKey":"x"}`,
		`{"message":"record outcome","outcome":"invalid_input","deadLettered":true}`,
		`{"message":"record outcome","outcome":"processed"}`,
		`{"message":"record outcome","outcome":"invalid_input","groupId":"g","deadLetterError":"dead-letter message m: context deadline exceeded"}`,
		`{"DeadLettered":0,"Processed":2,"_aws":{}}`, // EMF: JSON, not an outcome
		`panic: boom`,
	} {
		l.Line([]byte(line))
	}
	lost, twice, unexpected := l.Check([]string{"a", "b", "c"})
	if !slices.Equal(lost, []string{"c"}) || !slices.Equal(twice, []string{"b"}) || !slices.Equal(unexpected, []string{"x"}) {
		t.Errorf("Check = lost %v, twice %v, unexpected %v; want [c] [b] [x]", lost, twice, unexpected)
	}
	if got := l.Order(); !slices.Equal(got, []string{"a", "b", "b", "x"}) {
		t.Errorf("Order = %v", got)
	}
	oc := l.Outcomes()
	if oc["invalid_input"] != 2 || oc["processed"] != 1 || oc["dead_lettered"] != 1 || len(oc) != 3 {
		t.Errorf("Outcomes = %v", oc)
	}
	recs := l.Records()
	if len(recs) != 3 || recs[0].DeadLetterError != "" || recs[2].DeadLetterError != "dead-letter message m: context deadline exceeded" || recs[2].Group != "g" {
		t.Errorf("Records = %+v, want the failed dead-letter send's error on the third only", recs)
	}
	if n, last := l.NonJSON(); n != 1 || last[0] != "panic: boom" {
		t.Errorf("NonJSON = %d %v, want the one panic line", n, last)
	}
}
