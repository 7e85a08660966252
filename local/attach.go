package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/sdkhttp"
	"github.com/idempotent-sqs/pipeline/internal/standin"
)

// Attach is where the stacks of Options.Assembly are already deployed. With it, Start
// creates nothing and starts no backend: each consumer and dispatcher of the assembly runs on
// this machine, built from its source as always, against the deployed queues, table and keys,
// under its deployed name, with its deployed environment and with the credentials of its
// deployed execution role, so that every call it makes is checked against that role's
// policies. Each consumer is fed by the kit's own poller, which reads its queue with the
// role's credentials, as Lambda's event source mapping does.
//
// It is made for a rehearsal on an emulator (fakecloud: make rehearse), and it changes the
// deployed stack for as long as it runs:
//   - the stack's own event source mappings onto the consumers are disabled, so that they do
//     not take the messages the kit's pollers must get, and enabled again by Close;
//   - the function roles must let the caller assume them (sts:AssumeRole): a role made for
//     Lambda trusts lambda.amazonaws.com only, so the caller adds itself to the trust policy
//     first (make rehearse does; Start says which role refused).
//
// The queues stay as deployed: the pollers ask for Options.VisibilityTimeout (or its
// default) on each receive instead. The kit sends each heartbeat schedule's message itself, as locally (on the alarm
// clock, with the caller's credentials, not the schedule's role), since an emulator's
// Scheduler may not fire. Of its AWS stand-ins only Lambda's matters: Kit.Environ points
// AWS_ENDPOINT_URL_LAMBDA at it (a dispatcher's synchronous invocation, the mappings the
// kit's pollers are) and everything else at the endpoint. Each environment gets its role's
// credentials when it starts; they last as long as the role's sessions (1 hour by default),
// as Lambda's last as long as its environment.
type Attach struct {
	// Endpoint is the URL every AWS service of the deployment answers at (an emulator's
	// AWS_ENDPOINT_URL). Empty: the SDK's default resolution, which is AWS itself; the kit
	// then disables the live mappings of a live stack while it runs, which is rarely what
	// anyone wants outside a test account.
	Endpoint string
	// Region of the stacks. Default: the SDK's default resolution (AWS_REGION).
	Region string
	// Credentials are the caller's: the kit reads the stacks, sends messages, disables the
	// mappings and assumes the functions' roles with them. Default: the SDK's default chain.
	Credentials aws.CredentialsProvider
	// SessionDuration is how long each assumed role session lasts (STS's DurationSeconds,
	// whole seconds; AWS takes 15 minutes to the role's maximum session duration). The kit
	// renews a session before it ends and gives a function's new execution environments
	// the new one, so a run may last longer than any session. Default DefaultSessionDuration.
	SessionDuration time.Duration
}

// DefaultSessionDuration is Attach.SessionDuration unless set: STS's minimum, as stscreds
// asks by default.
const DefaultSessionDuration = 15 * time.Minute

// attached is what a kit attached to deployed stacks (Options.Attach) holds.
type attached struct {
	endpoint string
	cfg      aws.Config // the caller's
	cfn      *cloudformation.Client
	lambda   *lambda.Client
	sts      *sts.Client
	account  string
	session  time.Duration // of each role the kit assumes

	mu       sync.Mutex
	disabled []string // the stack's own mappings the kit disabled, by UUID: Close enables them again
	roles    map[string]aws.CredentialsProvider
	config   map[string]*lambda.GetFunctionConfigurationOutput // by function name
}

// connect makes the caller's clients of the deployment and reads the caller's account.
func (k *Kit) connect(ctx context.Context) error {
	a := k.opts.Attach
	var loads []func(*config.LoadOptions) error
	if a.Region != "" {
		loads = append(loads, config.WithRegion(a.Region))
	}
	if a.Credentials != nil {
		loads = append(loads, config.WithCredentialsProvider(a.Credentials))
	}
	if a.Endpoint != "" {
		loads = append(loads, config.WithBaseEndpoint(a.Endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return fmt.Errorf("local: attach: %w", err)
	}
	cfg.HTTPClient = sdkhttp.Wrap(cfg.HTTPClient)
	if cfg.Region == "" {
		return errors.New("local: attach: no region: set Options.Attach.Region or AWS_REGION")
	}
	session := cmp.Or(a.SessionDuration, DefaultSessionDuration)
	if session < 0 || session%time.Second != 0 {
		return fmt.Errorf("local: Options.Attach.SessionDuration %v: want whole seconds (AWS takes 15m to the role's maximum session duration), or 0 for %v", a.SessionDuration, DefaultSessionDuration)
	}
	at := &attached{endpoint: a.Endpoint, cfg: cfg, session: session, cfn: cloudformation.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg),
		sts: sts.NewFromConfig(cfg), roles: map[string]aws.CredentialsProvider{}, config: map[string]*lambda.GetFunctionConfigurationOutput{}}
	who, err := at.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return fmt.Errorf("local: attach: who is calling (sts:GetCallerIdentity at %s): %w", cmp.Or(a.Endpoint, "AWS"), err)
	}
	at.account = aws.ToString(who.Account)
	k.at = at
	k.sq = sqs.NewFromConfig(cfg)
	k.db = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		// An emulator's X-Amz-Crc32 may not be of the body it sends (fakecloud 0.51.0's is
		// not), which the SDK reports on every Scan; AWS's is checked.
		o.DisableValidateResponseChecksum = a.Endpoint != ""
	})
	k.region = cfg.Region
	return nil
}

// attachStack reads one deployed stack: its resources' physical names, and the deployed
// configuration of each function that runs. A nested stack is found by its parent's resource.
func (k *Kit) attachStack(ctx context.Context, sp *stackPlan) error {
	ref := sp.ref
	name := ref.StackName
	if ref.Parent != "" {
		for _, st := range k.stacks {
			if st.ref.ID == ref.Parent {
				name = st.physical[ref.ParentResource]
			}
		}
	}
	physical, err := k.at.resources(ctx, name)
	if err != nil {
		return fmt.Errorf("local: attach: stack %s (%s): %w; deploy it first (cdk deploy)", ref.DisplayName, name, err)
	}
	d := standin.Attached(sp.t, stackSuffix(ref), k.region, k.at.account, physical)
	d.StackName = ref.StackName
	// The environment is the deployed one, as CloudFormation resolved it: each variable a
	// function-level override, over which Options.Env still goes.
	d.Overrides = map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(sp.code)) {
		fn, ok := d.Functions[id]
		if !ok {
			return fmt.Errorf("local: attach: stack %s has no function %s deployed: deploy the assembly's version of it first", ref.DisplayName, id)
		}
		conf, err := k.at.function(ctx, fn)
		if err != nil {
			return fmt.Errorf("local: attach: stack %s: function %s (%s): %w", ref.DisplayName, id, fn, err)
		}
		if conf.Environment != nil {
			for v, val := range conf.Environment.Variables {
				d.Overrides[id+"."+v] = val
			}
		}
		for v, val := range k.opts.Env {
			if local, ok := strings.CutPrefix(v, id+"."); ok {
				d.Overrides[id+"."+local] = val
			} else if !strings.Contains(v, ".") {
				d.Overrides[id+"."+v] = val
			}
		}
	}
	st := &stackRun{ref: ref, d: d, physical: physical}
	st.obs = standin.NewObserver(d, k.sq, st.functionName, k.opts.AlarmTimeScale, func(format string, args ...any) {
		k.background(fmt.Errorf("stack %s: "+format, append([]any{ref.DisplayName}, args...)...))
	})
	k.stacks = append(k.stacks, st)
	return nil
}

// resources is a deployed stack's resources: logical id -> physical id.
func (at *attached) resources(ctx context.Context, stack string) (map[string]string, error) {
	out, err := at.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stack)})
	if err != nil {
		return nil, err
	}
	physical := map[string]string{}
	for _, r := range out.StackResources {
		if id := aws.ToString(r.PhysicalResourceId); id != "" {
			physical[aws.ToString(r.LogicalResourceId)] = id
		}
	}
	if len(physical) == 0 { // AWS answers ValidationError for a stack it does not have; an emulator may list nothing
		return nil, errors.New("no resource of it is deployed")
	}
	return physical, nil
}

// function is a deployed function's configuration, read once.
func (at *attached) function(ctx context.Context, name string) (*lambda.GetFunctionConfigurationOutput, error) {
	at.mu.Lock()
	defer at.mu.Unlock()
	if c, ok := at.config[name]; ok {
		return c, nil
	}
	c, err := at.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	at.config[name] = c
	return c, nil
}

// role is the credentials of a deployed function's execution role, assumed by the caller
// and refreshed before they expire; it fails at once when the role does not let the caller
// assume it.
func (at *attached) role(ctx context.Context, function string) (aws.CredentialsProvider, aws.Credentials, error) {
	conf, err := at.function(ctx, function)
	if err != nil {
		return nil, aws.Credentials{}, err
	}
	arn := aws.ToString(conf.Role)
	at.mu.Lock()
	p, ok := at.roles[arn]
	if !ok {
		// A session is renewed a third of its length (5 minutes at most) before it ends, so
		// that a process started then gets one that outlasts its invocations.
		p = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(at.sts, arn, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName, o.Duration = sessionName(function), at.session
		}), func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = min(5*time.Minute, at.session/3) })
		at.roles[arn] = p
	}
	at.mu.Unlock()
	c, err := p.Retrieve(ctx)
	if err != nil {
		return nil, aws.Credentials{}, fmt.Errorf("function %s runs with its role %s, which the caller may not assume (%w): add the caller to the role's trust policy (sts:AssumeRole) for the run", function, arn, err)
	}
	return p, c, nil
}

// sessionName is a role session name (2-64 of [\w+=,.@-]) for a function's name.
func sessionName(function string) string {
	s := sessionUnsafe.ReplaceAllString(function, "-")
	return cmp.Or(s[:min(len(s), 64)], "kit")
}

var sessionUnsafe = regexp.MustCompile(`[^\w+=,.@-]+`)

// disableMappings disables the deployed event source mappings from queue onto a consumer,
// so that only the kit's poller receives its messages. Close enables them again.
func (at *attached) disableMappings(ctx context.Context, function, queueARN string) error {
	var marker *string
	for {
		out, err := at.lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(function), Marker: marker})
		if err != nil {
			return fmt.Errorf("the mappings of %s: %w", function, err)
		}
		for _, m := range out.EventSourceMappings {
			if aws.ToString(m.EventSourceArn) != queueARN || !slices.Contains([]string{"Enabled", "Enabling", "Creating", "Updating"}, aws.ToString(m.State)) {
				continue
			}
			if _, err := at.lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: aws.Bool(false)}); err != nil {
				return fmt.Errorf("disabling the mapping %s of %s: %w", aws.ToString(m.UUID), function, err)
			}
			at.mu.Lock()
			at.disabled = append(at.disabled, aws.ToString(m.UUID))
			at.mu.Unlock()
		}
		if marker = out.NextMarker; aws.ToString(marker) == "" {
			return nil
		}
	}
}

// enableMappings enables every mapping disableMappings disabled, and says which it could not.
func (at *attached) enableMappings() error {
	at.mu.Lock()
	uuids := at.disabled
	at.disabled = nil
	at.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var left []string
	var errs []error
	for _, u := range uuids {
		if _, err := at.lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: aws.String(u), Enabled: aws.Bool(true)}); err != nil {
			left, errs = append(left, u), append(errs, err)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return fmt.Errorf("local: attach: %d event source mappings the kit disabled are still disabled (%w); enable each with `aws lambda update-event-source-mapping --enabled --uuid UUID`: %s",
		len(left), errors.Join(errs...), strings.Join(left, ", "))
}

// attachedEnv sets a function environment's endpoint, the deployment's for every service,
// and returns its credentials: the function's role's, assumed as each process starts (a
// process whose session would end during an invocation is replaced by a new one, as
// Lambda replaces an environment; lambdart.Config.Credentials).
func (k *Kit) attachedEnv(ctx context.Context, st *stackRun, id string, vars map[string]string) (func(context.Context) (lambdart.Credentials, error), error) {
	p, _, err := k.at.role(ctx, st.functionName(id))
	if err != nil {
		return nil, fmt.Errorf("local: attach: stack %s: %w", st.ref.DisplayName, err)
	}
	if k.at.endpoint != "" {
		if _, set := st.d.Override(id, "AWS_ENDPOINT_URL"); !set || st.d.Overrides[id+".AWS_ENDPOINT_URL"] == "" {
			vars["AWS_ENDPOINT_URL"] = k.at.endpoint
		}
	}
	return func(ctx context.Context) (lambdart.Credentials, error) {
		c, err := p.Retrieve(ctx)
		if err != nil {
			return lambdart.Credentials{}, fmt.Errorf("local: attach: function %s's role: %w", st.functionName(id), err)
		}
		return lambdart.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken, Expires: c.Expires}, nil
	}, nil
}

// pollClient is the SQS client a consumer's poller reads its queue with: the kit's own
// server's, or, attached, the deployment's with the consumer's role.
func (k *Kit) pollClient(ctx context.Context, st *stackRun, consumer string) (*sqs.Client, error) {
	if k.at == nil {
		return k.sqsd.Client(func(o *sqs.Options) { o.APIOptions = append(o.APIOptions, st.obs.Middleware) }), nil
	}
	p, _, err := k.at.role(ctx, st.functionName(consumer))
	if err != nil {
		return nil, fmt.Errorf("local: attach: stack %s: %w", st.ref.DisplayName, err)
	}
	return sqs.NewFromConfig(k.at.cfg, func(o *sqs.Options) {
		o.Credentials = p
		o.APIOptions = append(o.APIOptions, st.obs.Middleware)
	}), nil
}

// startAttached is Start's build, create and run stages against the deployed stacks
// (Options.Attach): the functions built, no backend started and nothing created (each
// stack's deployment read instead), then run.
func (k *Kit) startAttached(ctx context.Context, plans []*stackPlan, sources []map[string]cfn.Source) error {
	if err := k.connect(ctx); err != nil {
		return err
	}
	bins, err := k.build(ctx, plans)
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
	return k.run(ctx, plans, sources, bins)
}
