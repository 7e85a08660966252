package outside

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// testdata/rooted is an app laid out as many Go CDK apps are: one go.mod at the root, the
// functions beside cdk/, which holds the CDK app, and a Makefile that builds each function
// for each architecture from its files with -tags and a version stamped with -ldflags -X,
// and zips it (the trimmed ones with -trimpath too). Run as its author runs it (make, then
// cd cdk && cdk synth && pipelinectl local up --assembly cdk.out, a relative path), every
// function runs: an executable for the other architecture is built again for this machine
// from the source its line table names, with its tags and its -X version (what it logs
// says so); the -trimpath one for the other architecture, whose source cannot be found, is
// listed as not run, naming the file and the command that builds it here. A function on
// aws-sdk-go v1 and a plain HTTP client reach nothing: the kit's proxy refuses each call at
// once and says so.
func TestRootedAppRunsFromItsCdkDir(t *testing.T) {
	t.Parallel() // a kit of its own: it waits on builds and servers, not on the others
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no Lambda architecture: %s", runtime.GOARCH)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := newModule(t, "rooted", t.TempDir(), root, "edit")
	run(t, dir, nil, "make")
	cdk := filepath.Join(dir, "cdk")
	start := time.Now()
	synth(t, cdk, root)
	fmt.Printf("FIGURE outside rooted: cdk synth in cdk/ (1 GoFunction bundled) in %v\n", time.Since(start).Round(100*time.Millisecond))

	start = time.Now()
	up, proc := localUp(t, cdk, nil, 5*time.Minute, "--assembly", "cdk.out", "--logs", "--parameter", "/rooted/greeting=hello from the kit")
	fmt.Printf("FIGURE outside rooted: local up (builds the GoFunction and the zip built for the other architecture again for this machine) in %v\n", time.Since(start).Round(100*time.Millisecond))
	printed := proc.Output()

	here, other := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH], map[string]string{"amd64": "arm64", "arm64": "x86_64"}[runtime.GOARCH]
	fn := map[string]string{"x86_64": "X86", "arm64": "Arm64"}
	// Built again, and said so at start: the GoFunction (arm64 in the app) and the
	// Makefile's zip for the other architecture.
	rebuilt := []string{"Sender" + fn[other]}
	if other == "arm64" {
		rebuilt = append(rebuilt, "Graviton")
	}
	for _, id := range rebuilt {
		if !regexp.MustCompile(`function ` + id + `[0-9A-F]{8}: its ` + other + ` bootstrap is built again for this machine \(` + here + `\) from its source, as it was built: cd `).MatchString(printed) {
			t.Errorf("local up did not say that it builds %s again for this machine:\n%s", id, printed)
		}
	}
	// The files its line table names: log.go too unless the compiler inlined its one function.
	if !regexp.MustCompile(`go build -ldflags='-s -w -X main\.version=from-make' -tags=lambda\.norpc,rooted -o bootstrap (log\.go )?main\.go\b`).MatchString(printed) {
		t.Errorf("local up did not say it builds the Makefile's executable with its -tags and -ldflags:\n%s", printed)
	}
	// Not run: the trimmed one for the other architecture, naming the file and the command.
	wantNotRun := `Not run locally: Rooted: function Trimmed` + fn[other] + `[0-9A-F]{8}, mapped to queue Trimmed` + fn[other] + `Queue[0-9A-F]{8}: its bootstrap is built for ` + other +
		` and this machine is ` + here + ` \(linux/` + runtime.GOARCH + `\); the kit builds it again for this machine from its source, and it was built with -trimpath from the file \./main\.go, which names no directory: ` +
		"build it for this machine where its source is with `GOOS=linux GOARCH=" + runtime.GOARCH + " CGO_ENABLED=0 go build -tags=lambda.norpc,rooted -trimpath -o bootstrap (log\\.go )?main\\.go` " +
		`\(with the -ldflags it was built with, which a -trimpath build does not record\), put that bootstrap in the function's asset, and synthesize again, or give the function Architecture ` + here +
		` \(for a GoFunction, awslambda\.Architecture_` + strings.ToUpper(here) + `\(\)\) to run it here; the queue is created\n`
	if !regexp.MustCompile(wantNotRun).MatchString(printed) || strings.Count(printed, "Not run locally: ") != 1 {
		t.Errorf("local up lists as not run:\n%s\nwant only the trimmed %s one: %s", printed, other, wantNotRun)
	}

	env, _ := printedCommands(printed)
	sq := sqs.New(sqs.Options{Region: envValue(env, "AWS_REGION"), BaseEndpoint: aws.String(envValue(env, "AWS_ENDPOINT_URL_SQS")),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: envValue(env, "AWS_ACCESS_KEY_ID"), SecretAccessKey: envValue(env, "AWS_SECRET_ACCESS_KEY")}, nil
		})})
	queues := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  Rooted/(\S+)  queue (\S+)$`).FindAllStringSubmatch(printed, -1) {
		queues[m[1]] = m[2]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// What each function logs: the Makefile's builds with their tag and version, the
	// GoFunction as bundling built it; every one as this machine's architecture.
	want := map[string]string{
		"Graviton":           `{"arch":"` + runtime.GOARCH + `","flavor":"plain","seen":"graviton-1","version":"dev"}`,
		"SenderArm64":        `{"arch":"` + runtime.GOARCH + `","flavor":"tagged","seen":"sender-arm64-1","version":"from-make"}`,
		"SenderX86":          `{"arch":"` + runtime.GOARCH + `","flavor":"tagged","seen":"sender-x86-1","version":"from-make"}`,
		"Trimmed" + fn[here]: `{"arch":"` + runtime.GOARCH + `","flavor":"tagged","seen":"trimmed-1","version":"from-make"}`,
	}
	start = time.Now()
	for p, line := range want {
		body := regexp.MustCompile(`"seen":"([^"]+)"`).FindStringSubmatch(line)[1]
		if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queues[p]), MessageBody: aws.String(body)}); err != nil {
			t.Fatalf("send to %s (%q): %v\n%s", p, queues[p], err, printed)
		}
	}
	for p, line := range want {
		if err := proc.WaitOutput(ctx, line); err != nil {
			t.Errorf("%s logged no %s after %v: %v", p, line, time.Since(start).Round(time.Second), err)
		}
	}

	// The function on aws-sdk-go v1 (which reads no AWS_ENDPOINT_URL) and a plain HTTP
	// client, through the kit's proxy: SSM answers the parameter given with --parameter,
	// Secrets Manager the secret the stack creates (by the local ARN its Ref gave the
	// function) and names the secret that was not given and how to give it, and the call
	// to the partner is refused at once; the error the function gets, its pipeline's status
	// line and the kit's problem lines name the host and the fix. Nothing reached AWS or the
	// partner.
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queues["Legacy"]), MessageBody: aws.String("legacy-1")}); err != nil {
		t.Fatalf("send to Legacy (%q): %v", queues["Legacy"], err)
	}
	for _, w := range []string{
		`{"http":"Get \"https://partner.example.com/ping\": the local kit refused a call to partner.example.com:443: nothing a function calls under the kit leaves this machine; ` +
			`point the function at a stand-in on this machine (pipelinectl local up --env FUNCTION.VAR=VALUE, Options.Env)",` +
			`"secret":"ResourceNotFoundException: the local kit has no value for Secrets Manager secret rooted/api-key: give it one with pipelinectl local up --secret rooted/api-key=VALUE ` +
			`(Options.Secrets[\"rooted/api-key\"]); it has none","seen":"legacy-1","ssm":"hello from the kit","token":"from the stack"}`,
		"problem: local: ",
	} {
		if err := proc.WaitOutput(ctx, w); err != nil {
			t.Errorf("no %s after %v: %v", w, time.Since(start).Round(time.Second), err)
		}
	}
	status := regexp.MustCompile(`Rooted/Legacy: queue 0 visible, 0 in flight · DLQ 0 · 1 invocations, 0 failed · calls refused \(they would leave this machine\): partner\.example\.com:443 x1\n`)
	for !status.MatchString(proc.Output()) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Errorf("no status line %s:\n%s", status, proc.Output())
	}
	for _, problem := range []string{
		"local: function LegacyFA07BB5D of stack Rooted called partner.example.com:443: the local kit refused a call to partner.example.com:443: ",
		"local: a function asked for a value the kit does not have: the local kit has no value for Secrets Manager secret rooted/api-key: give it one with pipelinectl local up --secret rooted/api-key=VALUE",
	} {
		if !strings.Contains(proc.Output(), problem) {
			t.Errorf("no problem line says %s:\n%s", problem, proc.Output())
		}
	}
	for _, l := range strings.Split(proc.Output(), "\n") { // what the note of a run quotes
		if strings.Contains(l, "legacy-1") || strings.Contains(l, "Rooted/Legacy:") || strings.Contains(l, "problem:") {
			t.Log(l)
		}
	}
	stopWithCtrlC(t, up, proc, 2)
}
