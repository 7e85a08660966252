package outside

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// examples/platform is a stack built only from the constructs, as a platform team writes one
// (two pipelines, one FIFO with its construct named otherwise than its outputs, one shared
// table, one shared monitoring, the constructs' Outputs functions and nothing added by
// hand). Synthesized by the CDK CLI, it runs under `go tool pipelinectl local up`, and every
// pipelinectl command works on it by --stack alone, as on the reference stack: status and
// verify (the shared monitoring's composite alarm read), record get and release (the
// pipeline's table and its consumer's own key prefix from the outputs), dlq inspect and
// redrive, backfill (the dispatcher and its schedule), policy.
func TestALibraryStackOperatesLikeTheReferenceStack(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := newModule(t, filepath.Join(root, "examples", "platform"), t.TempDir(), root, "get")
	synth(t, dir, root)

	up, proc := localUp(t, dir, nil, 4*time.Minute, "--assembly", "cdk.out", "--cron=false")
	env, printed := printedCommands(proc.Output())
	if !slices.ContainsFunc(printed, func(c string) bool { return strings.Contains(c, "pipelinectl status --stack Platform") }) {
		t.Errorf("local up printed %q: want pipelinectl's commands for a stack whose outputs it reads", printed)
	}
	runPrinted(t, dir, env, printed)

	shellEnv := append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "AWS_PROFILE=") }),
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	shellEnv = append(shellEnv, env...)
	ctl := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", append([]string{"tool", "pipelinectl"}, args...)...)
		cmd.Dir, cmd.Env = dir, shellEnv
		start := time.Now()
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("pipelinectl %s: %v", strings.Join(args, " "), err)
		}
		t.Logf("$ pipelinectl %s  (exit %d, %v)\n%s", strings.Join(args, " "), code, time.Since(start).Round(10*time.Millisecond), out)
		return string(out), code
	}

	b, err := os.ReadFile(filepath.Join(dir, "cdk.out", "local-outputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]map[string]string
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	outputs := all["Platform"]
	for _, name := range []string{"OrdersKeyPrefix", "InvoicesKeyPrefix", "OrdersIdempotencyTableName", "InvoicesUnhealthyAlarmName", "IdempotencyTableName", "UnhealthyAlarmName"} {
		if outputs[name] == "" {
			t.Errorf("the stack has no output %s (local-outputs.json: %s)", name, b)
		}
	}
	if outputs["InvoicesKeyPrefix"] == "Invoices" {
		t.Fatalf("the invoices consumer's key prefix is its outputs' name: this test needs them to differ")
	}

	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: envValue(env, "AWS_ACCESS_KEY_ID"), SecretAccessKey: envValue(env, "AWS_SECRET_ACCESS_KEY")}, nil
	})
	sq := sqs.New(sqs.Options{Region: envValue(env, "AWS_REGION"), BaseEndpoint: aws.String(envValue(env, "AWS_ENDPOINT_URL_SQS")), Credentials: creds})
	send := func(queue, body string) {
		t.Helper()
		in := &sqs.SendMessageInput{QueueUrl: aws.String(outputs[queue]), MessageBody: aws.String(body)}
		if strings.HasSuffix(outputs[queue], ".fifo") {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String("g1"), aws.String(fmt.Sprintf("%x", len(body))+body[:min(len(body), 40)])
		}
		if _, err := sq.SendMessage(t.Context(), in); err != nil {
			t.Fatalf("send to %s: %v", queue, err)
		}
	}
	// Wide margins: the first message of each pipeline starts its function (a go build on
	// the first run of a cold cache); a busy machine takes longer still.
	waitFor := func(what string, limit time.Duration, done func() bool) {
		t.Helper()
		start := time.Now()
		for !done() {
			if time.Since(start) > limit {
				t.Fatalf("%s: not after %v", what, limit)
			}
			time.Sleep(time.Second)
		}
		t.Logf("%s after %v", what, time.Since(start).Round(100*time.Millisecond))
	}

	// A message each: its record, found by pipeline name alone (the table and key prefix
	// from the outputs).
	send("OrdersQueueUrl", `{"idempotencyKey":"lib-1"}`)
	send("InvoicesQueueUrl", `{"idempotencyKey":"lib-1"}`)
	for _, p := range []string{"Orders", "Invoices"} {
		waitFor("the record of "+p+"'s lib-1 COMPLETED", 3*time.Minute, func() bool {
			out, code := ctl("record", "get", "lib-1", "--stack", "Platform", "--pipeline", p)
			return code == 0 && strings.Contains(out, "COMPLETED")
		})
	}
	if out, code := ctl("record", "release", "lib-1", "--stack", "Platform", "--pipeline", "Invoices"); code == 0 || !strings.Contains(out, "COMPLETED") {
		t.Errorf("record release of a COMPLETED record: exit %d, want a refusal naming COMPLETED:\n%s", code, out)
	}

	if out, code := ctl("status", "--stack", "Platform"); code != 0 || strings.Contains(out, "alarms: not read") {
		t.Errorf("status: exit %d, want 0 with the alarms read:\n%s", code, out)
	}
	if out, code := ctl("verify", "--stack", "Platform"); code != 0 || !strings.Contains(out, "paging alarms of") {
		t.Errorf("verify: exit %d, want 0, both pipelines probed and the alarms checked:\n%s", code, out)
	}

	// Bad input ends in the DLQ; inspect names it, redrive moves it back on request.
	send("OrdersQueueUrl", `not json`)
	waitFor("the bad message in the Orders DLQ", 3*time.Minute, func() bool {
		out, code := ctl("dlq", "inspect", "--stack", "Platform", "--pipeline", "Orders")
		return code == 0 && strings.Contains(out, "body_not_json")
	})
	if out, code := ctl("dlq", "redrive", "--stack", "Platform", "--pipeline", "Orders", "--yes", "--include-invalid"); code != 0 || !strings.Contains(out, "moved        1") {
		t.Errorf("dlq redrive --include-invalid: exit %d, want 0 and 1 moved:\n%s", code, out)
	}

	// The dispatcher's schedule, read and run for two missed days.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if out, code := ctl("backfill", "--stack", "Platform", "--pipeline", "Orders", "--yes", "--output", "json",
		"--from", day.Add(-48*time.Hour).Format(time.RFC3339), "--to", day.Format(time.RFC3339)); code != 0 || !strings.Contains(out, `"done": true`) {
		t.Errorf("backfill: exit %d, want 0, the two occurrences dispatched:\n%s", code, out)
	}

	out, code := ctl("policy", "--stack", "Platform", "--pipeline", "Invoices")
	if code != 0 || !strings.Contains(out, "table/"+outputs["IdempotencyTableName"]) || !strings.Contains(out, "ReadAlarmStates") {
		t.Errorf("policy: exit %d, want 0 with the shared table and the alarms:\n%s", code, out)
	}
	stopWithCtrlC(t, up, proc, 2)
}
