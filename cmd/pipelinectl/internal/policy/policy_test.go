package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
)

// A pipeline with a dispatcher: --access operate allows backfill's calls (GetSchedule on
// its schedule in its group, Invoke on the dispatcher); read leaves both out. The calls of
// the dlq and record commands are checked against the document at run time, in
// pipelinectl's TestOperatorPolicyCoversEveryCall.
func TestPolicyAllowsBackfill(t *testing.T) {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_PROFILE": ""} {
		t.Setenv(k, v)
	}
	b, _ := json.Marshal(map[string]map[string]string{"S": {
		"StandardQueueUrl": "https://sqs.us-east-1.amazonaws.com/1/work", "StandardDeadLetterQueueUrl": "https://sqs.us-east-1.amazonaws.com/1/dlq",
		"StandardDispatcherFunctionName": "d", "StandardScheduleName": "s", "StandardScheduleGroupName": "g"}})
	outputs := filepath.Join(t.TempDir(), "outputs.json")
	if err := os.WriteFile(outputs, b, 0o600); err != nil {
		t.Fatal(err)
	}
	backfillCalls := []string{`"scheduler:GetSchedule"`, `"arn:aws:scheduler:us-east-1:1:schedule/g/s"`, `"lambda:InvokeFunction"`, `"arn:aws:lambda:us-east-1:1:function:d"`}
	for _, access := range []string{"operate", "read"} {
		args := []string{"--outputs", outputs, "--pipeline", "Standard", "--region", "us-east-1", "--access", access}
		var out, errOut bytes.Buffer
		if code, line := cli.Outcome(t.Context(), Run(t.Context(), args, cli.Streams{Out: &out, Err: &errOut, Argv: args}, cli.NewAWS)); code != cli.ExitOK {
			t.Fatalf("policy --access %s: exit %d: %s %s", access, code, line, errOut.String())
		}
		for _, want := range backfillCalls {
			if got := strings.Contains(out.String(), want); got != (access == "operate") {
				t.Errorf("policy --access %s: contains %s = %v\n%s", access, want, got, out.String())
			}
		}
	}
}
