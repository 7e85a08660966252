package local

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
	"github.com/idempotent-sqs/pipeline/internal/standin"
	"github.com/idempotent-sqs/pipeline/internal/standin/ledger"
	"github.com/idempotent-sqs/pipeline/internal/standin/poller"
)

// The start's last stage, run: each consumer's execution environments behind its poller,
// each dispatcher's environment and, with Options.Cron, its schedule.

// run starts every stack's pipelines (bins: the build stage's executables), then answers
// the functions' calls to AWS.
func (k *Kit) run(ctx context.Context, plans []*stackPlan, sources []map[string]cfn.Source, bins map[string]string) error {
	for i, sp := range plans {
		if err := k.runStack(ctx, k.stacks[i], sp, sources[i], bins); err != nil {
			return err
		}
	}
	return k.serveAWS()
}

// runStack starts one stack's pipelines: each consumer's environments behind its poller, each
// dispatcher's environment and, with Options.Cron, its schedule. Attached, the stack's own
// mappings are disabled first: the kit's poller is the mapping.
func (k *Kit) runStack(ctx context.Context, st *stackRun, sp *stackPlan, sources map[string]cfn.Source, bins map[string]string) error {
	ref, t, d, ps := sp.ref, sp.t, st.d, sp.pipelines
	for _, p := range ps {
		if k.at == nil {
			break // the kit's own queues: created with their stand-ins and visibility (create.go)
		}
		// The stack's own mapping would take the messages (fakecloud's, with no function
		// runtime, deletes them); the queues and the table stay as deployed: the poller
		// asks for the visibility.
		if err := k.at.disableMappings(ctx, d.FunctionName(p.Consumer), d.QueueARN[p.Queue]); err != nil {
			return fmt.Errorf("local: attach: stack %s: %w", ref.DisplayName, err)
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
			p: p, st: st, ledger: ledger.New()}
		if p.Dispatcher != "" {
			r.DispatcherName = d.FunctionName(p.Dispatcher)
		}
		r.Heartbeats = slices.ContainsFunc(t.SendSchedules, func(s standin.SendSchedule) bool { return s.Queue == p.Queue })
		n := k.opts.Environments
		if p.Mapping.MaxConcurrency > 0 {
			n = min(n, p.Mapping.MaxConcurrency)
		}
		envs := make([]poller.Invoker, n)
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
		r.poller = &poller.Poller{SQS: pollSQ, QueueURL: r.QueueURL, QueueARN: d.QueueARN[p.Queue], Region: k.region, Mapping: p.Mapping, Fifo: p.Fifo, Envs: envs}
		if k.at != nil { // the deployed queue unchanged: each receive asks for it
			r.poller.VisibilityTimeout = int32(sp.visibility[p.Mapping.LogicalID].Seconds())
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
func (k *Kit) invoker(st *stackRun, id string, e *lambdart.Env, r *run) poller.Invoker {
	return poller.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
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
