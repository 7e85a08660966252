package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/ddbproxy"
	"github.com/idempotent-sqs/pipeline/internal/dynamolocal"
	"github.com/idempotent-sqs/pipeline/internal/jvmcds"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/ledger"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
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
	// secret's name or ARN (pipelinectl local up --secret NAME=VALUE). A secret a stack
	// creates (AWS::SecretsManager::Secret) is the kit's own, under a local ARN: its value is
	// the one given here by its logical id or name, else the template's SecretString, else
	// one generated as Secrets Manager does from its GenerateSecretString. Any other secret
	// not given is answered with ResourceNotFoundException naming the way to give it.
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
	secrets  map[string]ownSecret      // the stacks' own secrets, by local ARN (config.go)
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
	ledger *ledger.Ledger
	poller *poller.Poller
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
	a, err := read(opts) // read.go: the stacks, their templates, their functions' sources
	if err != nil {
		return nil, err
	}
	if err := resolve(a); err != nil { // resolve.go: what one stack takes from another, as planned
		return nil, err
	}
	plans, notRun, err := planAll(a, opts) // plan.go: what runs, and what cannot and why
	if err != nil {
		return nil, err
	}
	k := &Kit{opts: opts, started: time.Now(), region: sqslocal.Region, standIns: a.standIns, notRun: notRun}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			k.Close()
		}
	}()
	if opts.Attach != nil {
		if err := k.startAttached(ctx, plans, a.sources); err != nil { // attach.go: against the deployed stacks
			return nil, err
		}
		ok = true
		return k, nil
	}
	if err := checkNames(plans, opts); err != nil {
		return nil, err
	}
	envNotRun, err := checkEnv(plans, opts.Env) // every problem at once, before anything starts
	if err != nil {
		return nil, err
	}
	k.notRun = append(k.notRun, envNotRun...)
	if err := checkJava(ctx); err != nil { // before the builds: say what to install at once
		return nil, err
	}
	bins, err := k.build(ctx, plans) // build.go: an executable of each function for this machine
	if err != nil {
		return nil, err
	}
	if err := k.create(ctx, plans); err != nil { // create.go: the backends, the queues and tables
		return nil, err
	}
	if err := k.run(ctx, plans, a.sources, bins); err != nil { // run.go: pollers and environments
		return nil, err
	}
	ok = true
	return k, nil
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
		return o, fmt.Errorf("local: Options.VisibilityTimeout %v: want whole seconds from 1s to 12h (SQS's range), or 0 for the consumer's timeout plus its mapping's batching window", v)
	}
	if o.AlarmTimeScale <= 0 {
		o.AlarmTimeScale = AlarmTimeScale
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o, nil
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
