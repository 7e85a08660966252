package validate

import (
	"errors"
	"testing"
)

func TestProblemsCollectsEveryProblemAndFailsOnce(t *testing.T) {
	p := New("ProcessingQueue", "Orders")
	if err := p.Err(); err != nil {
		t.Fatalf("no problems recorded, got %v", err)
	}
	p.Add("MaxReceiveCount", 0, "use a value from 1 to 1000")
	p.Addf("VisibilityTimeout", "%s is shorter than 6x the consumer timeout", "1m0s")

	err := p.Err()
	var verr *Error
	func() {
		defer func() { verr, _ = AsError(recover()) }()
		p.Check()
	}()
	if verr == nil || len(verr.Problems) != 2 {
		t.Fatalf("Check must panic with both problems, got %#v", verr)
	}
	want := "ProcessingQueue \"Orders\": invalid props:\n  - MaxReceiveCount: got 0; use a value from 1 to 1000\n" +
		"  - VisibilityTimeout: 1m0s is shorter than 6x the consumer timeout"
	if err.Error() != want {
		t.Fatalf("message:\n%s\nwant:\n%s", err, want)
	}
}

func TestAsErrorIgnoresOtherPanics(t *testing.T) {
	for _, r := range []any{nil, "boom", errors.ErrUnsupported} {
		if _, ok := AsError(r); ok {
			t.Errorf("AsError(%v) = ok, want not a validation error", r)
		}
	}
}
