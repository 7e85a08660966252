package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/stacks"
)

// reference is the reference stack synthesized once for the package (stage ctrlc, a 3 s
// consumer timeout; no bundling: the kit builds the functions from their source).
var reference struct {
	once sync.Once
	dir  string
}

func referenceAssembly(t *testing.T) string {
	t.Helper()
	reference.once.Do(func() {
		dir, err := os.MkdirTemp("", "pipelinectl-assembly-")
		if err != nil {
			t.Fatal(err)
		}
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(dir), Context: &map[string]any{"aws:cdk:bundling-stacks": []string{}}})
		stacks.Build(app, stacks.Config{Stage: "ctrlc", ConsumerTimeout: 3 * time.Second})
		app.Synth(nil)
		reference.dir = dir
	})
	if reference.dir == "" {
		t.Fatal("the reference stack was not synthesized (see the first test that asked for it)")
	}
	return reference.dir
}

// `pipelinectl local up` stopped with Ctrl-C, once up and once while it starts: it ends
// every process it started (the two JVMs and the function processes, found through /proc
// as its descendants just before the signal), says so, and exits 0 once up (stopping is
// how a session ends) or 3 when interrupted while starting.
func TestLocalUpSIGINT(t *testing.T) {
	t.Parallel()
	bin := ctlBinary(t)
	asm := referenceAssembly(t)
	msgs := filepath.Join(t.TempDir(), "msgs.txt")
	if err := os.WriteFile(msgs, []byte("{\"idempotencyKey\":\"a\"}\n{\"idempotencyKey\":\"a\"}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	many := filepath.Join(t.TempDir(), "many.txt") // minutes of sending: the signal comes while it sends
	var lines strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&lines, "{\"idempotencyKey\":\"m-%d\"}\n", i)
	}
	if err := os.WriteFile(many, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, after string // the line after which the signal goes
		send        string
		code        int
		want        []string
	}{
		{"up", "Ctrl-C stops everything.", msgs, cli.ExitOK, []string{"sent 3 messages", "local: stopped; nothing is left running"}},
		{"starting", "local: starting DynamoDB Local and ElasticMQ", msgs, cli.ExitNotDone, []string{"interrupted while starting; everything started so far was stopped, nothing is left running"}},
		{"sending", "Ctrl-C stops everything.", many, cli.ExitNotDone, []string{"interrupted while sending " + many + ": ", " of its 200000 messages were sent, the next 10 perhaps; " +
			"the local queues and tables were in memory and are gone with the rest, nothing is left running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "local", "up", "--assembly", asm, "--send", tc.send, "--pipeline", "Standard")
			proc, err := localproc.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer proc.Stop()
			// Its own deadline, well under the package's: a local up that cannot start fails
			// here at once with its exit status and output.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			err = proc.WaitOutput(ctx, tc.after)
			cancel()
			if err != nil {
				t.Fatalf("pipelinectl local up: %v", err)
			}
			if tc.name == "up" {
				// Until up's status line says the bad message's DLQ alarm is in ALARM (the
				// kit evaluates alarms on a clock 30 times the wall clock: seconds, more on a
				// busy machine).
				wait := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				err := proc.WaitOutput(ctx, "alarms in ALARM: MonitoringQueueStandardDeadLetterMessages")
				cancel()
				if err != nil {
					t.Fatalf("local up's status lines: %v\n%s", err, proc.Output())
				}
				t.Logf("the DLQ alarm in ALARM %v after up", time.Since(wait).Round(100*time.Millisecond))
				// In another shell, as up says: pipelinectl status and verify with the
				// exports it printed, against the kit's SQS, DynamoDB, Lambda, CloudWatch
				// and CloudFormation stand-ins (--stack reads the outputs from
				// DescribeStacks). The bad message sent is in the DLQ: both see it, and its
				// alarm.
				var env []string
				for _, line := range strings.Split(proc.Output(), "\n") {
					if e, ok := strings.CutPrefix(line, "  export "); ok {
						env = append(env, e)
					}
				}
				outputs := []string{"--stack", "IdempotentSqsPipeline-ctrlc"}
				for _, args := range [][]string{{"status"}, {"verify", "--pipeline", "Standard", "--timeout", "2m"},
					{"backfill", "--pipeline", "Standard", "--from", "2026-11-26T18:00:00Z", "--to", "2026-11-26T20:00:00Z"}} {
					c := exec.Command(bin, append(args, outputs...)...)
					c.Env = append(os.Environ(), env...)
					got, _ := c.CombinedOutput()
					t.Logf("pipelinectl %s against the kit: exit %d\n%s", args[0], c.ProcessState.ExitCode(), got)
					want := map[string][]string{
						"status": {"consumer  StandardConsumer", "Enabled, last processing result \"OK\", batch size 10", "PROBLEM   messages in the DLQ: 1",
							"PROBLEM   alarm MonitoringQueueStandardDeadLetterMessages"},
						"verify": {"Standard     OK: probe pipelinectl-probe-", "completed, and the dispatcher's, in ",
							"Standard     FAILED: alarm MonitoringQueueStandardDeadLetterMessages"},
						"backfill": {"schedule     StandardDispatcherSchedule", ": cron(0 * * * ? *) in UTC (ENABLED)", "occurrences  2 in [2026-11-26T18:00:00Z, 2026-11-26T20:00:00Z)",
							"Dry run: nothing dispatched."},
					}[args[0]]
					wantContains(t, "pipelinectl "+args[0]+" against local up", string(got), want...)
				}
			}
			started := localproc.Descendants(cmd.Process.Pid)
			for deadline := time.Now().Add(time.Minute); len(started) < 2 && time.Now().Before(deadline); started = localproc.Descendants(cmd.Process.Pid) {
				time.Sleep(20 * time.Millisecond) // starting: until both servers' JVMs run
			}
			start := time.Now()
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			<-proc.Exited()
			stopped := time.Since(start)
			code := cmd.ProcessState.ExitCode()
			var left []int
			for _, pid := range started {
				if localproc.Alive(pid) {
					left = append(left, pid)
				}
			}
			t.Logf("SIGINT %s: exit %d, stopped %v after the signal; %d processes it had started, %d left\n%s",
				tc.name, code, stopped.Round(time.Millisecond), len(started), len(left), proc.Output())
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if len(left) > 0 {
				t.Errorf("processes left running after SIGINT: %v", left)
			}
			if len(started) < 2 {
				t.Errorf("only %d descendants seen before the signal (want at least the two servers): the check proves nothing", len(started))
			}
			wantContains(t, "SIGINT "+tc.name, proc.Output(), tc.want...)
		})
	}
}
