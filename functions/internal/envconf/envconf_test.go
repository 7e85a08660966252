package envconf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// One rule for a queue URL, the consumer's and the dispatcher's: http or https, a host, and
// exactly an account and a name, as SQS's own URLs and the local servers' are.
func TestIsQueueURL(t *testing.T) {
	for v, want := range map[string]bool{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo": true,
		"http://127.0.0.1:9324/000000000000/jobs":                    true,
		"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs/":     true,
		"https://sqs.eu-west-1.amazonaws.com/jobs":                   false,
		"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs/x":    false,
		"https://sqs.eu-west-1.amazonaws.com/":                       false,
		"ftp://sqs.eu-west-1.amazonaws.com/123456789012/jobs":        false,
		"arn:aws:sqs:eu-west-1:123456789012:jobs":                    false,
		"https:///123456789012/jobs":                                 false,
		"https://sqs.eu-west-1.amazonaws.com/123456789012/jobs?x=1":  false,
		"jobs": false,
	} {
		if got := IsQueueURL(v); got != want {
			t.Errorf("IsQueueURL(%q) = %v, want %v", v, got, want)
		}
	}
}

// Every problem is reported at once, each naming its variable, under the caller's sentinel;
// unset and "" optional variables take their defaults.
func TestReaderCollectsEveryProblem(t *testing.T) {
	env := map[string]string{"D": "soon", "I": "11", "B": "yes", "Q": "jobs", "E": ""}
	r := New(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if d := r.Duration("D", time.Second, 0, time.Minute, "a duration"); d != time.Second {
		t.Errorf("Duration = %v, want the default after a problem", d)
	}
	if n := r.Int("I", 3, 1, 10); n != 3 {
		t.Errorf("Int = %d, want the default after a problem", n)
	}
	r.Bool("B", false)
	r.QueueURL("Q", false)
	r.QueueURL("MISSING", true)
	if r.QueueURL("E", false) != "" || r.Int("E", 7, 1, 10) != 7 {
		t.Error(`an optional variable set to "" is not unset`)
	}
	sentinel := errors.New("invalid test configuration")
	err := r.Err(sentinel)
	if !errors.Is(err, sentinel) {
		t.Fatalf("err %v does not wrap the sentinel", err)
	}
	for _, want := range []string{
		`D="soon": want a duration`, `I="11": want an integer from 1 to 10`, `B="yes": want true or false`,
		`Q="jobs": want ` + QueueWant, `MISSING is not set: want ` + QueueWant,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err lacks %q:\n%v", want, err)
		}
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Error("the problems are not *Error")
	}
	if New(func(string) (string, bool) { return "", false }).Err(sentinel) != nil {
		t.Error("a reader with no problem has an error")
	}
}
