package local_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/internal/jsiitest"
	"github.com/idempotent-sqs/pipeline/internal/localproc"
	"github.com/idempotent-sqs/pipeline/local"
	"github.com/idempotent-sqs/pipeline/stacks"
)

// The reference stack on the kit, as a user's test would drive it: 100 orders sent three
// times each and three bad bodies; each effect runs once, the bad bodies are in the DLQ with
// their reason, and the DLQ alarm is in ALARM.
func TestKitRunsTheReferenceStack(t *testing.T) {
	out := referenceAssembly(t)
	before := localproc.Descendants(os.Getpid()) // jsii's node processes, from the synth
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	var progress strings.Builder
	kit, err := local.Start(ctx, local.Options{Assembly: out, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	defer kit.Close()
	fmt.Printf("FIGURE kit start (build both functions, start DynamoDB Local and ElasticMQ, create the stack): %v\n", time.Since(start).Round(100*time.Millisecond))

	var names []string
	for _, p := range kit.Pipelines() {
		names = append(names, fmt.Sprintf("%s fifo=%v", p.Name, p.Fifo))
	}
	if !slices.Equal(names, []string{"Fifo fifo=true", "Standard fifo=false"}) {
		t.Fatalf("Pipelines = %v, want Fifo and Standard", names)
	}
	var bodies, keys []string
	for i := range 100 {
		key := fmt.Sprintf("order-%03d", i)
		keys = append(keys, key)
		for range 3 {
			bodies = append(bodies, fmt.Sprintf(`{"idempotencyKey":%q,"amount":%d}`, key, i))
		}
	}
	bad := []string{`not json`, `{"amount":1}`, `{"idempotencyKey":""}`}
	start = time.Now()
	if err := kit.Send(ctx, "Standard", append(bodies, bad...)...); err != nil {
		t.Fatal(err)
	}
	waited, err := kit.WaitIdle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("FIGURE kit: 300 messages and 3 bad ones processed in %v (idle after %v)\n", time.Since(start).Round(100*time.Millisecond), waited.Round(100*time.Millisecond))

	effects, err := kit.Effects("Standard")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if effects[k] != 1 {
			t.Errorf("effect of %s ran %d times, want once", k, effects[k])
		}
	}
	if len(effects) != len(keys) {
		t.Errorf("%d keys had effects, want %d", len(effects), len(keys))
	}
	dl, err := kit.DeadLetters(ctx, "Standard")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range dl {
		if m.Reason == "" {
			t.Errorf("dead letter %q has no reason", m.Body)
		}
		got = append(got, m.Body)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(bad))
	if !slices.Equal(got, want) {
		t.Errorf("DLQ holds %q, want the three bad bodies %q", got, want)
	}
	oc, _ := kit.Outcomes("Standard")
	t.Logf("outcomes %v; dead letters %+v", oc, dl)

	// A standard queue as a fair queue: messages carry their tenant as GroupID and run once
	// each (test/e2e's TestFairQueue shows one tenant's failure holds back nobody); a
	// DeduplicationID, which SQS refuses on a standard queue, is refused before anything is sent.
	var fair []local.Message
	for i := range 12 {
		fair = append(fair, local.Message{Body: fmt.Sprintf(`{"idempotencyKey":"fair-%02d"}`, i), GroupID: fmt.Sprintf("tenant-%d", i%3)})
	}
	if err := kit.SendMessages(ctx, "Standard", fair...); err != nil {
		t.Fatal(err)
	}
	err = kit.SendMessages(ctx, "Standard", local.Message{Body: `{"idempotencyKey":"dedup"}`, DeduplicationID: "d-1"})
	if err == nil || !strings.Contains(err.Error(), "standard queue, which SQS refuses it on") {
		t.Errorf("a DeduplicationID on the standard queue: err %v, want it refused", err)
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if effects, err = kit.Effects("Standard"); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if k := fmt.Sprintf("fair-%02d", i); effects[k] != 1 {
			t.Errorf("effect of %s (tenant-%d) ran %d times, want once", k, i%3, effects[k])
		}
	}
	if effects["dedup"] != 0 {
		t.Errorf("the refused message ran %d times, want never: nothing is sent", effects["dedup"])
	}

	// The DLQ alarm: one period of one minute, on an alarm clock 30 times faster.
	var alarm local.AlarmState
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && alarm.State != local.StateAlarm {
		time.Sleep(time.Second)
		states, err := kit.Alarms()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range states {
			if strings.Contains(a.LogicalID, "QueueStandardDeadLetterMessages") {
				alarm = a
			}
		}
	}
	if alarm.State != local.StateAlarm {
		t.Fatalf("the Standard DLQ alarm is %q (%s), want ALARM", alarm.State, alarm.LogicalID)
	}
	fmt.Printf("FIGURE kit: DLQ alarm %s in ALARM %v after the bad messages were sent\n", alarm.LogicalID, alarm.Since.Sub(start).Round(100*time.Millisecond))
	checkAWSStandIns(t, kit, alarm)

	// A FIFO DLQ hands out nothing behind a message in flight in its group: 12 bad messages
	// of one group are read 10 at a time, and DeadLetters says so rather than return part.
	var fifoBad []string
	for i := range 12 {
		fifoBad = append(fifoBad, fmt.Sprintf("not json %d", i))
	}
	if err := kit.Send(ctx, "Fifo", fifoBad...); err != nil {
		t.Fatal(err)
	}
	if _, err := kit.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	fifoDead, err := kit.DeadLetters(ctx, "Fifo")
	if err == nil || !strings.Contains(err.Error(), "more are behind them in their message groups") || len(fifoDead) == 0 || len(fifoDead) >= 12 {
		t.Errorf("DeadLetters of a FIFO DLQ with 12 in one group: %d read, err %v; want some and an error saying the rest are behind them", len(fifoDead), err)
	}
	if err := kit.Err(); err != nil {
		t.Errorf("background: %v", err)
	}
	running := newSince(before)
	if len(running) < 3 { // both servers and the function processes
		t.Errorf("%d processes under the test before Close: the check after it proves nothing", len(running))
	}
	if err := kit.Close(); err != nil {
		t.Error(err)
	}
	left := newSince(before)
	if len(left) > 0 {
		t.Errorf("processes left after Close: %v", left)
	}
	fmt.Printf("FIGURE kit: %d processes the kit started were running before Close (servers and function environments), %d after\n", len(running), len(left))
}

// The reference stack, synthesized once for the package's tests: a 3 s consumer timeout, so
// a crashed record comes back in seconds, and a dispatcher schedule of every minute, which
// only TestKitFiresOnCron lets fire. The nag packs run in test/stack; here only the
// pipeline matters.
var reference struct {
	once sync.Once
	dir  string
	err  error
}

func referenceAssembly(t *testing.T) string {
	t.Helper()
	reference.once.Do(func() {
		if reference.dir, reference.err = os.MkdirTemp("", "kit-assembly-"); reference.err != nil {
			return
		}
		start := time.Now()
		app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(reference.dir)})
		stacks.Build(app, stacks.Config{Stage: "kit", ConsumerTimeout: 3 * time.Second, Schedule: "* * * * ? *"})
		app.Synth(nil)
		fmt.Printf("reference stack synthesized in %v\n", time.Since(start).Round(100*time.Millisecond))
	})
	if reference.err != nil {
		t.Fatal(reference.err)
	}
	return reference.dir
}

func TestMain(m *testing.M) {
	if os.Getenv(killedHelper) != "" {
		runKilledHelper()
		return
	}
	code := jsiitest.Run(m)
	if reference.dir != "" {
		os.RemoveAll(reference.dir)
	}
	os.Exit(code)
}

// A test that is killed (a go test -timeout, a Ctrl-C of go test, an OOM kill) runs no
// deferred Close: what the kit started must end with it. The test binary runs itself as a
// user's test that started a kit, and is killed with SIGKILL once the kit is up; every
// process the kit had started (both servers, function environments) is gone after it.
func TestKitKilledLeavesNothing(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedHelper+"="+referenceAssembly(t))
	proc, err := localproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := proc.WaitOutput(ctx, "build directory:"); err != nil { // a helper that cannot start its kit fails here at once
		t.Fatalf("the helper's kit: %v", err)
	}
	m := regexp.MustCompile(`build directory: (\S+)`).FindStringSubmatch(proc.Output())
	if m == nil {
		t.Fatalf("the helper named no build directory:\n%s", proc.Output())
	}
	theirs := m[1]
	started := localproc.Descendants(cmd.Process.Pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-proc.Exited()
	killed := time.Now()
	var left []int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		for _, pid := range started {
			if localproc.Alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
	}
	if len(started) < 3 {
		t.Errorf("only %d processes under the killed test (want both servers and a function): the check proves nothing", len(started))
	}
	if len(left) > 0 {
		t.Errorf("processes left 30 s after the test was killed: %v", left)
	}
	fmt.Printf("FIGURE kit: a test killed with SIGKILL once its kit was up: %d processes it had started, %d left (%v after the kill)\n",
		len(started), len(left), time.Since(killed).Round(10*time.Millisecond))

	// Its build directory stays (nothing ran to remove it) until a kit starts next and finds
	// nobody holding its lock; other kits' (running in parallel tests) stay.
	if _, err := os.Stat(theirs); err != nil {
		t.Fatalf("the killed kit's build directory %s is not there before the sweep (%v): the check below proves nothing", theirs, err)
	}
	local.SweepStale()
	if _, err := os.Stat(theirs); !os.IsNotExist(err) {
		t.Errorf("the killed kit's build directory %s is still there after the sweep (%v)", theirs, err)
	}
}

const killedHelper = "LOCAL_KIT_KILLED_HELPER"

// runKilledHelper is the killed user's test: start a kit, send a message so a function
// environment runs, say "up", and wait to be killed.
func runKilledHelper() {
	ctx := context.Background()
	kit, err := local.Start(ctx, local.Options{Assembly: os.Getenv(killedHelper)})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	if err := kit.Send(ctx, "Standard", `{"idempotencyKey":"k"}`); err == nil {
		_, err = kit.WaitIdle(ctx)
	}
	fmt.Println("kit up:", err)
	fmt.Println("build directory:", local.BinDir(kit))
	select {}
}

// newSince lists this process's descendants that are not in before.
func newSince(before []int) []int {
	var out []int
	for _, p := range localproc.Descendants(os.Getpid()) {
		if !slices.Contains(before, p) {
			out = append(out, p)
		}
	}
	return out
}

// With Cron, the kit fires each dispatcher on its schedule in real time: the reference stack
// with a schedule of every minute; its first firing (within a minute of the start) sends the
// stack's two work items, each applied once under a key of that minute's occurrence.
func TestKitFiresOnCron(t *testing.T) {
	out := referenceAssembly(t)
	t.Parallel() // after the synth: one test at a time drives the jsii kernel
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	progress := &syncBuffer{}
	opts := local.Options{Assembly: out, Cron: true, NoHeartbeats: true, Progress: progress}
	// The kit's cron clock reads 3 s short of a minute when Start sets up the schedules,
	// however long Start took, so the test waits seconds for the firing, not up to a minute.
	offset := local.CronClockBeforeMinute(&opts, 3*time.Second)
	kit, err := local.Start(ctx, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	defer kit.Close()
	started := time.Now()
	shift := offset()
	now := func() time.Time { return time.Now().Add(shift) } // the kit's clock
	if !strings.Contains(progress.String(), "Standard: schedule cron(* * * * ? *) UTC, first firing ") {
		t.Errorf("Progress does not announce the Standard schedule:\n%s", progress)
	}
	var effects map[string]int
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline) && len(effects) < 2; time.Sleep(time.Second) {
		if effects, err = kit.Effects("Standard"); err != nil {
			t.Fatal(err)
		}
	}
	if len(effects) != 2 {
		t.Fatalf("after %v the Standard pipeline applied %v, want the two work items of one firing\n%s", time.Since(started).Round(time.Second), effects, progress)
	}
	for key, n := range effects {
		// <job>#<occurrence>#<item>: the occurrence is the minute the schedule fired for.
		parts := strings.Split(key, "#")
		at, err := time.Parse(time.RFC3339, parts[min(1, len(parts)-1)])
		if n != 1 || len(parts) != 3 || err != nil || at.Second() != 0 || at.Before(started.Add(shift-time.Minute)) || at.After(now()) {
			t.Errorf("effect %q applied %d times: want once, keyed by a minute since the start", key, n)
		}
	}
	if !strings.Contains(progress.String(), "Standard: fired its schedule for ") {
		t.Errorf("Progress does not report the firing:\n%s", progress)
	}
	fmt.Printf("FIGURE kit, cron: the every-minute schedule's first firing applied its 2 items %v after the kit was up\n", time.Since(started).Round(100*time.Millisecond))
	if err := kit.Err(); err != nil {
		t.Errorf("background: %v", err)
	}
}

// checkAWSStandIns asks the kit's Lambda, CloudWatch and CloudFormation stand-ins what the AWS CLI and the
// SDKs ask (CloudWatch's JSON protocol; pipelinectl's tests ask in the query protocol) and
// what they cannot answer: the DLQ alarm in ALARM is reported as such, a dispatcher that
// fails is a 200 with X-Amz-Function-Error as in Lambda, a consumer cannot be invoked
// directly, an unknown function is not found, an unsigned request is refused.
func checkAWSStandIns(t *testing.T, kit *local.Kit, dlqAlarm local.AlarmState) {
	t.Helper()
	url := kit.Endpoints().AWS
	var funcErr string
	call := func(method, path, target, body string) (int, string) {
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if path != "/unsigned" {
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20261126/us-east-1/lambda/aws4_request")
		}
		switch {
		case target != "":
			req.Header.Set("X-Amz-Target", target)
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		case strings.HasPrefix(body, "Action="):
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		funcErr = res.Header.Get("X-Amz-Function-Error")
		return res.StatusCode, string(b)
	}
	code, body := call("POST", "/", "GraniteServiceVersion20100801.DescribeAlarms", `{"AlarmNames":["`+dlqAlarm.Name+`"]}`)
	if code != 200 || !strings.Contains(body, `"AlarmName":"`+dlqAlarm.Name+`"`) || !strings.Contains(body, `"StateValue":"ALARM"`) {
		t.Errorf("DescribeAlarms (JSON) of the DLQ alarm %s: %d %s", dlqAlarm.Name, code, body)
	}
	var consumer, dispatcher string
	for _, p := range kit.Pipelines() {
		if p.Name == "Standard" {
			consumer, dispatcher = p.ConsumerName, p.DispatcherName
		}
	}
	for _, c := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/2015-03-31/functions/" + consumer + "/invocations", "{}", 400, "the local kit invokes a consumer from its queue only: send the message to http"},
		{"/2015-03-31/functions/Nope/invocations", "{}", 404, "Function not found: Nope (the local kit's functions are named <logical id>-<stack>"},
		{"/2015-03-31/functions/arn:aws:lambda:us-east-1:123456789012:function:" + dispatcher + ":live/invocations", `{"scheduledTime":"yesterday"}`, 200, `"errorMessage"`},
		{"/unsigned", "{}", 403, "the local kit answers signed AWS requests to 127.0.0.1:"},
	} {
		if code, body := call("POST", c.path, "", c.body); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s, want %d %q", c.path, code, body, c.code, c.want)
		}
		if strings.Contains(c.path, dispatcher) && funcErr != "Unhandled" {
			t.Errorf("a failed dispatcher: X-Amz-Function-Error %q, want Unhandled", funcErr)
		}
	}
	if code, body := call("GET", "/2015-03-31/event-source-mappings?FunctionName="+consumer, "", ""); code != 200 || !strings.Contains(body, `"State":"Enabled"`) {
		t.Errorf("ListEventSourceMappings of %s: %d %s", consumer, code, body)
	}
	// CloudFormation's DescribeStacks (the query protocol): each stack's outputs with their
	// local values, as Outputs gives them; another name is refused as CloudFormation does.
	outputs, _ := kit.Outputs()
	for stack, outs := range outputs {
		code, body := call("POST", "/", "", "Action=DescribeStacks&Version=2010-05-15&StackName="+stack)
		want := []string{"<StackName>" + stack + "</StackName>", "<StackStatus>CREATE_COMPLETE</StackStatus>"}
		for k, v := range outs {
			want = append(want, "<member><OutputKey>"+k+"</OutputKey><OutputValue>"+v+"</OutputValue></member>")
		}
		for _, w := range want {
			if code != 200 || !strings.Contains(body, w) {
				t.Errorf("DescribeStacks %s: %d, lacks %q:\n%s", stack, code, w, body)
			}
		}
	}
	if code, body := call("POST", "/", "", "Action=DescribeStacks&Version=2010-05-15&StackName=Nope"); code != 400 ||
		!strings.Contains(body, "<Code>ValidationError</Code><Message>Stack with id Nope does not exist (the local kit runs ") {
		t.Errorf("DescribeStacks of an unknown stack: %d %s", code, body)
	}
	if code, body := call("POST", "/", "", "Action=CreateChangeSet&Version=2010-05-15&StackName=Nope"); code != 400 ||
		!strings.Contains(body, "<Code>InvalidAction</Code><Message>the local kit answers CloudFormation&#39;s DescribeStacks only, not CreateChangeSet: a shell with the kit&#39;s exports talks to the kit; deploy from another") {
		t.Errorf("CreateChangeSet: %d %s", code, body)
	}
}

// syncBuffer is a strings.Builder that the kit's goroutines and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
