package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// operateAsOperators runs pipelinectl as an operator would, on fakecloud with strict IAM,
// under roles that hold exactly what `pipelinectl policy` prints for each pipeline of a stack
// and nothing else:
//   - --access read: status, dlq inspect and record get pass, and a redrive is stopped by an
//     AccessDenied that names the action, with the DLQ's message still there;
//   - --access operate: the redrive runs: on a FIFO pipeline (preferred when the stack has
//     one) it moves the DLQ's message back to its queue; on a standard one it starts and
//     follows SQS's message move task, which fakecloud 0.51.0 completes with nothing moved.
//
// So the printed policies are enough for what they promise, and read-only cannot move
// anything. It runs after the update's checks, since the redrive empties a DLQ.
func (r *rehearsal) operateAsOperators(ctx context.Context) (string, error) {
	if len(r.seeds) == 0 {
		return "no pipeline to operate", nil
	}
	defer func() { r.ctlEnv = nil }()
	queues, err := r.allowPlainHTTPToQueues(ctx)
	if err != nil {
		return "", err
	}
	byStack, order := seedsByStack(r.seeds)
	said := []string{fmt.Sprintf("%d queue policies without their insecure-transport Deny, for fakecloud's plain HTTP", queues)}
	for _, st := range order {
		seeds := byStack[st]
		where := []string{"--stack", st}
		read, readRole, err := r.operatorRole(ctx, where, seeds, "read")
		if err != nil {
			return "", err
		}
		operate, operateRole, err := r.operatorRole(ctx, where, seeds, "operate")
		if err != nil {
			return "", err
		}

		r.ctlEnv = read
		if err := r.status(ctx, where, seeds); err != nil {
			return "", fmt.Errorf("as role %s (pipelinectl policy --access read): %w", readRole, err)
		}
		for _, sd := range seeds {
			if err := r.operatePipeline(ctx, where, sd); err != nil {
				return "", fmt.Errorf("as role %s (pipelinectl policy --access read): %w", readRole, err)
			}
		}
		// A FIFO pipeline's redrive moves its messages one by one; a standard one's is SQS's
		// message move task, which fakecloud 0.51.0 completes at once with nothing moved.
		sd := seeds[0]
		for _, s := range seeds {
			if strings.HasSuffix(s.dlq, ".fifo") {
				sd = s
				break
			}
		}
		// The seeded message is bad input, which a redrive keeps unless --include-invalid.
		redrive := []string{"dlq", "redrive", "--stack", st, "--pipeline", sd.pipeline, "--include-invalid", "--yes", "--output", "json"}
		denied, err := r.deniedRedrive(ctx, redrive, sd, readRole)
		if err != nil {
			return "", err
		}

		r.ctlEnv = operate
		out, code, err := r.ctlRun(ctx, redrive...)
		if err != nil {
			return "", err
		}
		var summary struct {
			Moved  int64
			Method string
		}
		jerr := json.Unmarshal(out, &summary)
		task := summary.Method == "SQS message move task"
		if code != 0 || jerr != nil || summary.Moved != 1 && !task || deniedAction.MatchString(lastRun(r.ctlLog())) {
			return "", fmt.Errorf("as role %s (pipelinectl policy --access operate): pipelinectl %s: exit %d, moved %d, want the 1 seeded (%v); the end of %s:\n%s",
				operateRole, strings.Join(redrive, " "), code, summary.Moved, jerr, r.ctlLog(), tail(r.ctlLog(), 6))
		}
		moved := fmt.Sprintf("operate redrove %s's message", sd.pipeline)
		if task && summary.Moved != 1 {
			moved = fmt.Sprintf("operate started and followed %s's move task (fakecloud's moves nothing: %d moved)", sd.pipeline, summary.Moved)
		}
		r.ctlEnv = nil
		said = append(said, fmt.Sprintf("%s: read-only passed status, dlq inspect, record get and was denied the redrive (%s); %s",
			st, denied, moved))
	}
	return strings.Join(said, "; "), nil
}

// deniedAction is the action an AccessDenied names.
// (pipelinectl's words for AWS's "not authorized to perform: ACTION on resource: ARN").
var deniedAction = regexp.MustCompile(`may not make this call \(([a-z0-9-]+:[A-Za-z]+) on (\S+)\)`)

// deniedRedrive runs a redrive that read-only access must not be allowed: it must fail with an
// AccessDenied naming the action and the resource, and leave the DLQ's message in the DLQ.
func (r *rehearsal) deniedRedrive(ctx context.Context, redrive []string, sd seed, role string) (string, error) {
	line := "pipelinectl " + strings.Join(redrive, " ")
	_, code, err := r.ctlRun(ctx, redrive...)
	if err != nil {
		return "", err
	}
	log := lastRun(r.ctlLog())
	m := deniedAction.FindStringSubmatch(log)
	if code == 0 || m == nil {
		return "", fmt.Errorf("as role %s (pipelinectl policy --access read): %s: exit %d, want a redrive refused with AccessDenied; its output:\n%s",
			role, line, code, indent(log))
	}
	attrs, err := r.aws.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(sd.dlq),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return "", fmt.Errorf("counting %s after the refused redrive: %w", sd.dlq, err)
	}
	if n := attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]; n != "1" {
		return "", fmt.Errorf("as role %s: after %s was refused, the DLQ shows %s visible messages (%s in flight), want the 1 seeded",
			role, line, n, attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	}
	return m[1] + " on " + m[2], nil
}

// operatorRole creates a role that the account may assume, holding one inline policy per
// pipeline, each exactly what `pipelinectl policy --access access` prints for it, assumes it,
// and returns the environment pipelinectl then runs with (the role's temporary credentials)
// and the role's name.
func (r *rehearsal) operatorRole(ctx context.Context, where []string, seeds []seed, access string) ([]string, string, error) {
	r.roles++
	name := fmt.Sprintf("rehearsal-%s-%d", access, r.roles)
	trust := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::%s:root"},"Action":"sts:AssumeRole"}]}`, r.account)
	if _, err := r.aws.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trust)}); err != nil {
		return nil, "", fmt.Errorf("creating role %s: %w", name, err)
	}
	for _, sd := range seeds {
		args := append(append([]string{"policy"}, where...), "--pipeline", sd.pipeline, "--access", access)
		out, code, err := r.ctlRun(ctx, args...)
		if err != nil || code != 0 {
			return nil, "", fmt.Errorf("pipelinectl %s: exit %d, %v; the end of %s:\n%s", strings.Join(args, " "), code, err, r.ctlLog(), tail(r.ctlLog(), 4))
		}
		doc, err := withBatchActions(out)
		if err != nil {
			return nil, "", fmt.Errorf("pipelinectl %s: not an IAM policy: %w", strings.Join(args, " "), err)
		}
		if _, err := r.aws.iam.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String(name),
			PolicyName: aws.String(sd.pipeline), PolicyDocument: aws.String(doc)}); err != nil {
			return nil, "", fmt.Errorf("role %s: the policy of pipelinectl %s: %w", name, strings.Join(args, " "), err)
		}
	}
	assumed, err := r.aws.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::" + r.account + ":role/" + name),
		RoleSessionName: aws.String("operator")})
	if err != nil {
		return nil, "", fmt.Errorf("assuming role %s: %w", name, err)
	}
	c := assumed.Credentials
	env := make([]string, 0, len(r.env)+3)
	for _, kv := range r.env {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") && !strings.HasPrefix(kv, "AWS_SESSION_TOKEN=") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_ACCESS_KEY_ID="+aws.ToString(c.AccessKeyId), "AWS_SECRET_ACCESS_KEY="+aws.ToString(c.SecretAccessKey),
		"AWS_SESSION_TOKEN="+aws.ToString(c.SessionToken))
	return env, name, nil
}

// lastRun is what the last command logged to path wrote: the lines after its "$ " header.
func lastRun(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndex(s, "\n$ "); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// Fakecloud serves plain HTTP, so aws:SecureTransport is false for every call it receives,
// where AWS's endpoints take only HTTPS. Under --iam strict, a resource policy that denies
// insecure transport (the bootstrap's staging bucket, every queue the constructs make with
// enforceSSL) then refuses every caller but fakecloud's root identity: the CDK CLI's asset
// upload through the bootstrap's file-publishing role, and the operators' pipelinectl. The
// rehearsal removes exactly those Deny statements from the emulator's copies of the policies,
// the rest of each policy kept; what the stack deploys is unchanged.

// insecureTransportDenied drops a policy's Deny statements conditioned on
// aws:SecureTransport being false, and says how many it dropped.
func insecureTransportDenied(doc string) (string, int, error) {
	var policy map[string]any
	if err := json.Unmarshal([]byte(doc), &policy); err != nil {
		return "", 0, err
	}
	statements, _ := policy["Statement"].([]any)
	kept := statements[:0:0]
	for _, st := range statements {
		m, _ := st.(map[string]any)
		cond, _ := m["Condition"].(map[string]any)
		b, _ := cond["Bool"].(map[string]any)
		if m["Effect"] == "Deny" && fmt.Sprint(b["aws:SecureTransport"]) == "false" {
			continue
		}
		kept = append(kept, st)
	}
	policy["Statement"] = kept
	out, err := json.Marshal(policy)
	return string(out), len(statements) - len(kept), err
}

// allowPlainHTTPToBucket removes the staging bucket's insecure-transport Deny (see above).
func (r *rehearsal) allowPlainHTTPToBucket(ctx context.Context, bucket string) error {
	got, err := r.aws.s3.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("bucket %s's policy: %w", bucket, err)
	}
	doc, dropped, err := insecureTransportDenied(aws.ToString(got.Policy))
	if err != nil || dropped == 0 {
		return fmt.Errorf("bucket %s's policy has no insecure-transport Deny to drop for fakecloud's plain HTTP (%v)", bucket, err)
	}
	if _, err := r.aws.s3.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(doc)}); err != nil {
		return fmt.Errorf("bucket %s's policy: %w", bucket, err)
	}
	return nil
}

// allowPlainHTTPToQueues removes the insecure-transport Deny from the policy of every queue
// the rehearsed stacks deployed (see above) and says how many queues had one.
func (r *rehearsal) allowPlainHTTPToQueues(ctx context.Context) (int, error) {
	n := 0
	for _, st := range sortedKeys(r.physical) {
		for _, id := range sortedKeys(r.physical[st]) {
			d := r.physical[st][id]
			if d.Type != "AWS::SQS::Queue" {
				continue
			}
			attrs, err := r.aws.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(d.Physical),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy}})
			if err != nil {
				return n, fmt.Errorf("queue %s's policy: %w", d.Physical, err)
			}
			doc := attrs.Attributes[string(sqstypes.QueueAttributeNamePolicy)]
			if doc == "" {
				continue
			}
			out, dropped, err := insecureTransportDenied(doc)
			if err != nil {
				return n, fmt.Errorf("queue %s's policy: %w", d.Physical, err)
			}
			if dropped == 0 {
				continue
			}
			if _, err := r.aws.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(d.Physical),
				Attributes: map[string]string{string(sqstypes.QueueAttributeNamePolicy): out}}); err != nil {
				return n, fmt.Errorf("queue %s's policy: %w", d.Physical, err)
			}
			n++
		}
	}
	return n, nil
}

// batchActions are the SQS batch calls fakecloud 0.51.0 authorizes as actions of their own
// (sqs:ChangeMessageVisibilityBatch). AWS has no such actions: the single-message action
// grants its batch call too (the SQS API reference's AddPermission, and the Service
// Authorization Reference, which lists no batch action). So where a printed statement allows
// the single-message action, the harness adds fakecloud's batch name to it, on the same
// resources: what AWS allows with the printed policy, nothing more.
var batchActions = map[string]string{
	"sqs:SendMessage":             "sqs:SendMessageBatch",
	"sqs:DeleteMessage":           "sqs:DeleteMessageBatch",
	"sqs:ChangeMessageVisibility": "sqs:ChangeMessageVisibilityBatch",
}

// withBatchActions is an identity policy with fakecloud's batch action names added (above).
func withBatchActions(doc []byte) (string, error) {
	var policy map[string]any
	if err := json.Unmarshal(doc, &policy); err != nil {
		return "", err
	}
	statements, ok := policy["Statement"].([]any)
	if !ok || len(statements) == 0 {
		return "", fmt.Errorf("no statements")
	}
	for _, st := range statements {
		m, _ := st.(map[string]any)
		var actions []any
		switch a := m["Action"].(type) {
		case string:
			actions = []any{a}
		case []any:
			actions = a
		}
		for _, a := range actions {
			if batch, ok := batchActions[fmt.Sprint(a)]; ok {
				actions = append(actions, batch)
			}
		}
		m["Action"] = actions
	}
	out, err := json.Marshal(policy)
	return string(out), err
}
