//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
)

var (
	ctlOnce sync.Once
	ctlBin  string
	ctlErr  error
)

// pipelinectl builds the operator's CLI once for the package, as `go install` would.
func pipelinectl(t *testing.T) string {
	t.Helper()
	ctlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "e2e-pipelinectl-")
		if err != nil {
			ctlErr = err
			return
		}
		ctlBin = filepath.Join(dir, "pipelinectl")
		out, err := exec.Command("go", "build", "-o", ctlBin, "github.com/idempotent-sqs/pipeline/cmd/pipelinectl").CombinedOutput()
		if err != nil {
			ctlErr = err
			ctlBin = string(out)
		}
	})
	if ctlErr != nil {
		t.Fatalf("build pipelinectl: %v\n%s", ctlErr, ctlBin)
	}
	return ctlBin
}

// runCtl runs pipelinectl as an operator's shell would against the local backends: the
// SDK's endpoint variables, static credentials, no config files.
func runCtl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runCtlEnv(t, nil, args...)
}

// runCtlEnv is runCtl with more environment (e.g. the endpoints of local stand-ins).
func runCtlEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	cmd := exec.CommandContext(t.Context(), pipelinectl(t), args...)
	cmd.Env = append(os.Environ(),
		"AWS_REGION="+sqslocal.Region, "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_SQS="+sqsd.Endpoint(), "AWS_ENDPOINT_URL_DYNAMODB="+ddb.Endpoint(),
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none, "AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=",
		"XDG_CACHE_HOME="+t.TempDir()) // redrive journals, not in the user's cache
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("pipelinectl %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ pipelinectl %s   (exit %d, %s)\n%s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond), out.String())
	return code, out.String()
}

// TestRedriveAfterTheRecordExpired: the deployed consumer completes a message's record, then
// its invocation dies (a later record of the batch hung past the timeout), and dies again
// every time the message comes back and is answered as a duplicate, so nothing deletes it and
// SQS moves it to the DLQ with its record COMPLETED. With the record TTL shortened to
// seconds, the record expires while the message waits there. The operator's pipelinectl
// refuses to redrive it and names it; only --include-expired moves it, and then the effect
// runs a second time: what the check prevents, and what a redrive without it did.
func TestRedriveAfterTheRecordExpired(t *testing.T) {
	checkOnly(t)
	t.Parallel()
	w := newWorld(t, "ttl")
	p := w.pipeline(false)
	const ttl = 4 * time.Second
	e := w.envWith(p.Consumer, w.consumerOutput, map[string]string{
		"IDEMPOTENCY_RECORD_TTL": ttl.String(), "IDEMPOTENCY_LOCK_CAP": "3s",
	})
	const victim = "completed-then-dead-lettered"
	var dying atomic.Bool
	dying.Store(true)
	var kills atomic.Int32
	var completedAt atomic.Int64
	w.dynamo.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		if !dying.Load() || !strings.HasSuffix(c.Key, "#"+victim) {
			return ddbproxy.Fault{}
		}
		switch {
		case c.Step == "complete":
			return ddbproxy.Fault{AfterForward: func() { completedAt.Store(time.Now().UnixNano()); kills.Add(1); e.Kill() }}
		case c.Step == "acquire" && completedAt.Load() != 0: // a duplicate now: it dies again
			return ddbproxy.Fault{AfterForward: func() { kills.Add(1); e.Kill() }}
		}
		return ddbproxy.Fault{}
	}
	pl := w.poller(p, w.invoker(e))
	w.send(p.Queue, []message{{Body: body(victim)}})
	stop := w.runPoller(pl)
	toDLQ := w.waitFor("the completed message in the DLQ", w.patience(p.Queue), func() bool {
		return w.depth(p.DLQ) == 1 && w.depth(p.Queue) == 0
	})
	dying.Store(false)
	if n := w.ledger.Effects()[victim]; n != 1 || completedAt.Load() == 0 {
		t.Fatalf("before the redrive: effect ran %d times, record completed %v; want once, completed", n, completedAt.Load() != 0)
	}
	maxRecv := w.d.Template.Queues[p.Queue].MaxReceiveCount()
	if int(kills.Load()) < maxRecv {
		t.Errorf("%d invocations died with the victim, want one per receive (%d): the scenario did not run as designed", kills.Load(), maxRecv)
	}
	// The record expires at completion + TTL, in whole seconds.
	expiry := time.Unix(0, completedAt.Load()).Add(ttl + time.Second)
	if wait := time.Until(expiry); wait > 0 {
		time.Sleep(wait)
	}
	t.Logf("the record expired %s ago", time.Since(expiry).Round(time.Millisecond))

	vars, err := w.d.Env(p.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	outputs := filepath.Join(t.TempDir(), "outputs.json")
	b, _ := json.Marshal(map[string]map[string]string{"Pipeline-e2e": {
		"StandardQueueUrl": w.d.QueueURL[p.Queue], "StandardDeadLetterQueueUrl": w.d.QueueURL[p.DLQ],
		"StandardRecordTTL": ttl.String(), "IdempotencyTableName": vars["IDEMPOTENCY_TABLE_NAME"],
	}})
	if err := os.WriteFile(outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"dlq", "redrive", "--yes", "--outputs", outputs, "--pipeline", "Standard"}
	code, out := runCtl(t, args...)
	// Done, with the message left by rule: exit 4, saying so. (That it is in the DLQ is
	// checked below, by depth.)
	for _, want := range []string{"1 to leave (0 bad input, 1 older than the record TTL)", ": stays", "moved        0\n", "left         in the DLQ: ",
		"done, left   nothing moved; 1 message stays in the DLQ by rule (the left line's count): the 1 kept above (exit 4)"} {
		if code != 4 || !strings.Contains(out, want) {
			t.Errorf("redrive: exit %d (want 4), output lacks %q", code, want)
		}
	}
	time.Sleep(2 * w.visibility(p.Queue) / 3) // room for a wrongly moved copy to be consumed
	if n := w.ledger.Effects()[victim]; n != 1 || w.depth(p.DLQ) != 1 {
		t.Fatalf("after the refused redrive: effect ran %d times, DLQ depth %d; want once and 1", n, w.depth(p.DLQ))
	}

	code, out = runCtl(t, append(args, "--include-expired")...)
	if code != 0 || !strings.Contains(out, "WARNING: moves (--include-expired)") || !strings.Contains(out, "moved        1\n") {
		t.Errorf("redrive --include-expired: exit %d, want the warning and 1 moved", code)
	}
	again := w.waitFor("the redriven copy's effect", w.patience(p.Queue), func() bool { return w.ledger.Effects()[victim] >= 2 })
	stop()
	w.quiesce()
	if n := w.ledger.Effects()[victim]; n != 2 {
		t.Errorf("after --include-expired: effect ran %d times, want 2 (the record had expired; this is what the refusal prevents)", n)
	}
	report(t, "completed, then dead-lettered after %d receives that died (%d kills) in %v; the record expired; pipelinectl kept it in the DLQ, named; --include-expired moved it and the effect ran again after %v",
		maxRecv, kills.Load(), toDLQ.Round(100*time.Millisecond), again.Round(100*time.Millisecond))
}
