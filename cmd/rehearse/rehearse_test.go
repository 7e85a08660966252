package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/local"
)

// Every usage error names what is wrong and what to give instead.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--app", "x", "--assembly", dir}, "--app and --assembly both given: give one"},
		{[]string{"--update-assembly", dir}, "--update-assembly needs --assembly (with an app, give --update KEY=VALUE)"},
		{[]string{"--assembly", dir, "--update", "a=b"}, "--update and --context need an app to synthesize; with --assembly, give --update-assembly"},
		{[]string{"--assembly", dir, "--from", "HEAD"}, "--from needs an app to synthesize at that commit; with --assembly, give --update-assembly"},
		{[]string{"--update", "novalue"}, `context "novalue": want KEY=VALUE`},
		{[]string{"--context", "=v"}, `context "=v": want KEY=VALUE`},
		{[]string{"--make", "--app", "x"}, "--make runs this repository's make targets on its own app; leave out --app, --assembly and --dir"},
		{[]string{"--assembly", filepath.Join(dir, "missing")}, "missing: no such directory"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--nope"}, "flag provided but not defined: -nope (rehearse -h lists the flags)"},
		{[]string{"--message", `Orders={"idempotencyKey":"k"}`}, `--message "Orders={\"idempotencyKey\":\"k\"}": want PIPELINE=BODY, the body with $KEY where the message's idempotency key goes`},
		{[]string{"--message", `={"idempotencyKey":"$KEY"}`}, "want PIPELINE=BODY"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.args, code, errOut.String(), exitUsage, tc.want)
		}
	}
	var out bytes.Buffer
	if code := run([]string{"-h"}, &out, &out); code != exitOK || !strings.Contains(out.String(), "--update KEY=VALUE") {
		t.Errorf("-h: exit %d, %q", code, out.String())
	}
}

func TestScheduleName(t *testing.T) {
	short := scheduleName("Orders", "OrdersDispatcherSchedule1234")
	if short != "Orders-OrdersDispatcherSchedule1234" {
		t.Errorf("short name %q", short)
	}
	stack := strings.Repeat("S", 60)
	a, b := scheduleName(stack, "StandardDispatcherSchedule0A235BA3"), scheduleName(stack, "StandardHeartbeatSchedule52D6599D")
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("long names %q (%d), %q (%d): want 64 characters each, different", a, len(a), b, len(b))
	}
}

// nameSchedules names each unnamed schedule and re-points the asset manifest and the stack's
// template URL at the changed template's hash, which the CDK CLI publishes it under.
func TestNameSchedules(t *testing.T) {
	dir := t.TempDir()
	tmpl := `{"Resources":{"S1":{"Type":"AWS::Scheduler::Schedule","Properties":{"ScheduleExpression":"rate(5 minutes)"}},` +
		`"S2":{"Type":"AWS::Scheduler::Schedule","Properties":{"Name":"mine"}},"Q":{"Type":"AWS::SQS::Queue"}}}`
	old := sha256hex([]byte(tmpl))
	write(t, dir, "App.template.json", tmpl)
	write(t, dir, "App.assets.json", `{"files":{"`+old+`":{"source":{"path":"App.template.json"},"destinations":{"d":{"objectKey":"`+old+`.json"}}}}}`)
	write(t, dir, "manifest.json", `{"artifacts":{"App":{"type":"aws:cloudformation:stack","environment":"aws://unknown-account/unknown-region",`+
		`"properties":{"templateFile":"App.template.json","stackTemplateAssetObjectUrl":"s3://b/`+old+`.json"}}}}`)
	stacks, err := readAssembly(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := nameSchedules(stacks)
	if err != nil || n != 1 {
		t.Fatalf("named %d, %v; want 1", n, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "App.template.json"))
	var parsed struct {
		Resources map[string]resource
	}
	if err := json.Unmarshal(got, &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Resources["S1"].Properties["Name"] != "App-S1" || parsed.Resources["S2"].Properties["Name"] != "mine" {
		t.Errorf("names %v, %v", parsed.Resources["S1"].Properties["Name"], parsed.Resources["S2"].Properties["Name"])
	}
	sum := sha256hex(got)
	for _, f := range []string{"App.assets.json", "manifest.json"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if strings.Contains(string(b), old) || !strings.Contains(string(b), sum) {
			t.Errorf("%s still names the old hash or not the new one %s:\n%s", f, sum, b)
		}
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replacements names each stateful resource an update would replace or remove, and nothing
// else.
func TestReplacements(t *testing.T) {
	table := func(key string) resource {
		return resource{Type: "AWS::DynamoDB::Table", DeletionPolicy: "Retain", Properties: map[string]any{
			"KeySchema": []any{map[string]any{"AttributeName": key, "KeyType": "HASH"}}, "BillingMode": "PAY_PER_REQUEST"}}
	}
	queue := func(fifo bool, vis float64) resource {
		return resource{Type: "AWS::SQS::Queue", Properties: map[string]any{"FifoQueue": fifo, "VisibilityTimeout": vis}}
	}
	fn := resource{Type: "AWS::Lambda::Function", Properties: map[string]any{"Timeout": 30.0}}
	before := []stack{{Name: "App", Res: map[string]resource{"Table1": table("id"), "Queue1": queue(true, 180), "Fn": fn}}}
	for _, tc := range []struct {
		name  string
		after map[string]resource
		want  []string
	}{
		{"settings change in place", map[string]resource{"Table1": table("id"), "Queue1": queue(true, 120),
			"Fn": {Type: "AWS::Lambda::Function", Properties: map[string]any{"Timeout": 20.0}}}, nil},
		{"table renamed", map[string]resource{"Table2": table("id"), "Queue1": queue(true, 180), "Fn": fn},
			[]string{"App Table1 (AWS::DynamoDB::Table) is removed or renamed"}},
		{"key schema", map[string]resource{"Table1": table("pk"), "Queue1": queue(true, 180), "Fn": fn},
			[]string{"App Table1 (AWS::DynamoDB::Table): KeySchema changes, which replaces it"}},
		{"fifo flag", map[string]resource{"Table1": table("id"), "Queue1": queue(false, 180), "Fn": fn},
			[]string{"App Queue1 (AWS::SQS::Queue): FifoQueue changes, which replaces it"}},
		{"type", map[string]resource{"Table1": {Type: "AWS::DynamoDB::GlobalTable"}, "Queue1": queue(true, 180)},
			[]string{"App Table1 changes type from AWS::DynamoDB::Table to AWS::DynamoDB::GlobalTable"}},
	} {
		got := replacements(before, []stack{{Name: "App", Res: tc.after}})
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q; want %q", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%s: %q; want it to start %q", tc.name, got[i], tc.want[i])
			}
		}
	}
	if got := replacements(before, nil); len(got) != 1 || !strings.Contains(got[0], "stack App is gone from the update") {
		t.Errorf("stack dropped: %q", got)
	}
}

func TestEnv(t *testing.T) {
	agnostic := stack{Env: "aws://unknown-account/unknown-region"}
	pinned := stack{Env: "aws://111122223333/eu-west-1"}
	if a, r, err := env([]stack{agnostic}); a != "123456789012" || r != "us-east-1" || err != nil {
		t.Errorf("agnostic: %s %s %v", a, r, err)
	}
	if a, r, err := env([]stack{agnostic, pinned}); a != "111122223333" || r != "eu-west-1" || err != nil {
		t.Errorf("pinned: %s %s %v", a, r, err)
	}
	_, _, err := env([]stack{pinned, {Env: "aws://444455556666/eu-west-1"}})
	if err == nil || err.Error() != "stacks pinned to accounts 111122223333 and 444455556666: rehearse them one app at a time" {
		t.Errorf("two accounts: %v", err)
	}
	_, _, err = env([]stack{pinned, {Env: "aws://111122223333/us-west-2"}})
	if err == nil || err.Error() != "stacks pinned to regions eu-west-1 and us-west-2: rehearse them one app at a time" {
		t.Errorf("two regions: %v", err)
	}
}

// No credential, profile or endpoint of the caller's reaches a command: a rehearsal can never
// touch a real account.
func TestOfflineEnv(t *testing.T) {
	got := offlineEnv([]string{"PATH=/bin", "AWS_PROFILE=prod", "AWS_ACCESS_KEY_ID=AKIA", "AWS_ENDPOINT_URL_SQS=https://sqs.example",
		"CDK_DEFAULT_ACCOUNT=111122223333", "HOME=/home/me", "NO_PROXY=.corp.example"})
	want := "PATH=/bin HOME=/home/me AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true " +
		"CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true NO_PROXY=127.0.0.1,localhost,.corp.example no_proxy=127.0.0.1,localhost,.corp.example"
	if strings.Join(got, " ") != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

func TestPipelines(t *testing.T) {
	got := pipelines(map[string]string{
		"FifoQueueUrl": "q", "FifoDeadLetterQueueUrl": "d", "StandardQueueUrl": "q", "StandardDeadLetterQueueUrl": "d",
		"LonelyDeadLetterQueueUrl": "d", "IdempotencyTableName": "t",
	})
	if strings.Join(got, ",") != "Fifo,Standard" {
		t.Errorf("%q", got)
	}
}

func TestCounts(t *testing.T) {
	if got := counts(map[string]int{"queue": 2, "table": 1}); got != "2 queues, 1 table" {
		t.Errorf("%q", got)
	}
	if got := counts(nil); got != "nothing" {
		t.Errorf("%q", got)
	}
}

// moved names each stateful resource the update replaced (another physical id) or removed,
// and ignores the rest.
func TestMoved(t *testing.T) {
	before := map[string]map[string]deployed{"App": {
		"Table": {Type: "AWS::DynamoDB::Table", Physical: "App-Table-1"},
		"DLQ":   {Type: "AWS::SQS::Queue", Physical: "http://q/App-DLQ-1"},
		"Fn":    {Type: "AWS::Lambda::Function", Physical: "App-Fn-1"},
	}}
	same := map[string]map[string]deployed{"App": {
		"Table": {Type: "AWS::DynamoDB::Table", Physical: "App-Table-1"},
		"DLQ":   {Type: "AWS::SQS::Queue", Physical: "http://q/App-DLQ-1"},
		"Fn":    {Type: "AWS::Lambda::Function", Physical: "App-Fn-2"},
	}}
	if got := moved(before, same); len(got) != 0 {
		t.Errorf("nothing stateful moved: %q", got)
	}
	replaced := map[string]map[string]deployed{"App": {
		"Table": {Type: "AWS::DynamoDB::Table", Physical: "App-Table-2"},
	}}
	got := moved(before, replaced)
	want := []string{
		"App DLQ (AWS::SQS::Queue) http://q/App-DLQ-1 is no longer in the stack",
		"App Table (AWS::DynamoDB::Table) was App-Table-1, is now App-Table-2: replaced",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%q\nwant %q", got, want)
	}
}

// A table whose DeletionPolicy stops being Retain is flagged: a later destroy deletes it.
func TestReplacementsRetention(t *testing.T) {
	table := func(policy string) resource {
		return resource{Type: "AWS::DynamoDB::Table", DeletionPolicy: policy, Properties: map[string]any{}}
	}
	got := replacements([]stack{{Name: "App", Res: map[string]resource{"T": table("Retain")}}},
		[]stack{{Name: "App", Res: map[string]resource{"T": table("Delete")}}})
	if len(got) != 1 || got[0] != `App T (AWS::DynamoDB::Table): DeletionPolicy Retain becomes "Delete": a later destroy deletes it with its data` {
		t.Errorf("%q", got)
	}
}

// statusProblems accepts a just-deployed, seeded stack and names everything else.
func TestStatusProblems(t *testing.T) {
	ok := `[{"pipeline":"Fifo","deadLetterQueue":{"visible":1},"alarmsChecked":true,
	  "problems":["messages in the DLQ: 1; pipelinectl dlq inspect --stack S --pipeline Fifo",
	    "alarm S-HeartbeatFifoMissing is in ALARM: Insufficient data (runbook: https://x/runbooks.md#heartbeat-missing)"]}]`
	if bad, err := statusProblems([]byte(ok), []string{"Fifo"}, true); err != nil || len(bad) != 0 {
		t.Errorf("a healthy new stack: %q, %v", bad, err)
	}
	wrong := `[{"pipeline":"Fifo","deadLetterQueue":{"visible":0},"alarmsChecked":false,
	  "unread":["the alarms: CloudWatch DescribeAlarms: 500"],
	  "problems":["mapping 1234 is Disabled"]}]`
	bad, err := statusProblems([]byte(wrong), []string{"Fifo", "Standard"}, true)
	want := []string{
		"Fifo: the DLQ shows 0 messages, want the 1 seeded",
		"Fifo: not read: the alarms: CloudWatch DescribeAlarms: 500",
		"Fifo: its alarms were not checked, though the outputs name the composite alarm",
		"Fifo: mapping 1234 is Disabled",
		"pipeline Standard is not listed",
	}
	if err != nil || strings.Join(bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("%q, %v\nwant %q", bad, err, want)
	}
	if _, err := statusProblems([]byte("not json"), nil, false); err == nil {
		t.Error("not JSON: no error")
	}
}

// A work directory of someone else's is refused, never cleared; the rehearsal's own is.
func TestClaimWork(t *testing.T) {
	mine := filepath.Join(t.TempDir(), "new")
	if err := claimWork(mine); err != nil {
		t.Fatal(err)
	}
	if err := claimWork(mine); err != nil {
		t.Errorf("its own directory again: %v", err)
	}
	theirs := t.TempDir()
	write(t, theirs, "main.go", "package main")
	if err := claimWork(theirs); err == nil || !strings.Contains(err.Error(), "holds files a rehearsal did not write (no .rehearse-work): give an empty or new directory") {
		t.Errorf("someone else's directory: %v", err)
	}
}

// A tool path given explicitly that is no executable is an error, not a fall back to PATH.
func TestFindToolGiven(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "cdk", "not executable")
	if _, err := findTool("sh", filepath.Join(dir, "cdk")); err == nil || err.Error() != "not an executable file" {
		t.Errorf("a file that is not executable: %v", err)
	}
	if p, err := findTool("sh", ""); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("from PATH: %q, %v", p, err)
	}
}

// The harness's two fakecloud workarounds change only what they say: the insecure-transport
// Deny goes and every other statement stays; a single-message SQS action gains its batch name
// and nothing else is added.
func TestFakecloudPolicyWorkarounds(t *testing.T) {
	doc := `{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"arn:q","Condition":{"Bool":{"aws:SecureTransport":"false"}}},` +
		`{"Effect":"Deny","Principal":"*","Action":"sqs:*","Resource":"arn:q","Condition":{"Bool":{"aws:SecureTransport":"true"}}},` +
		`{"Effect":"Allow","Principal":{"Service":"events.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"arn:q"}]}`
	out, dropped, err := insecureTransportDenied(doc)
	if err != nil || dropped != 1 {
		t.Fatalf("insecureTransportDenied: dropped %d, %v; want 1", dropped, err)
	}
	if strings.Contains(out, `"false"`) || !strings.Contains(out, `"true"`) || !strings.Contains(out, "events.amazonaws.com") {
		t.Errorf("insecureTransportDenied kept the wrong statements: %s", out)
	}
	if _, dropped, _ := insecureTransportDenied(out); dropped != 0 {
		t.Errorf("a second pass dropped %d", dropped)
	}

	got, err := withBatchActions([]byte(`{"Version":"2012-10-17","Statement":[` +
		`{"Effect":"Allow","Action":["sqs:ReceiveMessage","sqs:ChangeMessageVisibility"],"Resource":"arn:dlq"},` +
		`{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"arn:q"},` +
		`{"Effect":"Allow","Action":["dynamodb:GetItem"],"Resource":"arn:t"}]}`))
	want := `{"Statement":[` +
		`{"Action":["sqs:ReceiveMessage","sqs:ChangeMessageVisibility","sqs:ChangeMessageVisibilityBatch"],"Effect":"Allow","Resource":"arn:dlq"},` +
		`{"Action":["sqs:SendMessage","sqs:SendMessageBatch"],"Effect":"Allow","Resource":"arn:q"},` +
		`{"Action":["dynamodb:GetItem"],"Effect":"Allow","Resource":"arn:t"}],"Version":"2012-10-17"}`
	if err != nil || got != want {
		t.Errorf("withBatchActions:\n got %s (%v)\nwant %s", got, err, want)
	}
	if _, err := withBatchActions([]byte(`{"Version":"2012-10-17"}`)); err == nil || err.Error() != "no statements" {
		t.Errorf("a policy without statements: %v, want \"no statements\"", err)
	}
}

// denied quotes a refusal in AWS's words from a function's log line (a JSON string, its quotes
// escaped) or an SDK error, and nothing else.
func TestDenied(t *testing.T) {
	line := `{"level":"ERROR","reason":"operation error DynamoDB: UpdateItem, https response error StatusCode: 400, api error AccessDeniedException: ` +
		`User: arn:aws:sts::123456789012:assumed-role/R/S is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/T; no identity-based policy allows it\"}`
	want := "AccessDenied: arn:aws:sts::123456789012:assumed-role/R/S is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/T"
	if got := denied(line); got != want {
		t.Errorf("denied(line) = %q, want %q", got, want)
	}
	if got := denied(`{"outcome":"processed","reason":"not authorized"}`); got != "" {
		t.Errorf("denied of a line without a refusal = %q, want \"\"", got)
	}
}

// A role made for Lambda gets the account as a second principal; one that trusts the account
// already, or is not Lambda's, is left alone.
func TestTrustsLambda(t *testing.T) {
	lambda := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	got, err := trustsLambda(lambda, "123456789012")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Statement []map[string]any }
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Statement) != 2 || fmt.Sprint(doc.Statement[1]["Principal"]) != "map[AWS:arn:aws:iam::123456789012:root]" {
		t.Errorf("trust of a Lambda role = %s, want its statement and the account's", got)
	}
	if again, _ := trustsLambda(got, "123456789012"); again != trusted {
		t.Errorf("a role that trusts the account already: %q, want %q", again, trusted)
	}
	scheduler := strings.ReplaceAll(lambda, "lambda.amazonaws.com", "scheduler.amazonaws.com")
	if other, _ := trustsLambda(url.PathEscape(scheduler), "123456789012"); other != "" {
		t.Errorf("a Scheduler role (URL-encoded, as IAM returns it): %q, want it left alone", other)
	}
	if _, err := trustsLambda("{", "1"); err == nil {
		t.Error("a trust policy that is not JSON: no error")
	}
}

// A --message for a pipeline that does not run is an error naming it and the pipelines that
// do, not a body silently never sent.
func TestUnknownMessages(t *testing.T) {
	ps := []local.Running{{Name: "Orders"}, {Name: "Invoices"}}
	if err := unknownMessages(map[string]string{"Orders": `{"idempotencyKey":"$KEY"}`}, ps); err != nil {
		t.Errorf("a message for a pipeline that runs: %v", err)
	}
	err := unknownMessages(map[string]string{"Order": "x $KEY", "Orders": "y $KEY"}, ps)
	want := "--message names no pipeline that runs: Order; the pipelines are Orders, Invoices"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
