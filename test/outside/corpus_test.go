package outside

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/internal/localproc"
)

// testdata/corpus is one app of the shapes CDK users give an SQS consumer, one stack each
// (its package comment lists them), written as the public examples write them and built as
// such apps build: the go1.x binary and the zipped bootstrap by the app's own build step
// before `cdk synth`, the GoFunctions by CDK's bundling. Synthesized once by the real CDK
// CLI, it runs unchanged under `pipelinectl local up`: every function runs and processes
// what is sent to it, the filter drops what it does not match (deleted, never delivered),
// the names the app gave are kept, a failing record reaches its DLQ and that DLQ's own
// consumer, a queue of one stack feeds another's function, a nested stack runs with its
// parent's table and with the table of another stack (Shared, which the kit reads after it)
// that it requires at init (an Fn::ImportValue in the nested template), and every command local up prints succeeds as printed. The one function
// whose variable has a value only AWS knows (a Systems Manager parameter read at deploy
// time) is listed as not run, with how to give it, and stops nothing else.
func TestCorpusRunsUnchanged(t *testing.T) {
	t.Parallel() // a third kit: it waits on builds and servers, not on the others
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// pipelinectl as a tool of the app's module, the way docs/local.md gives for a checkout.
	dir := newModule(t, "corpus", t.TempDir(), root, "edit")
	buildPrebuilt(t, dir)

	start := time.Now()
	synth(t, dir, root)
	fmt.Printf("FIGURE outside corpus: cdk synth of 16 stacks and a nested one (3 GoFunctions bundled) in %v\n", time.Since(start).Round(100*time.Millisecond))

	up := exec.Command("go", "tool", "pipelinectl", "local", "up", "--assembly", "cdk.out", "--cron=false", "--logs")
	// A shell that holds real-looking credentials (AWS's documented example keys): a function
	// under the kit must never use them, nor reach AWS with any.
	up.Dir, up.Env = dir, append(os.Environ(), "PWD="+dir, "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_REGION=eu-west-1")
	proc, err := localproc.Start(up)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start = time.Now()
	if err := proc.WaitOutput(ctx, "Ctrl-C stops everything."); err != nil {
		t.Fatalf("pipelinectl local up: %v", err)
	}
	fmt.Printf("FIGURE outside corpus: local up (builds the arm64 GoFunction's main for this machine) in %v\n", time.Since(start).Round(100*time.Millisecond))
	printed := proc.Output()
	for _, w := range []string{"Alias/Worker  queue ", "Go1x/Legacy  queue ", "Zip/Zipped  queue ", "Filtered/Orders  queue ", "Arm64/Graviton  queue ",
		"Names/Recorder  queue ", "Names/DeadLetters  queue ", "Versioned/Pinned  queue ", "ByArn/Target  queue ", "Fanout/RawReader  queue ", "Fanout/WrappedReader  queue ", "Fanout/PickyReader  queue ", "Fanout/TestedReader  queue ", "Uploads/Reader  queue ", "Broken/Crashing  queue ", "/corpus-orders\n", "/corpus-orders-dlq\n", "runtime go1.x, which Lambda no longer accepts",
		// Shared's queue, read by Reader's function; the nested stack's pipeline; the layer said.
		"Reader/Handler  queue ", "/RequestsC42AC379-Shared\n", "Nested/Workers/Writer  queue ", "Nested/Workers/Reader  queue ", "/InboxA8E05DC3-Nested\n", "Layered/WithLayer  queue ",
		"function WithLayer5127A694 Layers: a layer's files are not under /opt locally"} {
		if !strings.Contains(printed, w) {
			t.Errorf("local up printed no %q", w)
		}
	}
	// Only Settings' function is not run: its GREETING is a value Systems Manager alone knows
	// (the secret whose ARN it also gets is the stack's own, which the kit answers), and the
	// line says how to give it. It stops nothing else.
	_, notRun, _ := strings.Cut(printed, "Not run locally: ")
	notRun, _, _ = strings.Cut(notRun, "\n")
	wantNotRun := `Settings: function ConfiguredFA9B805B, mapped to queue JobsDF1CC2D4: GREETING refers to parameter SsmParameterValuecorpusgreetingC96584B6F00A464EAD1953AFF4B05118Parameter (AWS::SSM::Parameter::Value<String>), whose value is read from Systems Manager parameter "/corpus/greeting" at deploy time: ` +
		`give the parameter a value with Options.Parameters["SsmParameterValuecorpusgreetingC96584B6F00A464EAD1953AFF4B05118Parameter"] or pipelinectl local up --parameter SsmParameterValuecorpusgreetingC96584B6F00A464EAD1953AFF4B05118Parameter=VALUE, ` +
		`or set the variable with Options.Env["ConfiguredFA9B805B.GREETING"] or pipelinectl local up --env ConfiguredFA9B805B.GREETING=VALUE; the queue is created`
	if notRun != wantNotRun || strings.Count(printed, "Not run locally: ") != 1 {
		t.Errorf("local up lists as not run:\n%s\nwant only Settings' function:\n%s", notRun, wantNotRun)
	}

	env, cmds := printedCommands(printed)
	if len(cmds) == 0 || !strings.HasPrefix(cmds[0], "aws sqs send-message ") || slices.ContainsFunc(cmds, func(c string) bool { return strings.Contains(c, "pipelinectl") }) {
		t.Errorf("local up printed the commands %q: want aws sqs send-message first, and no pipelinectl command (no stack has pipeline outputs)", cmds)
	}
	runPrinted(t, dir, env, cmds)

	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: envValue(env, "AWS_ACCESS_KEY_ID"), SecretAccessKey: envValue(env, "AWS_SECRET_ACCESS_KEY")}, nil
	})
	sq := sqs.New(sqs.Options{Region: envValue(env, "AWS_REGION"), BaseEndpoint: aws.String(envValue(env, "AWS_ENDPOINT_URL_SQS")), Credentials: creds})
	db := dynamodb.New(dynamodb.Options{Region: envValue(env, "AWS_REGION"), BaseEndpoint: aws.String(envValue(env, "AWS_ENDPOINT_URL_DYNAMODB")), Credentials: creds})
	queues := map[string]string{} // pipeline -> queue URL, from what local up printed
	for _, m := range regexp.MustCompile(`(?m)^  (\S+)  queue (\S+)$`).FindAllStringSubmatch(printed, -1) {
		queues[m[1]] = m[2]
	}
	send := map[string][]string{
		"Alias/Worker":          {"alias-1", "whoami"},
		"Go1x/Legacy":           {"go1x-1"},
		"Zip/Zipped":            {"zip-1"},
		"Arm64/Graviton":        {"arm64-1"},
		"Broken/Crashing":       {"never-processed"},
		"Versioned/Pinned":      {"version-1"},
		"ByArn/Target":          {"arn-1"},
		"Names/Recorder":        {"names-1", "fail-names"},
		"Filtered/Orders":       {`{"type":"order","id":"f-1"}`, `{"type":"refund","id":"f-2"}`, `not json`},
		"Reader/Handler":        {"reader-1"},
		"Nested/Workers/Writer": {"nested-1"},
		"Nested/Workers/Reader": {"nested-2"},
		"Layered/WithLayer":     {"layer-1"},
	}
	start = time.Now()
	for p, bodies := range send {
		for _, b := range bodies {
			if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queues[p]), MessageBody: aws.String(b)}); err != nil {
				t.Fatalf("send %q to %s (%s): %v", b, p, queues[p], err)
			}
		}
	}
	// SNS to SQS: published with the AWS CLI through the exports, as a user would, to the
	// topic's ARN from the outputs the kit wrote; the topic keeps the name the app gave it.
	b, err := os.ReadFile(filepath.Join(dir, "cdk.out", "local-outputs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs map[string]map[string]string
	if err := json.Unmarshal(b, &outputs); err != nil || !strings.HasSuffix(outputs["Fanout"]["TopicArn"], ":corpus-events") {
		t.Fatalf("local-outputs.json %s (%v): want Fanout.TopicArn, the topic corpus-events", b, err)
	}
	// S3 to SNS to SQS to Lambda: two objects put with the AWS CLI, one under the prefix the
	// bucket's notification filters on: one S3 event, one invocation.
	if err := os.WriteFile(filepath.Join(dir, "upload.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	put := "aws s3api put-object --bucket " + outputs["Uploads"]["BucketName"] + " --body upload.txt --key "
	runPrinted(t, dir, env, []string{put + "'uploads/a b.txt'", put + "other/b.txt"})
	runPrinted(t, dir, env, []string{"aws sns publish --topic-arn " + outputs["Fanout"]["TopicArn"] +
		" --message fanout-1 --message-attributes '{\"kind\":{\"DataType\":\"String\",\"StringValue\":\"test\"}}'"})
	// What each function must log (its stack and logical id, then the body it was given), and the
	// status lines that say the filter deleted two records and the DLQ's consumer ran.
	want := []string{`Alias/Worker11F36D0F | {"seen":"alias-1"`, `Go1x/LegacyFA07BB5D | {"seen":"go1x-1"`, `Zip/Zipped19B58725 | {"seen":"zip-1"`,
		`Arm64/Graviton4460B072 | {"seen":"arm64-1"`, `Names/RecorderC4C6639E | {"seen":"names-1"`, `Filtered/OrdersA9B65338 | {"seen":"{\"type\":\"order\",\"id\":\"f-1\"}"`,
		`Names/DeadLettersBBF8BAAB | {"seen":"fail-names"`, `Versioned/PinnedA72699A1 | {"seen":"version-1"`, `ByArn/Target3191CF44 | {"seen":"arn-1"`, "Filtered/Orders: queue 0 visible, 0 in flight · DLQ 0 · 1 invocations, 0 failed, 2 records filtered out",
		// The raw subscription delivers the message as published; the other SNS's envelope;
		// of the two with filter policies, the one whose policy matches the attribute.
		`Fanout/TestedReaderC3A029CA | {"seen":"fanout-1"`,
		`Fanout/RawReader163B5A0D | {"seen":"fanout-1"`, `Fanout/WrappedReader3603931F | {"seen":"{\"Type\":\"Notification\"`, `\"Message\":\"fanout-1\"`, `\"MessageAttributes\":{\"kind\":{\"Type\":\"String\",\"Value\":\"test\"}}`,
		`Uploads/ReaderF7BF189D | {"seen":"{\"Type\":\"Notification\"`, `\"Subject\":\"Amazon S3 Notification\"`, `\\\"eventName\\\":\\\"ObjectCreated:Put\\\"`,
		`\\\"key\\\":\\\"uploads/a+b.txt\\\"`, "Uploads/Reader: queue 0 visible, 0 in flight · DLQ 0 · 1 invocations, 0 failed",
		`Reader/Handler886CB40B | {"seen":"reader-1"`, `Nested/Workers/Writer3ED51D24 | {"seen":"nested-1"`, `Nested/Workers/ReaderF7BF189D | {"seen":"nested-2"`, `Layered/WithLayer5127A694 | {"seen":"layer-1"`,
		// A function that fails at init: the status line says so, with its error.
		"Broken/Crashing: queue ", "failed · last failure: lambdart: init failed: ", "last output: panic: Table not available: corpus-absent",
		// STS, which the kit does not serve: the kit's error, in STS's own format, reaches the function.
		`Alias/Worker11F36D0F | {"error":"operation error STS: GetCallerIdentity, https response error StatusCode: 501, RequestID: , api error NotImplemented: ` +
			`the local kit does not serve sts (GetCallerIdentity): nothing under the kit reaches AWS.`}
	for _, w := range want {
		if err := proc.WaitOutput(ctx, w); err != nil {
			t.Fatalf("no %q after %v: %v", w, time.Since(start).Round(time.Second), err)
		}
	}
	fmt.Printf("FIGURE outside corpus: every function processed what was sent (the SNS publish and the S3 puts run with the AWS CLI), the failing record read from the DLQ, in %v\n", time.Since(start).Round(100*time.Millisecond))
	for _, never := range []string{`"seen":"{\"type\":\"refund\"`, `"seen":"not json"`, `other/b.txt`, `Fanout/PickyReader8F2736D4 | {"seen"`, "Fanout/PickyReader: queue 0 visible, 0 in flight · DLQ 0 · 1 invocations"} {
		if strings.Contains(proc.Output(), never) {
			t.Errorf("a record the filter does not match was delivered: %s", never)
		}
	}
	// The table's name reached the function as a plain string: the app's name is kept.
	item, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("corpus-seen")})
	if err != nil || item.Count != 1 {
		t.Errorf("table corpus-seen: %v (%v): want the one record names-1", item, err)
	}
	// The nested stack's function wrote to its parent's table (a parameter of the nested
	// stack), and the parent's output of the nested queue's URL (an output of the nested
	// stack) is the queue the kit created.
	if u := outputs["Nested"]["JobsUrl"]; u != queues["Nested/Workers/Writer"] {
		t.Errorf("Nested.JobsUrl = %q, want the nested stack's queue %s", u, queues["Nested/Workers/Writer"])
	}
	ledger, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(outputs["Nested"]["LedgerName"])})
	if err != nil || ledger.Count != 1 {
		t.Errorf("the parent's table %q: %v (%v): want the one record nested-1", outputs["Nested"]["LedgerName"], ledger, err)
	}

	stopWithCtrlC(t, up, proc, 2)
}

// buildPrebuilt is the corpus app's own build step, as a Makefile of such an app runs it
// before `cdk synth`: the go1.x function's binary bin/go1x/main (x86_64, the only
// architecture of go1.x) and the bootstrap zipped into bin/echo.zip.
func buildPrebuilt(t testing.TB, dir string) {
	t.Helper()
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}
	run(t, dir, env, "go", "build", "-o", "bin/go1x/main", "./functions/echo")
	run(t, dir, env, "go", "build", "-tags", "lambda.norpc", "-o", "bin/zip/bootstrap", "./functions/echo")
	exe, err := os.ReadFile(filepath.Join(dir, "bin", "zip", "bootstrap"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "bin", "echo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := z.CreateHeader(h)
	if err == nil {
		_, err = w.Write(exe)
	}
	if err == nil {
		err = z.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// printedCommands reads what local up printed under "In another shell:": the exports and
// the commands, each as written.
func printedCommands(out string) (env, cmds []string) {
	shell := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "In another shell:":
			shell = true
		case !strings.HasPrefix(line, "  "):
			shell = false
		case shell && strings.HasPrefix(line, "  export "):
			env = append(env, strings.TrimPrefix(line, "  export "))
		case shell:
			cmds = append(cmds, strings.TrimSpace(line))
		}
	}
	return env, cmds
}

// runPrinted runs each command in another shell, as a user would paste it: the exports
// given, the pinned AWS CLI v1 (make tools installs it) on PATH.
func runPrinted(t *testing.T, dir string, env, cmds []string) {
	t.Helper()
	venv := os.Getenv("AWSCLI_VENV")
	if venv == "" {
		venv = filepath.Join("..", "..", ".cache", "awscli-venv")
	}
	awsBin, err := filepath.Abs(filepath.Join(venv, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(awsBin, "aws")); err != nil {
		t.Fatalf("the AWS CLI v1 is not installed (%v): make tools installs it", err)
	}
	shellEnv := append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "PATH="+awsBin+":"+os.Getenv("PATH"))
	shellEnv = append(slices.DeleteFunc(shellEnv, func(e string) bool { return strings.HasPrefix(e, "AWS_PROFILE=") }), env...)
	for _, c := range cmds {
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir, cmd.Env = dir, shellEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("a command local up printed failed as written: %s: %v\n%s", c, err, out)
			continue
		}
		if strings.Contains(c, "receive-message") && len(out) > 0 && !json.Valid(out) {
			t.Errorf("%s printed no JSON:\n%s", c, out)
		}
	}
}

// envValue is NAME's value among NAME=VALUE lines.
func envValue(env []string, name string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, name+"="); ok {
			return v
		}
	}
	return ""
}
