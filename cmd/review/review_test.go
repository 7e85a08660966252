package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixture assembly (testdata/asm) is hand-made: one stack with a resource of every kind
// the report treats, and cdk-nag reports with a suppressed, an unsuppressed and a stray row.
const fixture = "testdata/asm"

func loadFixture(t *testing.T) (*assembly, *stack) {
	t.Helper()
	a, err := loadAssembly(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Stacks) != 1 || a.Stacks[0].Name != "Fixture" {
		t.Fatalf("stacks = %v, want the one named Fixture", a.Stacks)
	}
	return a, a.Stacks[0]
}

func TestShowRendersIntrinsicsAsCdkNagNamesThem(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{"*", "*"},
		{map[string]any{"Ref": "Topic"}, "<Topic>"},
		{map[string]any{"Ref": "AWS::AccountId"}, "<AWS::AccountId>"},
		{map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}}, "<Queue.Arn>"},
		{map[string]any{"Fn::GetAtt": "Queue.Arn"}, "<Queue.Arn>"},
		{map[string]any{"Fn::Join": []any{"", []any{map[string]any{"Fn::GetAtt": []any{"Fn", "Arn"}}, ":*"}}}, "<Fn.Arn>:*"},
		{map[string]any{"Fn::Join": []any{"/", []any{"a", map[string]any{"Ref": "B"}}}}, "a/<B>"},
		{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:s3:::b"}, "arn:${AWS::Partition}:s3:::b"},
		{map[string]any{"Fn::Sub": []any{"${X}-q", map[string]any{"X": "y"}}}, "${X}-q"},
		{map[string]any{"Fn::ImportValue": "Shared-Key"}, "<import Shared-Key>"},
		{map[string]any{"Fn::Select": []any{0.0, []any{"a"}}}, `{"Fn::Select":[0,["a"]]}`},
		{300.0, "300"},
		{true, "true"},
	} {
		if got := show(c.in); got != c.want {
			t.Errorf("show(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func findStatement(t *testing.T, sts []statement, holder string, action string) statement {
	t.Helper()
	for _, st := range sts {
		if st.Holder == holder && contains(st.Actions, action) {
			return st
		}
	}
	t.Fatalf("no statement of %s with action %s in %+v", holder, action, sts)
	return statement{}
}

func TestStatementsFlattenEveryPolicyKindAndFlagWildcards(t *testing.T) {
	_, s := loadFixture(t)
	sts := statements(s)
	if len(sts) != 13 {
		t.Errorf("%d statements, want 13 (6 policy, 1 inline, 1 managed, 1 trust, 2 queue, 1 permission, 1 key)", len(sts))
	}
	for _, c := range []struct {
		holder, action                           string
		kind, principal, effect, resources, cond string
		wildcards, suppressions                  string
	}{
		{"AppPolicy", "dynamodb:UpdateItem", "identity", "role AppRole", "Allow", "<TableCmk.Arn>", "", "", ""},
		{"AppPolicy", "xray:PutTraceSegments", "identity", "role AppRole", "Allow", "*", "", "Resource::*", "AwsSolutions-IAM5"},
		{"AppPolicy", "sqs:*", "identity", "role AppRole", "Allow", "<QueueKms.Arn>", "", "Action::sqs:*", ""},
		// The suppression's applies_to is a regex here.
		{"AppPolicy", "lambda:InvokeFunction", "identity", "role AppRole", "Allow", "<Fn.Arn> <Fn.Arn>:*", "", "Resource::<Fn.Arn>:*", "AwsSolutions-IAM5"},
		{"AppPolicy", "s3:*", "identity", "role AppRole", "Deny", "*", "Bool aws:SecureTransport=false", "", ""},
		{"AppPolicy", "iam:*", "identity", "role AppRole", "Allow", "<AppRole.Arn>", "", "NotAction NotResource", ""},
		{"AppRole", "s3:GetObject", "identity", "role AppRole", "Allow", "arn:<AWS::Partition>:s3:::bucket/key", "", "", ""},
		{"AppRole", "sts:AssumeRole", "trust", "service:lambda.amazonaws.com", "Allow", "role AppRole", "", "", ""},
		{"QueuePolicy", "sqs:SendMessage", "resource", "service:sns.amazonaws.com", "Allow", "<QueueKms.Arn>", "ArnEquals aws:SourceArn=<Topic>", "", ""},
		{"QueuePolicy", "sqs:ReceiveMessage", "resource", "*", "Allow", "<QueueSse.Arn>", "", "Principal::*", ""},
		{"InvokePermission", "lambda:InvokeFunction", "resource", "service:events.amazonaws.com", "Allow", "<Fn.Arn>",
			"ArnLike aws:SourceArn=arn:aws:events:eu-west-1:<AWS::AccountId>:rule/nightly", "", ""},
		// In a key policy Resource * is the key: only the action is a wildcard.
		{"Key", "kms:*", "resource", "aws:arn:aws:iam::<AWS::AccountId>:root", "Allow", thisKey, "", "Action::kms:*", ""},
	} {
		st := findStatement(t, sts, c.holder, c.action)
		got := []string{st.Kind, st.Principal, st.Effect, strings.Join(st.Resources, " "), st.Condition,
			strings.Join(st.Wildcards, " "), strings.Join(st.Suppressions, " ")}
		want := []string{c.kind, c.principal, c.effect, c.resources, c.cond, c.wildcards, c.suppressions}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s %s: field %d = %q, want %q (%+v)", c.holder, c.action, i, got[i], want[i], st)
			}
		}
	}
	for _, st := range sts {
		if st.Kind == "managed" && strings.Join(st.Resources, "") != "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole" {
			t.Errorf("managed policy statement %+v", st)
		}
	}
}

func TestAccessListsWhoMayUseEachDataStore(t *testing.T) {
	_, s := loadFixture(t)
	var got []string
	for _, g := range access(s, statements(s)) {
		got = append(got, g.Store+" <- "+g.Principal+" "+strings.Join(g.Actions, ",")+" via "+g.Via)
	}
	want := []string{
		"Key <- aws:arn:aws:iam::<AWS::AccountId>:root kms:* via Key",
		"QueueKms <- role AppRole sqs:* via AppPolicy",
		"QueueKms <- service:sns.amazonaws.com sqs:SendMessage via QueuePolicy",
		"QueueSse <- * sqs:ReceiveMessage via QueuePolicy",
		"TableCmk <- role AppRole dynamodb:PutItem,dynamodb:UpdateItem via AppPolicy",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("access:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEncryptionPerDataStore(t *testing.T) {
	_, s := loadFixture(t)
	got := map[string]string{}
	for _, e := range encryptions(s) {
		got[e.ID] = e.At + " / " + e.Key
	}
	want := map[string]string{
		"QueueKms":     "SSE-KMS / Key (rotation on)",
		"QueueSse":     "SSE-SQS / SQS owned key",
		"QueuePlain":   "none (SqsManagedSseEnabled false) / ",
		"QueueUnset":   "SSE-KMS / alias/aws/sqs",
		"QueueBare":    "SSE-SQS (not set in the template: SQS's default for new queues) / SQS owned key",
		"TableCmk":     "SSE-KMS / KeyNoRotation (rotation off)",
		"TableManaged": "SSE-KMS / AWS managed key aws/dynamodb",
		"TableDefault": "DynamoDB default encryption / AWS owned key",
		"Topic":        "SSE-KMS / alias/aws/sns",
		"TopicPlain":   "none / ",
		"LogsKms":      "KMS / Key (rotation on)",
		"LogsPlain":    "CloudWatch Logs default encryption / CloudWatch Logs service key",
		"Bucket":       "aws:kms / Key (rotation on)",
	}
	if len(got) != len(want) {
		t.Errorf("%d data stores, want %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
}

func TestRetentionAndDeletionOfStatefulResources(t *testing.T) {
	_, s := loadFixture(t)
	got := map[string]string{}
	for _, r := range retentions(s) {
		got[r.ID] = r.Keeps + " / " + r.Deletion + " / " + r.Replace
	}
	want := map[string]string{
		"QueueKms":      "messages 14 days / Delete (default) / Delete (default)",
		"QueuePlain":    "messages 1 hour / Delete / Delete (default)",
		"QueueSse":      "messages 4 days (default) / Delete (default) / Delete (default)",
		"TableCmk":      "items until their TTL (expiration); point-in-time recovery on; deletion protection on / Retain / Retain",
		"TableDefault":  "items forever (no TTL); point-in-time recovery off; deletion protection off / Delete (default) / Delete (default)",
		"LogsKms":       "events 7 days / Retain / Delete (default)",
		"LogsPlain":     "events forever (no retention set) / Delete (default) / Delete (default)",
		"Key":           "7 days pending window before deletion / Retain / Retain",
		"KeyNoRotation": "30 days pending window before deletion (default) / Delete / Delete (default)",
		"Bucket":        "versioning enabled; 1 lifecycle rule / Retain / Delete (default)",
		// Not a type the report knows, but its DeletionPolicy is explicit.
		"Snapshot": " / Snapshot / Delete (default)",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
	for _, id := range []string{"Topic", "Fn", "AppRole", "AlarmSingle"} {
		if _, ok := got[id]; ok {
			t.Errorf("%s is not stateful and has no DeletionPolicy, yet is listed", id)
		}
	}
}

func TestAlarmsWithMetricThresholdPeriodsAndActions(t *testing.T) {
	_, s := loadFixture(t)
	got := map[string]alarm{}
	for _, a := range alarms(s) {
		got[a.ID] = a
	}
	if len(got) != 4 {
		t.Fatalf("%d alarms, want 4: %v", len(got), got)
	}
	check := func(id, field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s %s = %q, want %q", id, field, got, want)
		}
	}
	a := got["AlarmSingle"]
	check("AlarmSingle", "metric", strings.Join(a.Metric, "\n"), "Maximum of AWS/SQS ApproximateNumberOfMessagesVisible{QueueName=<QueuePlain.QueueName>} per 1 min")
	check("AlarmSingle", "condition", a.Condition, ">= 1 in 1 of 1 periods")
	check("AlarmSingle", "missing", a.Missing, "notBreaching")
	check("AlarmSingle", "actions", a.Actions, "ALARM: Topic; OK: TopicPlain")
	check("AlarmSingle", "runbook", a.Runbook, "runbooks.md#dlq-messages")
	a = got["AlarmMath"]
	check("AlarmMath", "metric", strings.Join(a.Metric, "\n"),
		"rate = sent / PERIOD(sent)\nsent = Sum of AWS/SQS NumberOfMessagesSent{QueueName=<QueueSse.QueueName>} per 5 min")
	check("AlarmMath", "condition", a.Condition, "< 5 in 3 of 4 periods")
	check("AlarmMath", "missing", a.Missing, "missing (default)")
	check("AlarmMath", "actions", a.Actions, "none")
	check("AlarmMath", "runbook", a.Runbook, "")
	a = got["AlarmP99"]
	check("AlarmP99", "name", a.Name, "fixture-latency")
	check("AlarmP99", "metric", strings.Join(a.Metric, "\n"), "p99 of AWS/Lambda Duration per 5 min")
	check("AlarmP99", "actions", a.Actions, "disabled (ALARM: Topic)")
	a = got["Unhealthy"]
	if !a.Composite {
		t.Error("Unhealthy is a composite alarm")
	}
	check("Unhealthy", "rule", strings.Join(a.Metric, "\n"), `ALARM("<AlarmSingle.Arn>") OR ALARM("<AlarmMath.Arn>")`)
	check("Unhealthy", "condition", a.Condition, "the rule is true; actions suppressed while AlarmP99 is in ALARM")
	check("Unhealthy", "runbook", a.Runbook, "runbooks.md#pipeline-unhealthy")
}

func TestSuppressionsAndSkipsWithTheirReasons(t *testing.T) {
	a, s := loadFixture(t)
	rows := a.nagRows(s)
	show := func(skips []skip) string {
		var out []string
		for _, k := range skips {
			out = append(out, k.Rule+" "+strings.Join(k.IDs, ",")+": "+k.Reason)
		}
		return strings.Join(out, "\n")
	}
	for _, c := range []struct{ what, got, want string }{
		{"nag suppressions", show(nagSuppressions(rows)), "AwsSolutions-IAM5 AppPolicy: [Resource::*] X-Ray needs *\nNIST.800.53.R5-LambdaDLQ Fn: no async invocations\nServerless-LambdaDLQ Fn: no async invocations"},
		{"idle suppressions", show(idleNagSuppressions(s, rows)), "AwsSolutions-IAM5 AppRole: [Resource::*] X-Ray needs *"},
		{"checkov", show(checkovSkips(s)), "CKV_AWS_116 Fn: no async invocations\nCKV_AWS_158 LogsPlain: service key\nCKV_AWS_27 QueueSse: SSE-SQS\nCKV_AWS_66 LogsPlain: retention is the default"},
		{"cfn-lint", show(cfnLintSkips(s)), "E3012 LogsPlain: \nW3005 LogsPlain: "},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.what, c.got, c.want)
		}
	}
	// A compliance pack's suppression carries the controls its rule maps to; the verdicts
	// are counted per pack.
	for _, k := range nagSuppressions(rows) {
		want := map[string]string{"NIST.800.53.R5-LambdaDLQ": "AU-12(3), AU-14a, CA-7b, SI-4(12)"}[k.Rule]
		if k.Controls != want {
			t.Errorf("%s: controls %q, want %q", k.Rule, k.Controls, want)
		}
	}
	if got := reviewStack(a, s).PackCounts["NIST.800.53.R5"]; got["Suppressed"] != 1 || got["Compliant"] != 1 {
		t.Errorf("NIST.800.53.R5 verdicts = %v, want 1 suppressed and 1 compliant", got)
	}
	f := nagFindings(rows)
	if len(f) != 1 || f[0].Rule != "AwsSolutions-SQS4" || f[0].ID != "QueuePlain" {
		t.Errorf("unsuppressed findings = %+v, want AwsSolutions-SQS4 on QueuePlain", f)
	}
	if stray := a.strayNagRows(); len(stray) != 1 || stray[0].Path != "Other/Queue/Resource" {
		t.Errorf("stray rows = %+v, want the one on Other/Queue/Resource", stray)
	}
}

func TestReportSummarisesFirstAndIsDeterministic(t *testing.T) {
	a, _ := loadFixture(t)
	var b1, b2 bytes.Buffer
	render(&b1, a)
	a2, _ := loadFixture(t)
	render(&b2, a2)
	if b1.String() != b2.String() {
		t.Fatal("two renderings of the same assembly differ")
	}
	out := b1.String()
	summary := out[strings.Index(out, "## Summary"):strings.Index(out, "## Fixture")]
	for _, want := range []string{
		"- 26 resources in 1 stack\n",
		"- cdk-nag: 1 unsuppressed finding; 3 suppressions with reasons, 1 idle (suppressing no finding)\n",
		"- checkov: 4 skips with reasons; cfn-lint: 2 skips\n",
		"- IAM: 13 statements, 6 statements with a wildcard in an Allow, 2 of them accepted by a cdk-nag suppression\n",
		"- 13 data stores, 2 unencrypted\n",
		"- 4 alarms (1 composite): 2 without an action, 2 without a runbook link, 1 paging\n",
		"- **SNS topics without a subscription: 1 of 2; the alarm notifications they carry (1) reach no one** until one is added\n",
		"- deleting the stack deletes keys (after their pending window), and with them what they encrypt: 1; log groups, with their events: 1; " +
			"queues, with the messages they hold: 5; tables, with their items: 2\n",
		"cdk-nag report rows about no resource of these templates: 1, of which 1 unanswered findings",
		"| AwsSolutions-SQS3 | Other/Queue/Resource | Error |",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	order := []string{"### Resources by type", "### IAM statements", "### Access to data stores", "### Encryption at rest",
		"### Retention and deletion", "### Alarms", "### Who is notified", "### cdk-nag", "#### Unsuppressed findings", "#### Suppressions",
		"#### Idle suppressions", "### checkov skips", "### cfn-lint skips"}
	rest := out[strings.Index(out, "## Fixture"):]
	for _, h := range order {
		i := strings.Index(rest, h+"\n")
		if i < 0 {
			t.Errorf("section %q missing or out of order", h)
			continue
		}
		rest = rest[i:]
	}
	for _, want := range []string{
		"| AWS::SQS::Queue | 5 |",
		"**wildcard** `Action::sqs:*` (no suppression)",
		"**wildcard** `Principal::*` (cdk-nag checks identity policies only; **no reason recorded**)",
		"**wildcard** `Action::kms:*`: the key policy's default statement for the account root",
		"| Topic | email oncall@example.com | 2 without a severity, 1 page |",
		"| TopicPlain | **none: its alarms reach no one** | 1 page |",
		"- queues, with the messages they hold: QueueBare, QueueKms, QueuePlain, QueueSse, QueueUnset\n",
		"| QueuePlain | AWS::SQS::Queue | **none (SqsManagedSseEnabled false)** | - |",
		"| AlarmMath | - | `rate = sent / PERIOD(sent)`<br>`sent = Sum of AWS/SQS NumberOfMessagesSent{QueueName=<QueueSse.QueueName>} per 5 min` | < 5 in 3 of 4 periods | missing (default) | **none** | - |",
		"| E3012 | LogsPlain | **no reason recorded** |",
		"| ALARM: Topic; OK: TopicPlain | [#dlq-messages](runbooks.md#dlq-messages) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	abs, _ := filepath.Abs(fixture)
	if strings.Contains(out, abs) || strings.Contains(out, fixture) {
		t.Error("the report names the assembly's directory; it must not depend on where cdk.out is")
	}
}

func TestCellEscapesTableSyntax(t *testing.T) {
	if got := cell("a | b\nc"); got != `a \| b c` {
		t.Errorf("cell = %q", got)
	}
}

func TestUnifiedDiff(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"
	new := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"
	var b bytes.Buffer
	if !unifiedDiff(&b, "old.md", "new.md", old, new) {
		t.Fatal("no change reported")
	}
	want := `--- old.md
+++ new.md
@@ -1,5 +1,5 @@
 a
-b
+B
 c
 d
 e
@@ -10,3 +10,4 @@
 j
 k
 l
+m
`
	if b.String() != want {
		t.Errorf("diff:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if unifiedDiff(&b, "old.md", "new.md", old, old) || b.Len() != 0 {
		t.Errorf("equal texts: changed, or wrote %q", b.String())
	}
	b.Reset()
	unifiedDiff(&b, "old.md", "new.md", "", "x\n")
	if b.String() != "--- old.md\n+++ new.md\n@@ -0,0 +1 @@\n+x\n" {
		t.Errorf("diff from nothing:\n%s", b.String())
	}
}

func runReview(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRunWritesDiffsAndChecks(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "review.md")

	code, stdout, stderr := runReview("-out", report, fixture)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("-out: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	written, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runReview(fixture)
	if code != 0 || stdout != string(written) {
		t.Fatalf("standard output (exit %d) differs from the -out file", code)
	}

	code, stdout, stderr = runReview("-check", "-diff", report, fixture)
	if code != 0 || !strings.Contains(stdout, "no change against") || stderr != "" {
		t.Errorf("-check on a current report: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	stale := strings.Replace(string(written), "| AWS::SQS::Queue | 5 |", "| AWS::SQS::Queue | 4 |", 1)
	if err := os.WriteFile(report, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runReview("-check", "-diff", report, fixture)
	if code != 1 || !strings.Contains(stdout, "-| AWS::SQS::Queue | 4 |\n+| AWS::SQS::Queue | 5 |\n") ||
		!strings.Contains(stderr, "is stale: run `make review`") {
		t.Errorf("-check on a stale report: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Without -check a difference is news, not failure; with -out the file is then current.
	code, stdout, _ = runReview("-diff", report, "-out", report, fixture)
	if code != 0 || !strings.Contains(stdout, "+| AWS::SQS::Queue | 5 |") {
		t.Errorf("-diff -out: exit %d, stdout %q", code, stdout)
	}
	if code, _, _ = runReview("-check", "-diff", report, fixture); code != 0 {
		t.Errorf("after -diff -out the report is still stale (exit %d)", code)
	}
	// A report not committed yet is all new.
	code, stdout, _ = runReview("-check", "-diff", filepath.Join(dir, "absent.md"), fixture)
	if code != 1 || !strings.Contains(stdout, "+# Reviewer's report") {
		t.Errorf("-check against a missing file: exit %d", code)
	}
}

func TestRunRejectsBadUse(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-check", fixture}, "-check needs -diff FILE"},
		{[]string{fixture, fixture}, "one assembly directory expected, got 2 arguments"},
		{[]string{t.TempDir()}, "no stack template in"},
		{[]string{"-nosuch"}, "flag provided but not defined: -nosuch"},
		{[]string{"testdata/badcsv"}, "wrong number of fields"},
	} {
		code, _, stderr := runReview(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

func TestLoadAssemblyWithoutManifestGlobsTemplates(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(fixture, "Fixture.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Loose.template.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := loadAssembly(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Stacks) != 1 || a.Stacks[0].Name != "Loose" || a.NagReports != 0 {
		t.Errorf("stacks %v, %d nag reports; want Loose and none", a.Stacks, a.NagReports)
	}
	var out bytes.Buffer
	render(&out, a)
	if !strings.Contains(out.String(), "no report in the assembly (cdk-nag did not run)") {
		t.Error("without a cdk-nag report the summary must say cdk-nag did not run, not claim 0 findings")
	}
}
