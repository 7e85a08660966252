//go:build riecompare

package lambdart_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// TestRIECompare runs testdata/fn behind AWS's Lambda Runtime Interface Emulator and behind
// lambdart, case by case, and prints what a caller of each sees: the evidence for docs/design.md
// ("Why not AWS's Lambda Runtime Interface Emulator"). It also checks that what the document
// says of RIE still holds for the pinned RIE ($AWS_LAMBDA_RIE, which `make rie-compare`
// installs): when a new RIE reports function errors, the kit should reconsider it.
//
//	make rie-compare
func TestRIECompare(t *testing.T) {
	rie := os.Getenv("AWS_LAMBDA_RIE")
	if rie == "" {
		t.Fatal("AWS_LAMBDA_RIE is not set: run `make rie-compare`, which installs the emulator")
	}
	type answer struct {
		status      int
		funcErr     string // X-Amz-Function-Error
		body        string
		took        time.Duration
		transportOK bool
	}
	// start runs one RIE process on two free loopback ports, with the function's timeout.
	start := func(t *testing.T, env ...string) (url string) {
		http, api := freeAddr(t), freeAddr(t)
		cmd := exec.Command(rie, "--runtime-interface-emulator-address", http, "--runtime-api-address", api, fnBinary)
		cmd.Env = append(os.Environ(), append([]string{"AWS_LAMBDA_FUNCTION_TIMEOUT=2", "AWS_LAMBDA_FUNCTION_NAME=fn"}, env...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }) // SIGTERM: RIE ends its function too
		url = "http://" + http + "/2015-03-31/functions/function/invocations"
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c, err := net.Dial("tcp", http); err == nil {
				c.Close()
				return url
			}
		}
		t.Fatalf("RIE did not listen on %s in 30 s", http)
		return ""
	}
	call := func(url, payload string) answer {
		begin := time.Now()
		res, err := http.Post(url, "application/json", strings.NewReader(payload))
		if err != nil {
			return answer{took: time.Since(begin), body: err.Error()}
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return answer{status: res.StatusCode, funcErr: res.Header.Get("X-Amz-Function-Error"), body: strings.TrimSpace(string(b)),
			took: time.Since(begin), transportOK: true}
	}
	local := func(t *testing.T, payload string, env ...string) string {
		e, err := lambdart.New(lambdart.Config{Binary: fnBinary, Timeout: 2 * time.Second, Env: envMap(env)})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := e.Invoke(ctx, []byte(payload))
		switch {
		case err != nil:
			return "error: " + oneLine(err.Error())
		case res.FunctionError != nil:
			return "FunctionError: " + oneLine(res.FunctionError.Error())
		}
		return "ok"
	}

	type row struct{ name, rie, lambdart string }
	var rows []row
	report := func(name string, a answer, lr string) {
		got := fmt.Sprintf("HTTP %d, X-Amz-Function-Error %q, body %.90q (%v)", a.status, a.funcErr, a.body, a.took.Round(time.Millisecond))
		if !a.transportOK {
			got = "no answer: " + a.body
		}
		rows = append(rows, row{name, got, lr})
	}

	// A returned error: RIE answers 200 without X-Amz-Function-Error.
	url := start(t)
	a := call(url, `{"action":"error","message":"boom"}`)
	report("the handler returns an error", a, local(t, `{"action":"error","message":"boom"}`))
	if a.status != 200 || a.funcErr != "" || !strings.Contains(a.body, `"errorMessage":"boom"`) {
		t.Errorf("RIE now answers a function error with %d %q %s: docs/design.md says 200, no X-Amz-Function-Error; revisit the kit's runtime", a.status, a.funcErr, a.body)
	}
	// A timeout: RIE answers 200 with a text body.
	a = call(url, `{"action":"sleep","sleepMs":5000}`)
	report("the handler overruns its 2 s timeout", a, local(t, `{"action":"sleep","sleepMs":5000}`))
	if a.status != 200 || a.funcErr != "" || !strings.Contains(a.body, "Task timed out after 2.00 seconds") {
		t.Errorf("RIE now answers a timeout with %d %q %s: docs/design.md says 200 and a text body; revisit the kit's runtime", a.status, a.funcErr, a.body)
	}
	// A warm invocation's latency, median of 50, each runtime.
	echo := `{"action":"echo","message":"hi"}`
	call(url, echo)
	var rieTimes []time.Duration
	for range 50 {
		rieTimes = append(rieTimes, call(url, echo).took)
	}
	e, err := lambdart.New(lambdart.Config{Binary: fnBinary, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var localTimes []time.Duration
	for i := range 51 {
		begin := time.Now()
		if _, err := e.Invoke(context.Background(), []byte(echo)); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			localTimes = append(localTimes, time.Since(begin))
		}
	}
	rows = append(rows, row{"a warm invocation, median of 50", median(rieTimes).String(), median(localTimes).String()})

	// Init failure: RIE answers 502 with an empty body.
	url = start(t, "FN_INIT=exit")
	a = call(url, echo)
	report("the function exits during init", a, local(t, echo, "FN_INIT=exit"))
	if a.status != 502 || a.body != "" {
		t.Errorf("RIE now answers an init failure with %d %q: docs/design.md says 502 and an empty body", a.status, a.body)
	}

	// Two invocations at once on one RIE: it fails both (it crashes).
	url = start(t)
	var wg sync.WaitGroup
	var both [2]answer
	for i := range both {
		wg.Go(func() { both[i] = call(url, `{"action":"sleep","sleepMs":300}`) })
	}
	wg.Wait()
	report("two invocations at once, first", both[0], "the second is refused (one invocation per environment); the kit never sends two")
	report("two invocations at once, second", both[1], "")
	if both[0].transportOK && both[1].transportOK && both[0].status == 200 && both[1].status == 200 {
		t.Errorf("RIE now serves two invocations at once: docs/design.md says it crashes")
	}

	fmt.Println("FIGURE RIE compared with internal/lambdart (testdata/fn; RIE with AWS_LAMBDA_FUNCTION_TIMEOUT=2):")
	for _, r := range rows {
		fmt.Printf("  %-40s RIE: %s\n  %-40s lambdart: %s\n", r.name, r.rie, "", r.lambdart)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func envMap(kv []string) map[string]string {
	m := map[string]string{}
	for _, e := range kv {
		k, v, _ := strings.Cut(e, "=")
		m[k] = v
	}
	return m
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 140 {
		s = s[:140] + "..."
	}
	return s
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
