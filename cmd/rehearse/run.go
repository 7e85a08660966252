package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/local"
)

// runFunctions runs the deployed stacks' functions (the kit attached to the deployment:
// local.Attach) with their roles' credentials under fakecloud's strict IAM, and shows what a
// deploy must do before anyone relies on it:
//   - pipelinectl verify --stack passes for every stack;
//   - a message sent to each pipeline's queue becomes one COMPLETED record in its table;
//   - a bad message reaches the DLQ with its reason (the rehearsal then takes it out again,
//     so that the seeded DLQ message stays the only one);
//   - each dispatcher, fired as its schedule would, puts items the consumer completes;
//   - a heartbeat, sent as the stack's schedule sends it, completes.
//
// Any call a function's role does not allow fails the step with fakecloud's AccessDenied.
func (r *rehearsal) runFunctions(ctx context.Context, version string, stacks []stack) (string, error) {
	if len(stacks) == 0 {
		return "no stack", nil
	}
	roles, err := r.letTheKitAssume(ctx)
	if err != nil {
		return "", err
	}
	if _, err := r.allowPlainHTTPToQueues(ctx); err != nil {
		return "", err
	}
	before, err := r.mappingStates(ctx)
	if err != nil {
		return "", err
	}
	logPath := filepath.Join(r.work, "logs", "run-"+version+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	// The first call a role refuses ends the step at once, with fakecloud's words: a
	// function's log line, or the kit's poller (its role reads the queue).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kit, err := r.attachKit(ctx, cancel, version, stacks, logf, logPath)
	if err != nil {
		return "", fmt.Errorf("attaching the kit to the deployed stacks: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			kit.Close()
		}
	}()
	go watchPollers(ctx, cancel, kit)
	// refused is the reason the step stopped early, over the error a wait returned for it.
	refused := func(err error) error {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return err
	}
	said := []string{fmt.Sprintf("%d function roles, each assumed by the kit", roles)}
	ps := kit.Pipelines()
	if len(ps) == 0 {
		return "", errors.New("the kit runs no pipeline of the deployed stacks")
	}
	if err := unknownMessages(r.opts.messages, ps); err != nil {
		return "", err
	}
	v, err := r.verify(ctx, kit, stacks)
	if err != nil {
		return "", refused(err)
	}
	said = append(said, v)
	for _, p := range ps {
		what, err := r.runPipeline(ctx, kit, p, version)
		if err != nil {
			return "", refused(fmt.Errorf("pipeline %s/%s: %w; the functions' output is in %s", p.Stack, p.Name, err, rel(logPath)))
		}
		said = append(said, what)
	}
	closed = true
	if err := kit.Close(); err != nil {
		return "", err
	}
	restored, err := r.mappingsRestored(ctx, before)
	if err != nil {
		return "", err
	}
	said = append(said, restored)
	if err := kit.Err(); err != nil {
		return "", fmt.Errorf("the kit's pollers: %w; the functions' output is in %s", err, rel(logPath))
	}
	return strings.Join(said, "; "), nil
}

// attachKit starts the kit attached to the deployed stacks of version: each function's
// output goes to logf, and a line that reports a refused call cancels ctx with it.
func (r *rehearsal) attachKit(ctx context.Context, cancel context.CancelCauseFunc, version string, stacks []stack, logf *os.File, logPath string) (*local.Kit, error) {
	var names []string
	for _, s := range stacks {
		names = append(names, s.Name)
	}
	var logMu sync.Mutex
	return local.Start(ctx, local.Options{
		Assembly: filepath.Join(r.work, version), Stacks: names, Progress: logf,
		// The functions' processes carry the run's marker too, as every process it starts.
		Env: map[string]string{markerVar: r.work},
		StackLogs: func(stack, function string, line []byte) {
			logMu.Lock()
			fmt.Fprintf(logf, "%s/%s: %s\n", stack, function, line)
			logMu.Unlock()
			if d := denied(string(line)); d != "" {
				cancel(fmt.Errorf("function %s/%s was refused a call: %s; its output is in %s", stack, function, d, rel(logPath)))
			}
		},
		Attach: &local.Attach{Endpoint: r.emu.url, Region: r.region,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")},
	})
}

// watchPollers cancels ctx with the first error of the kit's pollers (a refused
// ReceiveMessage, in AWS's words), until ctx ends.
func watchPollers(ctx context.Context, cancel context.CancelCauseFunc, kit *local.Kit) {
	for ctx.Err() == nil {
		if err := kit.Err(); err != nil {
			if d := denied(err.Error()); d != "" {
				err = fmt.Errorf("the kit's poller was refused a call: %s", d)
			}
			cancel(err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// mappingsRestored checks that Close enabled again the stacks' mappings the kit disabled:
// each is as it was before the step.
func (r *rehearsal) mappingsRestored(ctx context.Context, before map[string]string) (string, error) {
	after, err := r.mappingStates(ctx)
	if err != nil {
		return "", err
	}
	for _, uuid := range sortedKeys(before) {
		if after[uuid] != before[uuid] {
			return "", fmt.Errorf("the kit left the event source mapping %s %s; it was %s before the step", uuid, after[uuid], before[uuid])
		}
	}
	return fmt.Sprintf("%s as before the step", plural(len(before), "mapping")), nil
}

// mappingStates is the State of every event source mapping the stacks deployed, by UUID.
func (r *rehearsal) mappingStates(ctx context.Context) (map[string]string, error) {
	states := map[string]string{}
	for _, st := range sortedKeys(r.physical) {
		for _, id := range sortedKeys(r.physical[st]) {
			d := r.physical[st][id]
			if d.Type != "AWS::Lambda::EventSourceMapping" {
				continue
			}
			m, err := r.aws.fn.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String(d.Physical)})
			if err != nil {
				return nil, fmt.Errorf("stack %s: event source mapping %s (%s): %w", st, id, d.Physical, err)
			}
			state := aws.ToString(m.State)
			if state == "Enabling" { // on its way back: Close asked for it
				state = "Enabled"
			}
			states[d.Physical] = state
		}
	}
	return states, nil
}

// runPipeline sends one good and one bad message to a pipeline, fires its dispatcher, waits
// for its heartbeat, and checks where each ended.
func (r *rehearsal) runPipeline(ctx context.Context, kit *local.Kit, p local.Running, version string) (string, error) {
	name := p.Stack + "/" + p.Name
	key := "rehearsal-run-" + version + "-" + strings.ToLower(p.Name)
	bad := "not json: rehearsal " + version
	body := defaultMessage
	if b, ok := r.opts.messages[p.Name]; ok {
		body = b
	}
	if err := kit.Send(ctx, name, strings.ReplaceAll(body, "$KEY", key), bad); err != nil {
		return "", err
	}
	fired, at := "", time.Now()
	// A dispatcher's item keys are <job>#<occurrence>#<item>, the occurrence the minute it
	// was fired for, in UTC (msgkey.DispatchKey).
	occurrence := "#" + at.UTC().Truncate(time.Minute).Format(time.RFC3339) + "#"
	if p.Dispatcher != "" {
		if _, err := kit.Fire(ctx, name, at); err != nil {
			return "", fmt.Errorf("its dispatcher %s, fired as its schedule would: %w", p.DispatcherName, err)
		}
	}
	wait, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	took, err := kit.WaitIdle(wait)
	if err != nil {
		return "", err
	}
	if err := kit.Err(); err != nil {
		return "", err
	}
	records, err := kit.Records(ctx, name)
	if err != nil {
		return "", err
	}
	// Pipelines may share a table: this one's records are under its consumer's key prefix.
	env, err := kit.Env(name)
	if err != nil {
		return "", err
	}
	ours := ""
	if prefix := env[contract.EnvKeyPrefix]; prefix != "" {
		ours = prefix + "#"
	}
	var dispatched, heartbeats int
	good := false
	for _, rec := range records {
		id, done := fmt.Sprint(rec["id"]), rec["status"] == "COMPLETED"
		switch {
		case !strings.HasPrefix(id, ours):
		case strings.HasSuffix(id, "#"+key):
			good = done
		case strings.Contains(id, "pipelinectl-probe-heartbeat-") && done: // constructs/heartbeat's key
			heartbeats++
		case strings.Contains(id, occurrence) && done:
			dispatched++
		}
	}
	if !good {
		return "", fmt.Errorf("the message with key %s did not become a COMPLETED record in %s (%d records); a consumer that wants more than %s takes --message %s=BODY",
			key, p.Table, len(records), defaultMessage, p.Name)
	}
	if p.Heartbeats && heartbeats == 0 {
		return "", fmt.Errorf("no heartbeat (pipelinectl-probe-heartbeat-...) completed in %s", p.Table)
	}
	if p.Dispatcher != "" && dispatched == 0 {
		return "", fmt.Errorf("the dispatcher's items made no COMPLETED record (no key with %s) in %s", strings.Trim(occurrence, "#"), p.Table)
	}
	if p.Dispatcher != "" {
		fired = fmt.Sprintf(", its dispatcher fired (%s COMPLETED)", plural(dispatched, "item"))
	}
	reason, err := r.takeDeadLetter(ctx, p, bad)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s COMPLETED%s, %s, the bad message in the DLQ (%s), idle after %v",
		name, key, fired, plural(heartbeats, "heartbeat"), reason, took.Round(100*time.Millisecond)), nil
}

// deniedCall is how AWS (and fakecloud) words a call IAM refused.
var deniedCall = regexp.MustCompile(`(\S+) is not authorized to perform: ([a-z0-9-]+:[A-Za-z0-9]+) on resource: ([^\s"\\,;)]+)`)

// denied is the refusal a log line or error reports, in AWS's words, or "".
func denied(s string) string {
	m := deniedCall.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("AccessDenied: %s is not authorized to perform: %s on resource: %s", m[1], m[2], m[3])
}

// unknownMessages names each --message whose pipeline is none of those that run, which would
// otherwise be dropped without a word.
func unknownMessages(messages map[string]string, ps []local.Running) error {
	var names, unknown []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	for _, name := range sortedKeys(messages) {
		if !slices.Contains(names, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return fmt.Errorf("--message names no pipeline that runs: %s; the pipelines are %s", strings.Join(unknown, ", "), strings.Join(names, ", "))
}

// defaultMessage is the run step's message to a pipeline without --message: what the
// constructs' consumer takes (IDEMPOTENCY_KEY_SOURCE body:idempotencyKey).
const defaultMessage = `{"idempotencyKey":"$KEY"}`

// takeDeadLetter finds the run's bad message in the pipeline's DLQ, checks its reason and
// deletes it; every other message is made visible again.
func (r *rehearsal) takeDeadLetter(ctx context.Context, p local.Running, body string) (string, error) {
	deadline := time.Now().Add(time.Minute)
	var others []string
	defer func() {
		for _, h := range others {
			_, _ = r.aws.sqs.ChangeMessageVisibility(context.WithoutCancel(ctx), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: aws.String(p.DLQURL), ReceiptHandle: aws.String(h), VisibilityTimeout: 0})
		}
	}()
	for time.Now().Before(deadline) {
		out, err := r.aws.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(p.DLQURL), MaxNumberOfMessages: 10,
			VisibilityTimeout: 60, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		if err != nil {
			return "", fmt.Errorf("reading its DLQ: %w", err)
		}
		found := ""
		for _, m := range out.Messages {
			if aws.ToString(m.Body) != body || found != "" {
				others = append(others, aws.ToString(m.ReceiptHandle))
				continue
			}
			reason := aws.ToString(m.MessageAttributes[contract.AttrDeadLetterReason].StringValue)
			if reason == "" {
				return "", fmt.Errorf("the bad message reached the DLQ without a DeadLetterReason: %v", m.MessageAttributes)
			}
			if _, err := r.aws.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.DLQURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return "", fmt.Errorf("taking the bad message out of the DLQ: %w", err)
			}
			found = strings.SplitN(reason, ":", 2)[0]
		}
		if found != "" {
			return found, nil
		}
	}
	return "", fmt.Errorf("the bad message %q is not in the DLQ %s after a minute", body, p.DLQURL)
}

// verify runs pipelinectl verify --stack on each stack, as an operator: under a role holding
// exactly what pipelinectl policy --access operate prints for each of its pipelines (verify is
// one of the commands it grants). Lambda is at the kit (its dispatchers answer verify's
// synchronous invocation of a probe; the kit checks no IAM), everything else at fakecloud.
func (r *rehearsal) verify(ctx context.Context, kit *local.Kit, stacks []stack) (string, error) {
	defer func() { r.ctlEnv = nil }()
	var said []string
	for _, s := range stacks {
		var seeds []seed
		for _, p := range pipelines(r.outputs[s.Name]) {
			seeds = append(seeds, seed{stack: s.Name, pipeline: p})
		}
		if len(seeds) == 0 {
			continue
		}
		env, role, err := r.operatorRole(ctx, []string{"--stack", s.Name}, seeds, "operate")
		if err != nil {
			return "", err
		}
		for _, kv := range kit.Environ() {
			if strings.HasPrefix(kv, "AWS_ENDPOINT_URL_LAMBDA=") {
				env = append(env, kv)
			}
		}
		r.ctlEnv = env
		args := []string{"verify", "--stack", s.Name}
		_, code, err := r.ctlRun(ctx, args...)
		r.ctlEnv = nil
		if err != nil {
			return "", err
		}
		if code != 0 {
			return "", fmt.Errorf("as role %s (pipelinectl policy --access operate): pipelinectl %s: exit %d; the end of %s:\n%s",
				role, strings.Join(args, " "), code, r.ctlLog(), tail(r.ctlLog(), 12))
		}
		said = append(said, fmt.Sprintf("verify --stack %s passed as role %s (pipelinectl policy --access operate)", s.Name, role))
	}
	if len(said) == 0 {
		return "no stack's outputs name a pipeline: nothing to verify", nil
	}
	return strings.Join(said, ", "), nil
}

// letTheKitAssume lets the rehearsal's caller assume each deployed function role, and adds
// fakecloud's batch action names to the roles' policies. Both are harness workarounds, made
// on the emulator's copy of the roles; the stack deploys them unchanged:
//   - A role made for Lambda trusts lambda.amazonaws.com only. The kit runs a function as an
//     outside process, which gets the role's credentials by sts:AssumeRole, so the role must
//     trust the account too (fakecloud checks trust policies).
//   - fakecloud 0.51.0 authorizes SQS's batch calls as actions of their own, which AWS does
//     not have (batchActions, iam.go); Lambda's poller deletes and the consumer sends in
//     batches.
//
// It says how many roles it changed.
func (r *rehearsal) letTheKitAssume(ctx context.Context) (int, error) {
	n := 0
	for _, st := range sortedKeys(r.physical) {
		for _, id := range sortedKeys(r.physical[st]) {
			d := r.physical[st][id]
			if d.Type != "AWS::IAM::Role" {
				continue
			}
			// A role's physical id is its name (AWS); fakecloud 0.51.0 gives its ARN.
			name := d.Physical[strings.LastIndex(d.Physical, "/")+1:]
			role, err := r.aws.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
			if err != nil {
				return n, fmt.Errorf("role %s: %w", name, err)
			}
			trust, err := trustsLambda(aws.ToString(role.Role.AssumeRolePolicyDocument), r.account)
			if err != nil {
				return n, fmt.Errorf("role %s's trust policy: %w", name, err)
			}
			if trust == "" {
				continue
			}
			n++
			if trust == trusted {
				continue
			}
			if _, err := r.aws.iam.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String(name), PolicyDocument: aws.String(trust)}); err != nil {
				return n, fmt.Errorf("role %s's trust policy: %w", name, err)
			}
			if err := r.withBatchActionsOf(ctx, name); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// trustsLambda is a role's trust policy with the account added as a principal that may
// assume it, when the role trusts Lambda: "" for a role that does not, trusted for one that
// trusts the account already.
func trustsLambda(doc, account string) (string, error) {
	doc = policyJSON(doc)
	var policy map[string]any
	if err := json.Unmarshal([]byte(doc), &policy); err != nil {
		return "", err
	}
	statements, _ := policy["Statement"].([]any)
	lambda := false
	root := "arn:aws:iam::" + account + ":root"
	for _, st := range statements {
		m, _ := st.(map[string]any)
		p, _ := m["Principal"].(map[string]any)
		if strings.Contains(fmt.Sprint(p["Service"]), "lambda.amazonaws.com") {
			lambda = true
		}
		if strings.Contains(fmt.Sprint(p["AWS"]), root) {
			return trusted, nil
		}
	}
	if !lambda {
		return "", nil
	}
	policy["Statement"] = append(statements, map[string]any{"Effect": "Allow", "Principal": map[string]any{"AWS": root}, "Action": "sts:AssumeRole"})
	out, err := json.Marshal(policy)
	return string(out), err
}

// trusted is trustsLambda's answer for a role the account may assume already.
const trusted = "(trusted)"

// withBatchActionsOf adds fakecloud's batch action names to each inline policy of a role.
func (r *rehearsal) withBatchActionsOf(ctx context.Context, role string) error {
	list, err := r.aws.iam.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		return fmt.Errorf("role %s's policies: %w", role, err)
	}
	for _, name := range list.PolicyNames {
		got, err := r.aws.iam.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("role %s's policy %s: %w", role, name, err)
		}
		with, err := withBatchActions([]byte(policyJSON(aws.ToString(got.PolicyDocument))))
		if err != nil {
			return fmt.Errorf("role %s's policy %s: %w", role, name, err)
		}
		if _, err := r.aws.iam.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name), PolicyDocument: aws.String(with)}); err != nil {
			return fmt.Errorf("role %s's policy %s: %w", role, name, err)
		}
	}
	return nil
}

// policyJSON is a policy document as IAM returns it (URL-encoded JSON, as AWS's API
// reference says; fakecloud's may be plain) made JSON.
func policyJSON(doc string) string {
	if strings.HasPrefix(strings.TrimSpace(doc), "{") {
		return doc
	}
	if u, err := url.PathUnescape(doc); err == nil {
		return u
	}
	return doc
}
