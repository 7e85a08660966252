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
// listed as not run, naming the file and the command that builds it here.
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
	up, proc := localUp(t, cdk, nil, 5*time.Minute, "--assembly", "cdk.out", "--logs")
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
	stopWithCtrlC(t, up, proc, 2)
}
