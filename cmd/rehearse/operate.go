package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/functions/idempotency"
)

// Output names pipelinectl finds a pipeline by (constructs/pipeline.Outputs).
const (
	outQueueURL  = contract.OutQueueURL
	outDLQURL    = contract.OutDLQURL
	outTableName = contract.OutTableName
)

// seed is what the rehearsal put into a pipeline before the update: a completed record and a
// message on the DLQ, which the update must keep.
type seed struct {
	stack, pipeline string
	table, key      string // table is "" when the outputs name no idempotency table for the pipeline
	prefix          string // the consumer's key prefix: output <Pipeline>KeyPrefix, else the pipeline
	dlq             string
}

// pipelines are the pipelines a stack's outputs name, sorted.
func pipelines(outputs map[string]string) []string {
	var names []string
	for _, k := range sortedKeys(outputs) {
		if p, ok := strings.CutSuffix(k, outDLQURL); ok && outputs[p+outQueueURL] != "" {
			names = append(names, p)
		}
	}
	return names
}

// seed writes a completed idempotency record (with the library the consumer uses) and sends a
// message to the DLQ of every pipeline.
func (r *rehearsal) seed(ctx context.Context) (string, error) {
	records, messages := 0, 0
	for _, s := range r.v1 {
		out := r.outputs[s.Name]
		for _, p := range pipelines(out) {
			sd := seed{stack: s.Name, pipeline: p, table: cmp.Or(out[p+outTableName], out[outTableName]), key: "rehearsal-" + strings.ToLower(p),
				prefix: cmp.Or(out[p+contract.OutKeyPrefix], p), dlq: out[p+outDLQURL]}
			if sd.table != "" {
				guard, err := idempotency.New(dynamodb.NewFromConfig(r.aws.cfg, idempotency.WithoutSDKRetries), idempotency.Config{
					TableName: sd.table, KeyPrefix: sd.prefix, RecordTTL: 24 * time.Hour, LockCap: time.Minute,
				})
				if err != nil {
					return "", err
				}
				res, err := guard.Run(ctx, idempotency.Request{Key: sd.key}, func(context.Context) ([]byte, error) { return nil, nil })
				if err != nil {
					return "", fmt.Errorf("a record in %s: %w", sd.table, err)
				}
				if res.Outcome != idempotency.OutcomeProcessed {
					return "", fmt.Errorf("a record in %s: outcome %s, want %s", sd.table, res.Outcome, idempotency.OutcomeProcessed)
				}
				records++
			}
			in := &sqs.SendMessageInput{
				QueueUrl:    aws.String(sd.dlq),
				MessageBody: aws.String(`{"idempotencyKey":"` + sd.key + `-dead"}`),
				MessageAttributes: map[string]sqstypes.MessageAttributeValue{
					contract.AttrDeadLetterReason: {DataType: aws.String("String"), StringValue: aws.String("rehearsal: a message the update must keep")},
				},
			}
			if strings.HasSuffix(sd.dlq, ".fifo") {
				in.MessageGroupId, in.MessageDeduplicationId = aws.String("rehearsal"), aws.String(rand.Text())
			}
			if _, err := r.aws.sqs.SendMessage(ctx, in); err != nil {
				return "", fmt.Errorf("a message to %s: %w", sd.dlq, err)
			}
			messages++
			r.seeds = append(r.seeds, sd)
		}
	}
	if len(r.seeds) == 0 {
		return "no stack's outputs name a pipeline (constructs/pipeline.Outputs): nothing to seed, no operator command to run", nil
	}
	return fmt.Sprintf("%s, %s, in %s", plural(records, "completed record"), plural(messages, "DLQ message"), plural(len(r.seeds), "pipeline")), nil
}

// checkSeeds counts the seeded records and DLQ messages that are still there, and fails on
// any that is not.
func (r *rehearsal) checkSeeds(ctx context.Context) (records, messages int, err error) {
	var lost []string
	for _, sd := range r.seeds {
		if sd.table != "" {
			item, err := r.aws.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(sd.table), ConsistentRead: aws.Bool(true),
				Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: sd.prefix + "#" + sd.key}}})
			if err != nil {
				return records, messages, err
			}
			if s, ok := item.Item["status"].(*ddbtypes.AttributeValueMemberS); ok && s.Value == "COMPLETED" {
				records++
			} else {
				lost = append(lost, fmt.Sprintf("record %s#%s in %s", sd.prefix, sd.key, sd.table))
			}
		}
		a, err := r.aws.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(sd.dlq),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			return records, messages, err
		}
		if n, _ := strconv.Atoi(a.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]); n == 1 {
			messages++
		} else {
			lost = append(lost, fmt.Sprintf("the DLQ %s holds %d messages, want 1", sd.dlq, n))
		}
	}
	if len(lost) > 0 {
		return records, messages, errors.New(strings.Join(lost, "; "))
	}
	return records, messages, nil
}

// operate runs the operator commands on every seeded pipeline, finding the stack by
// CloudFormation (--stack) or by the file cdk deploy --outputs-file wrote (--outputs).
func (r *rehearsal) operate(ctx context.Context, fromFile bool) (string, error) {
	if len(r.seeds) == 0 {
		return "no pipeline to operate", nil
	}
	var ran []string
	byStack, order := seedsByStack(r.seeds)
	for _, st := range order {
		where := []string{"--stack", st}
		if fromFile {
			where = []string{"--outputs", r.outputsFile}
			if len(r.outputs) > 1 {
				where = append(where, "--stack", st)
			}
		}
		if err := r.status(ctx, where, byStack[st]); err != nil {
			return "", err
		}
		for _, sd := range byStack[st] {
			if err := r.operatePipeline(ctx, where, sd); err != nil {
				return "", err
			}
			ran = append(ran, sd.pipeline)
		}
	}
	return "status, dlq inspect, record get, policy: " + strings.Join(ran, ", "), nil
}

// ctl runs pipelinectl and returns its stdout and exit code (an error only when it did not run).
func (r *rehearsal) ctlRun(ctx context.Context, args ...string) ([]byte, int, error) {
	out, err := r.command(ctx, "pipelinectl", nil, r.ctl, args...)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return out, ee.ExitCode(), nil
	}
	return out, 0, err
}

func (r *rehearsal) ctlLog() string { return rel(filepath.Join(r.work, "logs", "pipelinectl.log")) }

func (r *rehearsal) status(ctx context.Context, where []string, seeds []seed) error {
	args := append([]string{"status"}, where...)
	out, code, err := r.ctlRun(ctx, append(args, "--output", "json")...)
	if err != nil {
		return err
	}
	line := "pipelinectl " + strings.Join(args, " ")
	if code > 1 {
		return fmt.Errorf("%s: exit %d; the end of %s:\n%s", line, code, r.ctlLog(), tail(r.ctlLog(), 4))
	}
	var names []string
	for _, sd := range seeds {
		names = append(names, sd.pipeline)
	}
	bad, err := statusProblems(out, names, r.outputs[seeds[0].stack][contract.OutUnhealthy] != "")
	if err != nil {
		return fmt.Errorf("%s --output json: %w", line, err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s:\n  %s", line, strings.Join(bad, "\n  "))
	}
	return nil
}

// statusProblems is what is wrong in pipelinectl status --output json for a stack just
// deployed and seeded: each seeded pipeline listed with the 1 message seeded on its DLQ,
// everything read (alarms too, when the outputs name the composite alarm), and no problem
// but that message and the new stack's heartbeat alarms (in ALARM until a first heartbeat
// completes: missing data breaches, and nothing runs the functions here).
func statusProblems(doc []byte, pipelines []string, alarms bool) ([]string, error) {
	var st []struct {
		Pipeline        string
		DeadLetterQueue struct{ Visible int }
		AlarmsChecked   bool
		Problems        []string
		Unread          []string
	}
	if err := json.Unmarshal(doc, &st); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var bad []string
	for _, p := range st {
		seen[p.Pipeline] = true
		if p.DeadLetterQueue.Visible != 1 {
			bad = append(bad, fmt.Sprintf("%s: the DLQ shows %d messages, want the 1 seeded", p.Pipeline, p.DeadLetterQueue.Visible))
		}
		for _, u := range p.Unread {
			bad = append(bad, p.Pipeline+": not read: "+u)
		}
		if alarms && !p.AlarmsChecked {
			bad = append(bad, p.Pipeline+": its alarms were not checked, though the outputs name the composite alarm")
		}
		for _, problem := range p.Problems {
			if !strings.Contains(problem, "#heartbeat-missing") && !strings.HasPrefix(problem, "messages in the DLQ: 1;") {
				bad = append(bad, p.Pipeline+": "+problem)
			}
		}
	}
	for _, name := range pipelines {
		if !seen[name] {
			bad = append(bad, "pipeline "+name+" is not listed")
		}
	}
	return bad, nil
}

func (r *rehearsal) operatePipeline(ctx context.Context, where []string, sd seed) error {
	with := append(append([]string{}, where...), "--pipeline", sd.pipeline)
	run := func(args ...string) ([]byte, string, error) {
		line := "pipelinectl " + strings.Join(args, " ")
		out, code, err := r.ctlRun(ctx, args...)
		if err == nil && code != 0 {
			err = fmt.Errorf("%s: exit %d; the end of %s:\n%s", line, code, r.ctlLog(), tail(r.ctlLog(), 4))
		}
		return out, line, err
	}

	out, line, err := run(append(append([]string{"dlq", "inspect"}, with...), "--output", "json")...)
	if err != nil {
		return err
	}
	var inspect struct {
		Scanned  int
		Messages []json.RawMessage
	}
	if err := json.Unmarshal(out, &inspect); err != nil {
		return fmt.Errorf("%s: %w", line, err)
	}
	if len(inspect.Messages) != 1 || !strings.Contains(string(inspect.Messages[0]), sd.key+"-dead") {
		return fmt.Errorf("%s: %d messages, want the seeded one (%s-dead)", line, len(inspect.Messages), sd.key)
	}

	if sd.table != "" {
		out, line, err = run(append(append([]string{"record", "get"}, with...), sd.key)...)
		if err != nil {
			return err
		}
		if !strings.Contains(string(out), "COMPLETED") {
			return fmt.Errorf("%s: no COMPLETED record in:\n%s", line, out)
		}
	}

	out, line, err = run(append([]string{"policy"}, with...)...)
	if err != nil {
		return err
	}
	var policy struct{ Statement []json.RawMessage }
	if err := json.Unmarshal(out, &policy); err != nil || len(policy.Statement) == 0 {
		return fmt.Errorf("%s: not an IAM policy: %v", line, err)
	}
	if dlqName := sd.dlq[strings.LastIndex(sd.dlq, "/")+1:]; !strings.Contains(string(out), dlqName) {
		return fmt.Errorf("%s: the policy does not name the DLQ %s", line, dlqName)
	}
	if sd.table != "" && !strings.Contains(string(out), "table/"+sd.table) {
		return fmt.Errorf("%s: the policy does not name the table %s", line, sd.table)
	}
	return nil
}

// seedsByStack groups seeds by their stack, the stacks in the order they first appear.
func seedsByStack(seeds []seed) (map[string][]seed, []string) {
	byStack := map[string][]seed{}
	var order []string
	for _, sd := range seeds {
		if _, ok := byStack[sd.stack]; !ok {
			order = append(order, sd.stack)
		}
		byStack[sd.stack] = append(byStack[sd.stack], sd)
	}
	return byStack, order
}
