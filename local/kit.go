package local

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// DefaultEnvironments is Options.Environments unless set: the execution environments each
// consumer runs.
const DefaultEnvironments = 2

// Options configure Start. Only Assembly is required.
type Options struct {
	// Assembly is the cloud assembly directory `cdk synth` wrote (cdk.out, or -o DIR),
	// absolute or relative to the working directory.
	Assembly string
	// Stacks to bring up, by the name `cdk ls` prints (or artifact id). Default: every
	// stack of the assembly, those of its Stages included.
	Stacks []string
	// Environments is how many execution environments (processes) each consumer runs, each
	// polling on its own, as Lambda scales an SQS event source. Default 2; never more than
	// the mapping's MaximumConcurrency.
	Environments int
	// Env sets variables in the functions' environments over the template's: "NAME" in
	// every function's (a shorter RECORD_TTL, an endpoint of a service of yours),
	// "FUNCTION.NAME" in the function of that logical id's, in every stack that has it. A
	// variable set here is not resolved from the template: the way to run a function whose
	// variable refers to something the kit does not create (pipelinectl local up --env).
	Env map[string]string
	// Parameters give the stacks' parameters (CfnParameter) their values, by name, in every
	// stack that has the parameter; a parameter not given takes its Default. One without
	// either is an error when a function's environment refers to it (pipelinectl local up
	// --parameter). A name that starts with "/" ("/app/greeting") is a Systems Manager
	// parameter's: the kit answers SSM's GetParameter and GetParameters for it with the
	// value, as it does for the parameter a stack's SSM-typed CfnParameter names by its
	// Default when that CfnParameter is given here.
	Parameters map[string]string
	// Secrets are the values the kit answers Secrets Manager's GetSecretValue with, by the
	// secret's name or ARN (pipelinectl local up --secret NAME=VALUE). A secret not given is
	// answered with ResourceNotFoundException naming the way to give it.
	Secrets map[string]string
	// Logs receives every line a function writes, with the function's logical id. Default:
	// the lines are dropped (the kit still reads them for outcomes and metrics).
	Logs func(function string, line []byte)
	// StackLogs receives every line a function writes, as Logs does, with the function's
	// stack too (its name as `cdk ls` prints it, "Dev/Orders" in a Stage): where several
	// stacks or stages run, logical ids repeat. Default: the lines are dropped.
	StackLogs func(stack, function string, line []byte)
	// Progress receives what Start does (building, fetching, starting) and, with Cron, each
	// firing of a schedule. Default: nothing.
	Progress io.Writer
	// AlarmTimeScale is how many times faster than the wall clock alarms are evaluated
	// (every period, and the heartbeats' rate, divided by it). Default AlarmTimeScale (30:
	// a 5-minute period takes 10 s); 1 evaluates in real time.
	AlarmTimeScale int
	// VisibilityTimeout replaces the template's visibility timeout on every pipeline queue
	// (whole seconds, 1 s to 12 h), so that a failed or deferred record comes back sooner:
	// the timing changes, not the semantics (a record still in progress when it reappears is
	// a duplicate the consumer defers). Default: the consumer's timeout plus the mapping's
	// batching window (a record waits it out first), when the template's is longer (the
	// constructs make it 6 timeouts: 3 minutes for a 30 s consumer, which a
	// duplicate deferred behind its first copy would wait). Much shorter than the consumer's
	// timeout, a duplicate deferred behind a slow attempt is received often enough to reach
	// the queue's maxReceiveCount and the DLQ, which it would not in AWS.
	VisibilityTimeout time.Duration
	// Cron fires each dispatcher on its schedule's expression (cron, rate or at, in its
	// time zone) in real time, on the wall clock, as Scheduler does, besides Fire. Each
	// firing is reported to Progress. Default: off; a test fires on demand with Fire.
	Cron bool
	// NoHeartbeats leaves the template's heartbeat schedules (constructs/heartbeat) off.
	// With them on, as deployed, they send a probe every rate on the alarm clock, which the
	// consumer records under a "pipelinectl-probe-" key.
	NoHeartbeats bool
	// Attach runs the functions against the stacks as they are deployed at an endpoint (an
	// emulator such as fakecloud), with their roles' credentials, instead of on local
	// backends: see Attach. Nil: the kit's own backends.
	Attach *Attach

	// clock is what Cron reads as the wall clock: time.Now, or a test's clock shifted to
	// just before a minute (export_test.go), so that a test of an every-minute schedule
	// does not wait out up to a minute.
	clock func() time.Time
}

// now is the time Cron fires by.
func (o *Options) now() time.Time {
	if o.clock != nil {
		return o.clock()
	}
	return time.Now()
}

// Kit is a cloud assembly's pipelines running on this machine: DynamoDB Local and ElasticMQ
// on free ports, the stacks' queues and tables created from their templates, every
// consumer and dispatcher built from its source for this machine and run behind a local
// Lambda Runtime API, each consumer fed by a poller that behaves as its event source
// mapping, and every alarm of the templates evaluated from what runs. Its methods are safe
// for concurrent use. Stop it (Close) when done: it leaves no process behind.
type Kit struct {
	opts    Options
	started time.Time // the stacks' CreationTime, as DescribeStacks answers it
	region  string
	at      *attached // Options.Attach's deployment, nil for the kit's own backends
	sqsd    *sqslocal.Server
	ddb     *dynamolocal.Server
	proxy   *ddbproxy.Proxy // the functions' DynamoDB endpoint: counts calls, injects faults
	sq      *sqs.Client
	db      *dynamodb.Client
	binDir  string
	binLock func() // releases the lock that marks binDir as this kit's
	stacks  []*stackRun

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	envs     []*lambdart.Env
	bgErrs   []error
	standIns []string
	notRun   []string
	sayMu    sync.Mutex
	inject   atomic.Pointer[func(DynamoDBCall) string] // InjectDynamoDB's
	observed atomic.Pointer[[]*stackRun]               // the stacks deployed so far, for the proxy's Observe
	api      *http.Server                              // the Lambda, CloudWatch and Scheduler stand-ins (awsapi.go)
	apiLn    net.Listener
	s3       *s3mem.Backend // the stacks' buckets (s3.go)
	s3h      http.Handler
	apiURL   string
	egress   *egress                   // the functions' HTTP and HTTPS proxy
	refusals map[string]map[string]int // calls egress refused: by caller, then host
	said     map[string]bool           // what sayOnce said in Kit.Err
	stopped  atomic.Bool
	fires    atomic.Int64
}

type stackRun struct {
	ref       cfn.StackRef
	physical  map[string]string // attached: logical id -> physical id, as deployed
	d         *standin.Deployment
	obs       *standin.Observer
	pipelines []*run
}

// Running is one pipeline of a running Kit: where its parts are on this machine.
type Running struct {
	// Name is the pipeline's name: the construct path of its consumer without the stack
	// and the "/Consumer" and "/Resource" parts ("Standard", "Orders"). Kit methods take it,
	// or "Stack/Name" when two stacks have one of that name. Stack is the stack's construct
	// path ("Dev/Pipeline" in a Stage), StackName its CloudFormation name ("Dev-Pipeline"),
	// which Outputs and pipelinectl's --stack use.
	Name, Stack, StackName string
	QueueURL, DLQURL       string
	// Table is the idempotency table's name.
	Table string
	// Consumer and Dispatcher are the logical ids of the functions (Dispatcher "" without one),
	// ConsumerName and DispatcherName their names here (what the stand-in Lambda API and
	// the outputs know them by).
	Consumer, Dispatcher         string
	ConsumerName, DispatcherName string
	Fifo                         bool
	// Filters are the patterns of the mapping's filter criteria, nil for none: a record
	// that matches none of them is deleted undelivered, as Lambda does.
	Filters []string
	// Heartbeats reports a schedule of the stack that sends heartbeats to the queue
	// (constructs/heartbeat), which the kit sends too unless Options.NoHeartbeats.
	Heartbeats bool
}

// run is a Running pipeline and what drives it.
type run struct {
	Running
	p      standin.Pipeline
	st     *stackRun
	ledger *standin.Ledger
	poller *standin.Poller
	// lastErr is the consumer's last failed invocation (an error it returned, a crash, a
	// failed init, a timeout), for Status.
	lastErr atomic.Pointer[string]
	mu      sync.Mutex
	disp    *lambdart.Env
}

// Start brings up the pipelines of the stacks in opts.Assembly. It needs Java 17+ and Go;
// the first run fetches DynamoDB Local and ElasticMQ with Maven into CacheDir (or use the
// directories in $DYNAMODB_LOCAL_DIR and $ELASTICMQ_DIR, which Start sets when unset). A
// template with something the kit cannot apply is an error naming it; properties with no
// local meaning (encryption, tags, backups) are listed by Ignored. ctx bounds the start only.
func Start(ctx context.Context, opts Options) (*Kit, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	refs, err := stacksOf(opts)
	if err != nil {
		return nil, err
	}
	k := &Kit{opts: opts, started: time.Now(), region: sqslocal.Region}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			k.Close()
		}
	}()
	refs, templates, sources, err := k.read(refs)
	if err != nil {
		return nil, err
	}
	clashes(refs, templates)
	if err := nestedPlanned(refs, templates); err != nil { // a nested stack's mapping numbers, before plan copies them
		return nil, err
	}
	if err := linkImports(refs, templates); err != nil {
		return nil, err
	}
	plans, err := k.plan(refs, templates, sources)
	if err != nil {
		return nil, err
	}
	if opts.Attach != nil {
		if err := k.startAttached(ctx, plans, sources); err != nil {
			return nil, err
		}
		ok = true
		return k, nil
	}
	if err := checkNames(plans, opts); err != nil {
		return nil, err
	}
	notRun, err := checkEnv(plans, opts.Env) // every problem at once, before anything starts
	if err != nil {
		return nil, err
	}
	k.notRun = append(k.notRun, notRun...)
	if err := checkJava(ctx); err != nil { // before the builds: say what to install at once
		return nil, err
	}
	bins, err := k.buildAll(ctx, plans)
	if err != nil {
		return nil, err
	}
	if err := k.startBackends(ctx); err != nil {
		return nil, err
	}
	// Every stack's queues and tables first, so that a function of one stack may refer to
	// another's (Fn::ImportValue), then the functions.
	for _, sp := range plans {
		if err := k.create(ctx, sp); err != nil {
			return nil, err
		}
	}
	sts := slices.Clone(k.stacks)
	k.observed.Store(&sts)
	for i, sp := range plans {
		if err := k.run(ctx, k.stacks[i], sp, sources[i], bins); err != nil {
			return nil, err
		}
	}
	if err := k.serveAWS(); err != nil {
		return nil, err
	}
	ok = true
	return k, nil
}

// startAttached runs the plans' functions against their deployed stacks (Options.Attach):
// no backend, nothing created.
func (k *Kit) startAttached(ctx context.Context, plans []*stackPlan, sources []map[string]cfn.Source) error {
	if err := k.connect(ctx); err != nil {
		return err
	}
	bins, err := k.buildAll(ctx, plans)
	if err != nil {
		return err
	}
	for _, sp := range plans {
		if err := k.attachStack(ctx, sp); err != nil {
			return err
		}
	}
	sts := slices.Clone(k.stacks)
	k.observed.Store(&sts)
	if err := k.listenAWS(); err != nil {
		return err
	}
	for i, sp := range plans {
		if err := k.run(ctx, k.stacks[i], sp, sources[i], bins); err != nil {
			return err
		}
	}
	return k.serveAWS()
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Assembly == "" {
		return o, errors.New("local: Options.Assembly is empty: set it to the directory `cdk synth` wrote (cdk.out)")
	}
	// Every path the kit reads of the assembly (its templates, assets, the module above it)
	// is from here on absolute: a relative one would end its walk up at ".".
	abs, err := filepath.Abs(o.Assembly)
	if err != nil {
		return o, fmt.Errorf("local: Options.Assembly %s: %w", o.Assembly, err)
	}
	o.Assembly = abs
	if o.Environments <= 0 {
		o.Environments = DefaultEnvironments
	}
	if v := o.VisibilityTimeout; v != 0 && (v < time.Second || v > 12*time.Hour || v%time.Second != 0) {
		return o, fmt.Errorf("local: Options.VisibilityTimeout %v: want whole seconds from 1s to 12h (SQS's range), or 0 for the consumer's timeout", v)
	}
	if o.AlarmTimeScale <= 0 {
		o.AlarmTimeScale = AlarmTimeScale
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
}

// stacksOf is the stacks of the assembly that Options.Stacks names (every one by default).
func stacksOf(opts Options) ([]cfn.StackRef, error) {
	all, err := cfn.Stacks(opts.Assembly)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local: %s is not a cloud assembly (no manifest.json): run `cdk synth` (or `cdk synth -o DIR`) first", opts.Assembly)
	}
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	refs, err := standin.PickStacks(all, opts.Stacks)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return refs, nil
}

// read reads each stack's template and the sources of its functions, with the parameters
// given, and makes a stand-in for each queue a stack imports (Kit.StandIns). Each nested
// stack whose template the assembly holds (CDK's NestedStack) becomes a stack of the run,
// right after the stack it is nested in: the returned refs include them.
func (k *Kit) read(refs []cfn.StackRef) ([]cfn.StackRef, []*standin.Template, []map[string]cfn.Source, error) {
	var templates []*standin.Template
	var sources []map[string]cfn.Source
	for i := 0; i < len(refs); i++ { // refs grows by the nested stacks found
		ref := refs[i]
		fail := func(err error) ([]cfn.StackRef, []*standin.Template, []map[string]cfn.Source, error) {
			return nil, nil, nil, fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
		}
		t, err := standin.LoadTemplate(filepath.Join(ref.Dir, ref.TemplateFile))
		if err != nil {
			return fail(err)
		}
		own := ownsPath(ref, t.Nested)
		src, err := cfn.ReadSources(ref.Dir, ref.Artifact(), own)
		if err != nil {
			return fail(err)
		}
		templates, sources = append(templates, t), append(sources, src)
		for j, n := range t.Nested {
			name := n.Path[strings.LastIndex(n.Path, "/")+1:]
			refs = slices.Insert(refs, i+1+j, cfn.StackRef{ID: ref.ID + "/" + n.LogicalID, DisplayName: ref.DisplayName + "/" + name,
				StackName: ref.StackName + "-" + name, Dir: ref.Dir, TemplateFile: n.TemplateFile, Environment: ref.Environment,
				Parent: ref.ID, ParentResource: n.LogicalID, Path: n.Path})
		}
		if ref.Parent != "" {
			continue // its parameters are the parent's values (nestedParameters); it imports no queue of ours
		}
		if err := t.UseParameters(k.opts.Parameters); err != nil { // an imported queue's ARN may be one
			return fail(err)
		}
		existing, err := cfn.ReadExistingQueues(ref.Dir, ref.ID, own)
		if err != nil {
			return fail(err)
		}
		for _, mapping := range slices.Sorted(maps.Keys(existing)) {
			notes, err := t.StandInQueue(mapping, existing[mapping])
			if err != nil {
				return fail(err)
			}
			for _, n := range notes {
				k.standIns = append(k.standIns, ref.DisplayName+": "+n)
			}
		}
	}
	return refs, templates, sources, nil
}

// ownsPath reports the construct paths of ref's own resources: those under its construct
// path, not under one of its nested stacks' (a nested stack's metadata is in its top
// stack's, and its logical ids may be its parent's too).
func ownsPath(ref cfn.StackRef, nested []standin.NestedStack) func(path string) bool {
	return func(path string) bool {
		if ref.Path != "" && !strings.HasPrefix(path, "/"+ref.Path+"/") {
			return false
		}
		return !slices.ContainsFunc(nested, func(n standin.NestedStack) bool { return strings.HasPrefix(path, "/"+n.Path+"/") })
	}
}

// plan plans each stack (what runs, what cannot: Kit.NotRun), and refuses an assembly in
// which no pipeline would run.
func (k *Kit) plan(refs []cfn.StackRef, templates []*standin.Template, sources []map[string]cfn.Source) ([]*stackPlan, error) {
	plans := make([]*stackPlan, len(refs))
	var names []string
	running := 0
	for i, t := range templates {
		var err error
		if plans[i], err = plan(refs[i], t, sources[i]); err != nil {
			return nil, fmt.Errorf("local: stack %s: %w", refs[i].DisplayName, err)
		}
		for _, p := range plans[i].pipelines {
			if !p.Mapping.Disabled {
				running++
			}
		}
		names = append(names, refs[i].DisplayName)
		for _, n := range plans[i].notRun {
			k.notRun = append(k.notRun, refs[i].DisplayName+": "+n)
		}
	}
	if running == 0 {
		why := ""
		if len(k.notRun) > 0 {
			why = ":\n  - " + strings.Join(k.notRun, "\n  - ")
		}
		return nil, fmt.Errorf("local: no pipeline to run: none of the stacks %s has an SQS event source mapping onto a function the kit can run%s", strings.Join(names, ", "), why)
	}
	return plans, nil
}

// clashes marks, in each template, the physical names it gives (a QueueName, TableName,
// TopicName or BucketName) that another stack of the run gives too, as two stages of one app
// do: those are suffixed with the stack's name locally, and the stack's Ignored says so.
// Every other given name is kept, so that a function that has it as a plain string finds it.
// A name is compared across kinds too (a queue and a topic of one name are suffixed both):
// rarer than a clash, and only less faithful, never wrong.
func clashes(refs []cfn.StackRef, templates []*standin.Template) {
	by := map[string][]int{}
	for i, t := range templates {
		for name := range t.GivenNames() {
			by[name] = append(by[name], i)
		}
	}
	for i, t := range templates {
		t.Clashes = map[string]bool{}
		for name, id := range t.GivenNames() {
			if len(by[name]) < 2 {
				continue
			}
			t.Clashes[name] = true
			var others []string
			for _, j := range by[name] {
				if j != i {
					others = append(others, refs[j].DisplayName)
				}
			}
			here := strings.TrimSuffix(name, ".fifo") + "-" + stackSuffix(refs[i])
			if strings.HasSuffix(name, ".fifo") {
				here += ".fifo"
			}
			t.NotApplied = append(t.NotApplied, fmt.Sprintf("%s's name %s is given by stack %s too: here it is %s (a function that has the name as a plain string misses it)",
				id, name, strings.Join(others, ", "), here))
		}
	}
}

// buildAll builds the functions into a directory of the kit's own, holding its lock, after
// removing those of kits that are gone.
func (k *Kit) buildAll(ctx context.Context, plans []*stackPlan) (map[string]string, error) {
	sweepStale()
	sweepKeptBuilds(time.Now().Add(-keptBuildsFor))
	var err error
	if k.binDir, err = os.MkdirTemp("", binDirPrefix); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if k.binLock, err = holdLock(k.binDir, binLockName); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return k.build(ctx, plans)
}

// startBackends starts DynamoDB Local and ElasticMQ (installed first if need be), and the
// proxy in front of DynamoDB Local through which the functions' calls go: it injects the
// faults InjectDynamoDB asks for and feeds each stack's DynamoDB metrics.
func (k *Kit) startBackends(ctx context.Context) error {
	if err := useBackends(ctx, k.opts.Progress); err != nil {
		return err
	}
	fmt.Fprintln(k.opts.Progress, "local: starting DynamoDB Local and ElasticMQ")
	var wg sync.WaitGroup
	var dErr, sErr error
	wg.Go(func() { k.ddb, dErr = dynamolocal.StartContext(ctx) })
	wg.Go(func() { k.sqsd, sErr = sqslocal.StartKind(ctx, sqslocal.ElasticMQ) })
	wg.Wait()
	if err := errors.Join(dErr, sErr); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	k.sq, k.db = k.sqsd.Client(), k.ddb.Client()
	k.s3, k.s3h = newS3()
	if err := k.listenAWS(); err != nil {
		return err
	}
	var err error
	if k.egress, err = listenEgress(k.binDir, k.refusedCall, k.answerFor); err != nil {
		return err
	}
	if k.proxy, err = ddbproxy.New(k.ddb.Endpoint()); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	// The proxy's hooks are set once, before any function runs, and read what changes
	// through atomics: InjectDynamoDB swaps the fault function, each deploy the stacks.
	k.proxy.Policy = func(c ddbproxy.Call) ddbproxy.Fault {
		fail := k.inject.Load()
		if fail == nil {
			return ddbproxy.Fault{}
		}
		switch typ := (*fail)(DynamoDBCall{Op: c.Op, Table: c.Table, Key: c.Key}); {
		case typ == "":
			return ddbproxy.Fault{}
		case strings.Contains(typ, "InternalServerError") || strings.Contains(typ, "ServiceUnavailable"):
			return ddbproxy.Fault{Status: 500, Type: typ}
		default:
			return ddbproxy.Fault{Status: 400, Type: typ}
		}
	}
	k.proxy.Observe = func(c ddbproxy.Call, r ddbproxy.Reply) { // DynamoDB's metrics of each stack's tables
		if sts := k.observed.Load(); sts != nil {
			for _, st := range *sts {
				st.obs.Dynamo(c, r)
			}
		}
	}
	return nil
}

// nameSafe matches what may not be in a local resource name (a stack's name becomes the
// suffix of its queues' and tables' names).
var nameSafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// build compiles the source of every function that runs, once per source, for this
// machine; a function whose code is a bootstrap executable in the assembly runs as it is.
func (k *Kit) build(ctx context.Context, plans []*stackPlan) (map[string]string, error) {
	bins := map[string]string{}  // "<stack id>/<function>" -> bootstrap
	built := map[string]string{} // go build's directory and command line -> bootstrap
	for _, sp := range plans {
		for _, id := range slices.Sorted(maps.Keys(sp.code)) {
			c := sp.code[id]
			if c.zip != "" {
				out, err := k.unzip(c)
				if err != nil {
					return nil, fmt.Errorf("local: stack %s: function %s: %w", sp.ref.DisplayName, id, err)
				}
				bins[sp.ref.ID+"/"+id] = out
				continue
			}
			if c.src == nil && c.rebuilt == nil {
				bins[sp.ref.ID+"/"+id] = c.bootstrap
				continue
			}
			spec, what, alt := c.spec()
			key := strings.Join(slices.Concat(spec.Env, spec.Args(), []string{spec.Dir}), "\x00")
			if out, ok := built[key]; ok {
				bins[sp.ref.ID+"/"+id] = out
				continue
			}
			sum := sha256.Sum256([]byte(key))
			out := filepath.Join(k.binDir, hex.EncodeToString(sum[:8]), "bootstrap")
			if err := buildCode(ctx, spec, what, alt, out, k.opts.Progress); err != nil {
				return nil, fmt.Errorf("local: stack %s: function %s: %w", sp.ref.DisplayName, id, err)
			}
			built[key], bins[sp.ref.ID+"/"+id] = out, out
		}
	}
	return bins, nil
}

// unzip extracts the executable of a zip asset into the kit's directory, once per zip.
func (k *Kit) unzip(c code) (string, error) {
	sum := sha256.Sum256([]byte(c.zip + "\x00" + c.member))
	out := filepath.Join(k.binDir, hex.EncodeToString(sum[:8]), c.member)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	b, _, err := zipMember(c.zip, c.member)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	return out, os.WriteFile(out, b, 0o755)
}

// create creates one stack's queues and tables.
func (k *Kit) create(ctx context.Context, sp *stackPlan) error {
	ref := sp.ref
	byID := func(id string) *standin.Deployment {
		for _, st := range k.stacks {
			if st.ref.ID == id {
				return st.d
			}
		}
		return nil
	}
	if ref.Parent != "" { // the parent is created: its values are known
		if err := sp.t.UseParameters(nestedParameters(ref, byID(ref.Parent))); err != nil {
			return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
		}
	}
	d, err := standin.Deploy(ctx, k.sq, k.db, sp.t, stackSuffix(ref))
	if err != nil {
		return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
	}
	d.StackName, d.Overrides = ref.StackName, k.opts.Env
	d.Import = func(name string) (any, error) {
		deps := make([]*standin.Deployment, len(k.stacks))
		for i, st := range k.stacks {
			deps[i] = st.d
		}
		return importValue(deps, name)
	}
	d.NestedOutput = func(res, out string) (any, error) { return nestedOutput(byID, ref.ID, res, out) }
	for _, id := range slices.Sorted(maps.Keys(d.Bucket)) {
		if err := k.s3.CreateBucket(d.Bucket[id]); err != nil {
			return fmt.Errorf("local: stack %s: bucket %s (%s): %w", ref.DisplayName, id, d.Bucket[id], err)
		}
	}
	st := &stackRun{ref: ref, d: d}
	st.obs = standin.NewObserver(d, k.sq, st.functionName, k.opts.AlarmTimeScale, func(format string, args ...any) {
		k.background(fmt.Errorf("stack %s: "+format, append([]any{ref.DisplayName}, args...)...))
	})
	k.stacks = append(k.stacks, st)
	return nil
}

// run starts one stack's pipelines: each consumer's environments behind its poller, each
// dispatcher's environment and, with Options.Cron, its schedule.
func (k *Kit) run(ctx context.Context, st *stackRun, sp *stackPlan, sources map[string]cfn.Source, bins map[string]string) error {
	ref, t, d, ps := sp.ref, sp.t, st.d, sp.pipelines
	for _, p := range ps {
		if k.at != nil {
			// The stack's own mapping would take the messages (fakecloud's, with no
			// function runtime, deletes them); the kit's poller is the mapping.
			if err := k.at.disableMappings(ctx, d.FunctionName(p.Consumer), d.QueueARN[p.Queue]); err != nil {
				return fmt.Errorf("local: attach: stack %s: %w", ref.DisplayName, err)
			}
			continue // the queues and the table as deployed: the poller asks for visibility
		}
		if err := k.standIn(ctx, st, p.Consumer); err != nil {
			return err
		}
		if visibility := k.visibility(t, p); visibility > 0 {
			if _, err := k.sq.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(d.QueueURL[p.Queue]),
				Attributes: map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility.Seconds()))}}); err != nil {
				return fmt.Errorf("local: stack %s: queue %s VisibilityTimeout: %w", ref.DisplayName, p.Queue, err)
			}
		}
	}
	for _, p := range ps {
		pollSQ, err := k.pollClient(ctx, st, p.Consumer)
		if err != nil {
			return err
		}
		env, err := d.Env(p.Consumer)
		if err != nil {
			return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
		}
		path := cmp.Or(sources[p.Consumer].Path, t.Functions[p.Consumer].Path, p.Consumer)
		r := &run{Running: Running{Name: pipelineName(path, ref.DisplayName), Stack: ref.DisplayName, StackName: ref.StackName,
			QueueURL: d.QueueURL[p.Queue], DLQURL: d.QueueURL[p.DLQ], Table: env[contract.EnvTableName],
			Consumer: p.Consumer, Dispatcher: p.Dispatcher, ConsumerName: d.FunctionName(p.Consumer), Fifo: p.Fifo, Filters: p.Mapping.Filters},
			p: p, st: st, ledger: standin.NewLedger()}
		if p.Dispatcher != "" {
			r.DispatcherName = d.FunctionName(p.Dispatcher)
		}
		r.Heartbeats = slices.ContainsFunc(t.SendSchedules, func(s standin.SendSchedule) bool { return s.Queue == p.Queue })
		n := k.opts.Environments
		if p.Mapping.MaxConcurrency > 0 {
			n = min(n, p.Mapping.MaxConcurrency)
		}
		envs := make([]standin.Invoker, n)
		for i := range envs {
			e, err := k.env(ctx, st, p.Consumer, bins[ref.ID+"/"+p.Consumer], r.ledger.Line)
			if err != nil {
				return err
			}
			envs[i] = k.invoker(st, p.Consumer, e, r)
		}
		if p.Dispatcher != "" {
			if r.disp, err = k.env(ctx, st, p.Dispatcher, bins[ref.ID+"/"+p.Dispatcher], nil); err != nil {
				return err
			}
			if k.opts.Cron {
				if err := k.cron(r); err != nil {
					return fmt.Errorf("local: stack %s: %w", ref.DisplayName, err)
				}
			}
		}
		r.poller = &standin.Poller{SQS: pollSQ, QueueURL: r.QueueURL, QueueARN: d.QueueARN[p.Queue], Region: k.region, Mapping: p.Mapping, Fifo: p.Fifo, Envs: envs}
		if k.at != nil { // the deployed queue unchanged: each receive asks for it
			r.poller.VisibilityTimeout = int32(k.visibility(t, p).Seconds())
		}
		k.wg.Go(func() {
			if p.Mapping.Disabled {
				return
			}
			if err := r.poller.Run(k.ctx); err != nil {
				k.background(fmt.Errorf("pipeline %s poller: %w", r.Name, err))
			}
		})
		if !k.opts.NoHeartbeats {
			st.obs.StartHeartbeats(p.Queue)
		}
		st.pipelines = append(st.pipelines, r)
	}
	return nil
}

// visibility is the visibility timeout a pipeline's queue gets here (Options.VisibilityTimeout):
// the consumer's timeout and the batching window a record may wait through first, when the
// template's is longer; 0 keeps the template's.
func (k *Kit) visibility(t *standin.Template, p standin.Pipeline) time.Duration {
	visibility := k.opts.VisibilityTimeout
	held := time.Duration(t.Functions[p.Consumer].Timeout+p.Mapping.WindowSeconds) * time.Second
	if visibility == 0 && t.Queues[p.Queue].VisibilityTimeout() > held {
		visibility = held
	}
	return visibility
}

// standIn creates, for a consumer whose idempotency table the stack imports (an existing
// table, named but not created by the template), a local table of that name with the key
// schema the consumer is told (IDEMPOTENCY_PARTITION_KEY, IDEMPOTENCY_SORT_KEY) and time to
// live on "expiration", and notes it in StandIns.
func (k *Kit) standIn(ctx context.Context, st *stackRun, consumer string) error {
	env, err := st.d.Env(consumer)
	if err != nil {
		return fmt.Errorf("local: stack %s: %w", st.ref.DisplayName, err)
	}
	name := env[contract.EnvTableName]
	if name == "" || slices.Contains(slices.Collect(maps.Values(st.d.TableName)), name) {
		return nil
	}
	if _, err := k.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}); err == nil {
		return nil // another consumer's stand-in
	}
	pk, sk := env[contract.EnvPartitionKey], env[contract.EnvSortKey]
	if pk == "" {
		pk = "id"
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: dbtypes.BillingModePayPerRequest,
		KeySchema:            []dbtypes.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: dbtypes.KeyTypeHash}},
		AttributeDefinitions: []dbtypes.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: dbtypes.ScalarAttributeTypeS}}}
	if sk != "" {
		in.KeySchema = append(in.KeySchema, dbtypes.KeySchemaElement{AttributeName: aws.String(sk), KeyType: dbtypes.KeyTypeRange})
		in.AttributeDefinitions = append(in.AttributeDefinitions, dbtypes.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: dbtypes.ScalarAttributeTypeS})
	}
	if _, err := k.db.CreateTable(ctx, in); err != nil {
		return fmt.Errorf("local: stack %s: a stand-in for the imported idempotency table %s: %w", st.ref.DisplayName, name, err)
	}
	if _, err := k.db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String("expiration"), Enabled: aws.Bool(true)}}); err != nil {
		return fmt.Errorf("local: stack %s: TTL of the stand-in table %s: %w", st.ref.DisplayName, name, err)
	}
	key := pk
	if sk != "" {
		key += ", sort key " + sk
	}
	k.mu.Lock()
	k.standIns = append(k.standIns, fmt.Sprintf("%s: table %s (imported by the stack; created locally with partition key %s, TTL on expiration)", st.ref.DisplayName, name, key))
	k.mu.Unlock()
	return nil
}

// StandIns lists what the kit created locally for resources the stacks import (an existing
// idempotency table, an existing queue and its DLQ) and what it assumed of them: they exist
// in your account, not in the templates.
func (k *Kit) StandIns() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.standIns)
}

// NotRun lists, per stack, what the kit does not run and why: a mapping onto a function the
// stack does not create, a function whose code it cannot run here (another runtime or
// architecture), a function outside the pipelines. Their queues and tables are created.
func (k *Kit) NotRun() []string { return slices.Clone(k.notRun) }

// DynamoDBCall is one DynamoDB request a function makes, as InjectDynamoDB sees it.
type DynamoDBCall struct {
	Op    string // "UpdateItem", "GetItem", ...
	Table string // the local table name
	Key   string // the item's partition key value when the request names one
}

// InjectDynamoDB makes the functions' DynamoDB calls fail: fail is asked for each call and
// returns the error type to answer with instead of performing it ("" performs it), e.g.
// "AccessDeniedException" (as while a new IAM grant propagates; the SDK does not retry it),
// "ProvisionedThroughputExceededException" or "ThrottlingException" (retried by the SDK),
// or "InternalServerError" (a 500). nil stops injecting. It returns how many calls were
// failed so far. A kit attached to a deployment (Options.Attach) injects nothing: the
// functions call the deployment directly.
func (k *Kit) InjectDynamoDB(fail func(DynamoDBCall) string) int64 {
	if fail == nil {
		k.inject.Store(nil)
	} else {
		k.inject.Store(&fail)
	}
	return k.Injected()
}

// Injected is how many DynamoDB calls InjectDynamoDB failed so far.
func (k *Kit) Injected() int64 {
	if k.proxy == nil {
		return 0
	}
	return k.proxy.Injected.Load()
}

// Env is a pipeline's consumer environment as it runs here: the template's variables with
// every reference resolved to the local resources (a table of yours passed as
// ORDERS_TABLE_NAME is its local name).
func (k *Kit) Env(pipeline string) (map[string]string, error) {
	r, err := k.pipeline(pipeline)
	if err != nil {
		return nil, err
	}
	return r.st.d.Env(r.Consumer)
}

// pipelineName is a consumer's construct path without the stack and its own last parts.
func pipelineName(path, stack string) string {
	name := strings.TrimPrefix(strings.TrimPrefix(path, "/"), stack+"/") // the manifest's paths start with "/", the template's not
	for _, suffix := range []string{"/Resource", "/Resource", "/Consumer"} {
		name = strings.TrimSuffix(name, suffix)
	}
	return name
}

func (st *stackRun) functionName(id string) string { return st.d.FunctionName(id) }

// env starts one execution environment of a function (lazily: the process starts at the
// first invocation) with the template's environment and the local endpoints.
func (k *Kit) env(ctx context.Context, st *stackRun, id, bin string, ledger func([]byte)) (*lambdart.Env, error) {
	vars, err := st.d.Env(id)
	if err != nil {
		return nil, fmt.Errorf("local: stack %s: %w", st.ref.DisplayName, err)
	}
	if k.at != nil {
		creds, err := k.attachedEnv(ctx, st, id, vars)
		if err != nil {
			return nil, err
		}
		return k.startEnv(st, id, bin, vars, ledger, creds)
	}
	// Every service at the kit: SQS and DynamoDB at their servers, any other at the
	// stand-ins, which answer what they do not serve with an error naming it. Nothing a
	// function calls reaches AWS.
	// And every HTTP and HTTPS call through the kit's proxy, whatever the client: an SDK
	// that ignores the endpoints, a plain HTTP client (egress refuses what leaves the machine).
	set := map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": k.proxy.URL, "AWS_ENDPOINT_URL_SQS": k.sqsd.Endpoint(), "AWS_ENDPOINT_URL": k.apiURL}
	maps.Copy(set, k.egress.environ(st.ref.ID+"|"+id))
	for name, v := range set {
		if _, over := st.d.Override(id, name); !over {
			vars[name] = v
		}
	}
	return k.startEnv(st, id, bin, vars, ledger, nil)
}

// startEnv makes one execution environment of a function with the environment vars and,
// attached, the credentials of its role (each process gets them as it starts).
func (k *Kit) startEnv(st *stackRun, id, bin string, vars map[string]string, ledger func([]byte), creds func(context.Context) (lambdart.Credentials, error)) (*lambdart.Env, error) {
	f := st.d.Template.Functions[id]
	e, err := lambdart.New(lambdart.Config{
		Binary: bin, Env: vars, FunctionName: st.functionName(id), Credentials: creds,
		Timeout: time.Duration(f.Timeout) * time.Second, MemoryMB: f.MemoryMB, Region: k.region,
		Output: func(line []byte) {
			st.obs.Line(line)
			if ledger != nil {
				ledger(line)
			}
			if k.opts.StackLogs != nil {
				k.opts.StackLogs(st.ref.DisplayName, id, line)
			}
			if k.opts.Logs != nil {
				k.opts.Logs(id, line)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	k.mu.Lock()
	k.envs = append(k.envs, e)
	k.mu.Unlock()
	return e, nil
}

// invoker is a poller's view of an environment: a function error fails the invocation, and
// each invocation is a Lambda metric.
func (k *Kit) invoker(st *stackRun, id string, e *lambdart.Env, r *run) standin.Invoker {
	return standin.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		res, err := k.invoke(ctx, st, id, e, payload)
		if err == nil && res.FunctionError != nil {
			err = res.FunctionError
		}
		if err != nil {
			if ctx.Err() == nil {
				msg := err.Error()
				r.lastErr.Store(&msg)
			}
			return nil, err
		}
		return res.Payload, nil
	})
}

func (k *Kit) invoke(ctx context.Context, st *stackRun, id string, e *lambdart.Env, payload []byte) (lambdart.Result, error) {
	start := time.Now()
	res, err := e.Invoke(ctx, payload)
	if ctx.Err() == nil {
		st.obs.Invocation(id, start, res, err)
	}
	return res, err
}

func (k *Kit) background(err error) {
	if k.stopped.Load() {
		return
	}
	k.mu.Lock()
	k.bgErrs = append(k.bgErrs, err)
	k.mu.Unlock()
}

// Err is what went wrong in the background so far (a poller's SQS error, a heartbeat that
// could not be sent), or nil.
func (k *Kit) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return errors.Join(k.bgErrs...)
}

// Close stops everything the kit started: pollers (an invocation in progress is cut short,
// its messages return to their queues after the visibility timeout, as after a crash),
// function processes, heartbeats, both servers; and removes the built binaries. It may be
// called more than once, and from a signal handler's goroutine.
func (k *Kit) Close() error {
	if k == nil || k.stopped.Swap(true) { // nil: a Start that failed, closed by a defer
		return nil
	}
	if k.cancel != nil {
		k.cancel() // first: a handler of the AWS stand-ins sees it and starts nothing more
	}
	if k.api == nil && k.apiLn != nil {
		k.apiLn.Close() // taken, never served: Start failed first
	}
	if k.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		k.api.Shutdown(ctx) // waits for the handlers, so none adds to wg while it is waited for
		cancel()
		k.api.Close()
	}
	k.wg.Wait()
	for _, st := range k.stacks {
		if st.obs != nil {
			st.obs.Stop()
		}
	}
	k.mu.Lock()
	envs := k.envs
	k.envs = nil
	k.mu.Unlock()
	for _, e := range envs {
		e.Close()
	}
	k.stopServers()
	if k.proxy != nil {
		k.proxy.Close()
	}
	k.egress.Close()
	var err error
	if k.at != nil {
		err = k.at.enableMappings()
	}
	if k.binDir != "" {
		err = errors.Join(err, os.RemoveAll(k.binDir)) // the lock held until it is gone, so no sweep races it
	}
	if k.binLock != nil {
		k.binLock()
	}
	return err
}

// A kit builds its functions into a directory of its own in the temporary directory, and
// holds the lock of a file in it for its life. A kit killed (SIGKILL, a power cut) cannot
// remove its directory; the next one to start does, once nobody holds that lock.
const (
	binDirPrefix = "pipeline-local-"
	binLockName  = ".kit.lock"
)

// sweepStale removes the build directories of kits that are gone: their lock file exists
// and nobody holds it. A directory without one (a kit still starting: the file appears only
// once locked; a kit of an older version; a platform without flock) is left alone.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		if release, ok := freeLock(filepath.Join(dir, binLockName)); ok {
			os.RemoveAll(dir)
			release()
		}
	}
}

// stopServers stops ElasticMQ and DynamoDB Local side by side, first saying so when either
// writes its class-data archive on the way (the first of each on a machine does, once).
func (k *Kit) stopServers() {
	var dumping []string
	if k.sqsd != nil && k.sqsd.DumpsClassArchive() {
		dumping = append(dumping, "ElasticMQ")
	}
	if k.ddb != nil && k.ddb.DumpsClassArchive() {
		dumping = append(dumping, "DynamoDB Local")
	}
	if len(dumping) > 0 {
		verb := "writes its class-data archive as it stops"
		if len(dumping) > 1 {
			verb = "write their class-data archives as they stop"
		}
		fmt.Fprintf(k.opts.Progress, "local: %s %s, once per machine, so that later starts take half the time (at most %d minutes on a busy machine)\n",
			strings.Join(dumping, " and "), verb, int(jvmcds.DumpGrace.Minutes()))
	}
	var wg sync.WaitGroup
	if k.sqsd != nil {
		wg.Go(k.sqsd.Stop)
	}
	if k.ddb != nil {
		wg.Go(k.ddb.Stop)
	}
	wg.Wait()
}
