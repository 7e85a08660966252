package localkit

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/cli"
	"github.com/idempotent-sqs/pipeline/local"
)

// Usage is `pipelinectl help local`.
const Usage = `pipelinectl local: run a cloud assembly's pipelines on this machine.

  pipelinectl local install
  pipelinectl local up --assembly DIR [--stack NAME]... [--send FILE --pipeline NAME]
                       [--fire NAME] [--cron=false] [--environments N] [--visibility-timeout D]
                       [--parameter NAME=VALUE]... [--secret NAME=VALUE]...
                       [--env [FUNCTION.]VAR=VALUE]...
                       [--logs] [--every D]

  install fetches DynamoDB Local and ElasticMQ (pinned versions, with Maven, checksums
  checked) into the user cache, once; up does it when they are missing. Both need
  Java 17+.

  up builds every consumer and dispatcher of the stacks from its source for this machine,
  starts DynamoDB Local and ElasticMQ on free ports (DynamoDB Local, which takes no
  address, on every interface; the rest on loopback), creates the stacks' queues and
  tables from their templates, and runs each consumer behind a poller that behaves as
  its event source mapping. It prints the endpoints (for the AWS CLI, the SDKs and
  pipelinectl), writes the stacks' outputs with local values to DIR/local-outputs.json
  (pipelinectl's --outputs), then a status line per pipeline whenever it changes: queue
  and DLQ depths, the function's invocations and failures (how the last one failed),
  records its filter deleted, record outcomes, alarms in ALARM (evaluated on a clock 30
  times the wall clock). Ctrl-C stops everything it started; the data was in memory and
  is gone.

  --assembly DIR       the directory 'cdk synth' wrote (default cdk.out)
  --stack NAME         a stack to run (repeatable; default every stack of the assembly)
  --send FILE          send each line of FILE as one message body, once up ('-' for stdin)
  --pipeline NAME      the pipeline --send and --fire address (needed with several)
  --fire NAME          run NAME's dispatcher once, as its schedule would now
  --cron               fire each dispatcher on its schedule's cron, rate or at expression,
                       in real time (default true; --cron=false fires only with --fire)
  --environments N     execution environments per consumer (default 2)
  --visibility-timeout D
                       the pipeline queues' visibility timeout, whole seconds (default: the
                       consumer's timeout plus its mapping's batching window, when the
                       template's is longer: a deferred duplicate comes back after it)
  --parameter NAME=VALUE
                       a value for the stacks' parameter NAME (repeatable); a parameter not
                       given takes its Default. A NAME that starts with / is a Systems
                       Manager parameter's, which the kit answers SSM's GetParameter(s) with
  --secret NAME=VALUE  the value the kit answers Secrets Manager's GetSecretValue with for
                       the secret NAME (its name or ARN, or the logical id of a secret a
                       stack creates, whose value is otherwise its own; repeatable)
  --env [FUNCTION.]VAR=VALUE
                       set VAR in every function's environment, or with FUNCTION. (a logical
                       id) in that function's, over the template's value (repeatable): for a
                       variable that refers to something the kit does not create
  --logs               print every function log line, prefixed with its stack and function
                       (Stage/Stack/LogicalId)
  --every D            how often to check for changes (default 2s)
`

// Run is `pipelinectl local ARGS`: up or install.
func Run(ctx context.Context, args []string, w cli.Streams) error {
	if len(args) == 0 {
		return cli.Usagef("local needs a subcommand: install or up")
	}
	help := func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(w.Out, Usage)
		return nil
	case "install":
		if len(args) == 2 && help(args[1]) {
			fmt.Fprint(w.Out, Usage)
			return nil
		}
		if len(args) > 1 {
			return cli.Usagef("local install takes no arguments, got %q", args[1:])
		}
		if err := local.Install(ctx, w.Out); err != nil {
			return err
		}
		dir, _ := local.CacheDir()
		fmt.Fprintf(w.Out, "DynamoDB Local and ElasticMQ are installed (the kit looks in $DYNAMODB_LOCAL_DIR, $ELASTICMQ_DIR, then %s)\n", dir)
		return nil
	case "up":
		return localUp(ctx, args[1:], w)
	}
	return cli.Usagef("unknown command %q%s", "local "+args[0], cli.DidYouMean("local "+args[0], []string{"local install", "local up"}))
}

// invokedAs is how to run this program again, for the commands local up prints: `go tool
// pipelinectl` when the go command built it (go tool, go run: the binary is in its build
// cache or a go-build directory), else pipelinectl.
func invokedAs(arg0 string) string {
	if strings.Contains(filepath.ToSlash(arg0), "/go-build") {
		return "go tool pipelinectl"
	}
	return "pipelinectl"
}

// assignments collects repeated NAME=VALUE flags.
type assignments struct{ m map[string]string }

func (a *assignments) String() string { return "" }
func (a *assignments) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	if a.m == nil {
		a.m = map[string]string{}
	}
	a.m[name] = value
	return nil
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func localUp(ctx context.Context, args []string, w cli.Streams) error {
	u, err := parseUp(args, w)
	if err != nil {
		return err
	}
	opts := u.opts
	started := time.Now()
	kit, err := local.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return &cli.NotDone{Why: "interrupted while starting; everything started so far was stopped, nothing is left running. Run the same command to start again"}
		}
		return err
	}
	defer func() {
		fmt.Fprintln(w.Err, "local: stopping the pollers, the functions and both servers")
		if err := kit.Close(); err != nil {
			fmt.Fprintf(w.Err, "local: %v\n", err)
		}
		fmt.Fprintln(w.Err, "local: stopped; nothing is left running. The queues and tables were in memory and are gone: 'pipelinectl local up' starts afresh")
	}()
	if err := printUp(w.Out, kit, opts.Assembly, started); err != nil {
		return err
	}
	if err := sendAndFire(ctx, kit, w.Out, u.send, u.pipeline, u.fire, u.bodies); err != nil {
		return err
	}
	return watch(ctx, kit, u.every, w.Out)
}

// upOptions are local up's flags: the kit's options, and what to send, fire and print.
type upOptions struct {
	opts                 local.Options
	send, pipeline, fire string
	bodies               []string // read from send
	every                time.Duration
}

// parseUp reads and checks local up's flags.
func parseUp(args []string, w cli.Streams) (upOptions, error) {
	fs := flag.NewFlagSet("local up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() { fmt.Fprint(w.Out, Usage) }
	u := upOptions{every: 2 * time.Second}
	opts := &u.opts
	var stacks stringList
	var logs bool
	fs.StringVar(&opts.Assembly, "assembly", "cdk.out", "")
	fs.Var(&stacks, "stack", "")
	fs.StringVar(&u.send, "send", "", "")
	fs.StringVar(&u.pipeline, "pipeline", "", "")
	fs.StringVar(&u.fire, "fire", "", "")
	fs.BoolVar(&opts.Cron, "cron", true, "")
	fs.IntVar(&opts.Environments, "environments", 2, "")
	fs.DurationVar(&opts.VisibilityTimeout, "visibility-timeout", 0, "")
	fs.BoolVar(&logs, "logs", false, "")
	var params, env, secrets assignments
	fs.Var(&params, "parameter", "")
	fs.Var(&secrets, "secret", "")
	fs.Var(&env, "env", "")
	fs.DurationVar(&u.every, "every", u.every, "")
	if err := cli.ParseNoArgs(fs, args); err != nil {
		return u, err
	}
	if opts.Environments < 1 {
		return u, cli.Usagef("--environments %d: want 1 or more", opts.Environments)
	}
	if u.every < 100*time.Millisecond {
		return u, cli.Usagef("--every %v: want 100ms or more", u.every)
	}
	if u.send != "" {
		var err error
		if u.bodies, err = readBodies(u.send); err != nil {
			return u, cli.Usagef("--send %s: %v", u.send, err)
		}
	}
	opts.Stacks = stacks
	opts.Parameters, opts.Env, opts.Secrets = params.m, env.m, secrets.m
	opts.Progress = w.Err
	if logs {
		opts.StackLogs = func(stack, fn string, line []byte) { fmt.Fprintf(w.Out, "%s/%s | %s\n", stack, fn, line) }
	}
	return u, nil
}

// printUp prints what local up started: each pipeline with its queues and table, what is not
// applied or not run, the outputs file it writes, and the exports and commands for another
// shell.
func printUp(out io.Writer, kit *local.Kit, assembly string, started time.Time) error {
	fmt.Fprintf(out, "Up in %v. Pipelines:\n", time.Since(started).Round(100*time.Millisecond))
	for _, p := range kit.Pipelines() {
		indent := strings.Repeat(" ", len(p.Stack+p.Name)+1)
		fmt.Fprintf(out, "  %s/%s  queue %s\n", p.Stack, p.Name, p.QueueURL)
		fmt.Fprintf(out, "  %s  DLQ   %s\n", indent, cmp.Or(p.DLQURL, "none: the queue has no redrive policy"))
		if p.Table != "" { // a function of the user's own keeps no idempotency table
			fmt.Fprintf(out, "  %s  table %s\n", indent, p.Table)
		}
	}
	for stack, ignored := range kit.Ignored() {
		if len(ignored) > 0 {
			fmt.Fprintf(out, "Not applied locally (%s): %s\n", stack, strings.Join(ignored, "; "))
		}
	}
	for _, s := range kit.StandIns() {
		fmt.Fprintf(out, "Stand-in for an imported resource: %s\n", s)
	}
	for _, s := range kit.NotRun() {
		fmt.Fprintf(out, "Not run locally: %s\n", strings.Replace(s, "not run locally: ", "", 1))
	}
	outPath := filepath.Join(assembly, "local-outputs.json")
	outputs, skipped := kit.Outputs()
	if b, err := json.MarshalIndent(outputs, "", "  "); err == nil {
		if err := os.WriteFile(outPath, b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nIn another shell:\n")
	for _, e := range kit.Environ() {
		fmt.Fprintf(out, "  export %s\n", e)
	}
	printCommands(out, kit, outputs)
	fmt.Fprintf(out, "(The exports point that shell's AWS SDKs and CLI at the kit, CloudFormation included: deploy from another.\n"+
		" Without them, pipelinectl reads the same outputs from --outputs %s.)\n", outPath)
	if len(skipped) > 0 {
		fmt.Fprintf(out, "Outputs with no local value (left out of %s): %s\n", outPath, strings.Join(skipped, ", "))
	}
	fmt.Fprintln(out, "\nCtrl-C stops everything.")
	return nil
}

// sendAndFire sends --send's messages to the pipeline, ten at a time, and fires --fire's
// dispatcher once.
func sendAndFire(ctx context.Context, kit *local.Kit, out io.Writer, send, pipeline, fire string, bodies []string) error {
	for sent := 0; sent < len(bodies); sent += 10 {
		if err := kit.Send(ctx, pipeline, bodies[sent:min(sent+10, len(bodies))]...); err != nil {
			if ctx.Err() != nil {
				return &cli.NotDone{Why: fmt.Sprintf("interrupted while sending %s: %d of its %d messages were sent, the next 10 perhaps; "+
					"the local queues and tables were in memory and are gone with the rest, nothing is left running. Run the same command to start afresh", send, sent, len(bodies))}
			}
			return fmt.Errorf("sending %s: %d of %d messages sent, then: %w", send, sent, len(bodies), err)
		}
		if sent+10 >= len(bodies) {
			fmt.Fprintf(out, "sent %d messages from %s\n", len(bodies), send)
		}
	}
	if fire != "" {
		n, err := kit.Fire(ctx, fire, time.Now().UTC().Truncate(time.Minute))
		fmt.Fprintf(out, "fired the dispatcher of %s: %d attempt(s), last error: %v\n", fire, n, err)
	}
	return nil
}

// printCommands prints, for a pipeline of the kit, a send of a message its consumer would
// take to its source queue (a queue no other pipeline's DLQ), and the pipelinectl commands
// that work on it: only for a stack whose outputs pipelinectl reads (pipeline.Outputs').
func printCommands(out io.Writer, kit *local.Kit, outputs map[string]map[string]string) {
	ps := kit.Pipelines()
	dlqs := map[string]bool{}
	for _, p := range ps {
		dlqs[p.DLQURL] = true
	}
	rank := func(p local.Running) int { // lower first: ours, a source queue, standard, unfiltered
		n := 0
		for i, worse := range []bool{p.Table == "", dlqs[p.QueueURL], p.Fifo, p.Filters != nil} {
			if worse {
				n += 1 << (3 - i)
			}
		}
		return n
	}
	example := slices.MinFunc(ps, func(a, b local.Running) int { return cmp.Compare(rank(a), rank(b)) })
	body, known := `{"idempotencyKey":"k1"}`, true
	if example.Table == "" {
		body, known = sampleBody(example.Filters)
	}
	group := ""
	if example.Fifo {
		group = " --message-group-id g1 --message-deduplication-id k1"
	}
	// --endpoint-url: the AWS CLI v1 does not read AWS_ENDPOINT_URL_SQS.
	fmt.Fprintf(out, "  aws sqs send-message --endpoint-url %s --queue-url %s --message-body %s%s\n",
		kit.Endpoints().SQS, example.QueueURL, cli.ShellQuote(body), group)
	var notes []string
	if !known {
		notes = append(notes, fmt.Sprintf("%s/%s is not a consumer of these constructs: the kit cannot know what body it takes; send one its code reads", example.Stack, example.Name))
	}
	defer func() {
		for _, n := range notes {
			fmt.Fprintf(out, "(%s.)\n", n)
		}
	}()
	self := invokedAs(os.Args[0])
	if name, ok := outputsPipeline(outputs[example.StackName], example); ok {
		fmt.Fprintf(out, "  %s status --stack %s\n", self, example.StackName)
		fmt.Fprintf(out, "  %s verify --stack %s --pipeline %s\n", self, example.StackName, name)
		if example.DLQURL != "" {
			fmt.Fprintf(out, "  %s dlq inspect --stack %s --pipeline %s\n", self, example.StackName, name)
		}
		return
	}
	if example.DLQURL != "" {
		fmt.Fprintf(out, "  aws sqs receive-message --endpoint-url %s --queue-url %s --visibility-timeout 0 --max-number-of-messages 10 --attribute-names All\n",
			kit.Endpoints().SQS, example.DLQURL)
	}
	notes = append(notes, fmt.Sprintf("%s status, verify and dlq read the stack outputs pipeline.Outputs adds; stack %s has none", self, example.StackName))
}

// outputsPipeline is the name pipelinectl knows pipeline p by in its stack's outputs (the
// prefix pipeline.Outputs was given): its own name when an output is named for it, else the
// prefix of the <Pipeline>DeadLetterQueueUrl output whose value is p's DLQ (a pipeline
// construct "OrdersPipeline" whose outputs say "Orders").
func outputsPipeline(outputs map[string]string, p local.Running) (string, bool) {
	if _, ok := outputs[p.Name+cli.OutDLQURL]; ok {
		return p.Name, true
	}
	for _, k := range slices.Sorted(maps.Keys(outputs)) {
		if name, ok := strings.CutSuffix(k, cli.OutDLQURL); ok && name != "" && p.DLQURL != "" && outputs[k] == p.DLQURL {
			return name, true
		}
	}
	return "", false
}

// sampleBody is a body the filters let through when the kit can tell one (each field of
// the first filter's body pattern given its first listed value), else a placeholder.
func sampleBody(filters []string) (body string, known bool) {
	if len(filters) == 0 {
		return "hello", false
	}
	var pattern struct{ Body map[string]any }
	if json.Unmarshal([]byte(filters[0]), &pattern) != nil || pattern.Body == nil {
		return "hello", false
	}
	var sample func(map[string]any) (map[string]any, bool)
	sample = func(m map[string]any) (map[string]any, bool) {
		out := map[string]any{}
		for k, v := range m {
			switch x := v.(type) {
			case map[string]any:
				inner, ok := sample(x)
				if !ok {
					return nil, false
				}
				out[k] = inner
			case []any:
				if len(x) == 0 {
					return nil, false
				}
				switch first := x[0].(type) {
				case string, float64, bool:
					out[k] = first
				default: // an operator: the kit does not make up a value for it
					return nil, false
				}
			default:
				return nil, false
			}
		}
		return out, true
	}
	m, ok := sample(pattern.Body)
	if !ok {
		return "hello", false
	}
	b, _ := json.Marshal(m)
	return string(b), true
}

// readBodies reads one message body per non-empty line of path ("-": stdin).
func readBodies(path string) ([]string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no message bodies in it (one per line)")
	}
	return out, nil
}

// watch prints a line per pipeline whenever its depths, outcomes or alarms change, until
// ctx ends (Ctrl-C), which is a normal end.
func watch(ctx context.Context, kit *local.Kit, every time.Duration, out io.Writer) error {
	ours := map[string]bool{} // the pipelines whose consumer keeps records (these constructs')
	dlq := map[string]bool{}
	for _, p := range kit.Pipelines() {
		ours[p.Stack+"/"+p.Name], dlq[p.Stack+"/"+p.Name] = p.Table != "", p.DLQURL != ""
	}
	last := map[string]string{}
	lastAlarms, lastErr := "", ""
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if st, err := kit.Status(ctx); err == nil {
			for _, s := range st {
				line := statusLine(s, ours[s.Pipeline], dlq[s.Pipeline])
				if last[s.Pipeline] != line {
					fmt.Fprintf(out, "%s %s: %s\n", time.Now().Format("15:04:05"), s.Pipeline, line)
					last[s.Pipeline] = line
				}
			}
		} else if ctx.Err() == nil {
			fmt.Fprintf(out, "%s status: %v\n", time.Now().Format("15:04:05"), err)
		}
		if states, err := kit.Alarms(); err == nil {
			var firing []string
			for _, a := range states {
				if a.State == local.StateAlarm {
					firing = append(firing, a.LogicalID)
				}
			}
			line := "none"
			if len(firing) > 0 {
				line = strings.Join(firing, ", ")
			}
			if line != lastAlarms {
				fmt.Fprintf(out, "%s alarms in ALARM: %s\n", time.Now().Format("15:04:05"), line)
				lastAlarms = line
			}
		}
		if err := kit.Err(); err != nil && err.Error() != lastErr {
			fmt.Fprintf(out, "%s problem: %v\n", time.Now().Format("15:04:05"), err)
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// statusLine is a pipeline's line: its queues, its function's invocations, whatever the
// function is (how the last failure ended, a failed init included), and, for a consumer that
// keeps records, their outcomes.
func statusLine(s local.Status, records, hasDLQ bool) string {
	parts := []string{fmt.Sprintf("queue %d visible, %d in flight", s.Queue.Visible, s.Queue.InFlight+s.Queue.Delayed)}
	if hasDLQ {
		parts = append(parts, fmt.Sprintf("DLQ %d", s.DLQ.Visible))
	}
	inv := fmt.Sprintf("%d invocations, %d failed", s.Invocations, s.Failed)
	if s.Filtered > 0 {
		inv += fmt.Sprintf(", %d records filtered out", s.Filtered)
	}
	parts = append(parts, inv)
	if records {
		parts = append(parts, outcomes(s.Outcomes))
	}
	if s.LastError != "" {
		parts = append(parts, "last failure: "+failureLine(s.LastError))
	}
	if len(s.Refused) > 0 { // the reason and the fix are in the problem line Kit.Err gives
		parts = append(parts, "calls refused (they would leave this machine): "+strings.Join(s.Refused, ", "))
	}
	return strings.Join(parts, " · ")
}

// failureLine is a failed invocation's error on one line: its first line and, when the
// process's last output follows (a crash, a failed init), the line that says why (a panic,
// a fatal error), else that output's last line.
func failureLine(err string) string {
	first, rest, _ := strings.Cut(err, "\n")
	if rest != "" {
		lines := strings.Split(strings.TrimSpace(rest), "\n")
		why := lines[len(lines)-1]
		for _, l := range lines {
			if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
				why = l
				break
			}
		}
		first += " " + strings.TrimSpace(why)
	}
	if len(first) > 300 {
		first = first[:300] + "…"
	}
	return first
}

func outcomes(m map[string]int) string {
	if len(m) == 0 {
		return "no records yet"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
