// Schedules, as the kit reads them from a template: an AWS::Scheduler::Schedule that
// invokes a function (its expression, time zone, input and dead-letter queue), and one that
// sends an SQS message itself (a heartbeat). When one fires is package schedule's.

package standin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// Schedule is an AWS::Scheduler::Schedule targeting a function.
type Schedule struct {
	LogicalID string
	Function  string // logical id
	Input     string // the target input, with Scheduler's <aws.scheduler.*> placeholders
	// Expression and Timezone are ScheduleExpression (e.g. "cron(0 * * * ? *)") and
	// ScheduleExpressionTimezone ("" when not set, UTC).
	Expression, Timezone string
	// DeadLetter is the logical id of the queue Scheduler sends an event to when it cannot
	// invoke the target, "" for none.
	DeadLetter string
	// DeployTime names the expression and time zone properties that are not literals and
	// that UseParameters could not make one (a CfnParameter without a value), with their
	// values: known only when CloudFormation deploys.
	DeployTime []string

	props map[string]any // as in the template, for the values parameters give
}

// resolve sets the schedule's expression and time zone from its properties, each a string
// as static renders it with the parameters' values (a CfnParameter's Default, or the value
// given): CDK writes a cron from a parameter as {"Fn::Join": ["", ["cron(", {"Ref":
// "Cron"}, ")"]]}. What stays unknown is listed in DeployTime.
func (s *Schedule) resolve(static func(any) string) {
	s.DeployTime = nil
	for k, into := range map[string]*string{"ScheduleExpression": &s.Expression, "ScheduleExpressionTimezone": &s.Timezone} {
		v, ok := s.props[k]
		if !ok {
			continue
		}
		str := static(v)
		if str == "" {
			b, _ := json.Marshal(v)
			s.DeployTime = append(s.DeployTime, k+" "+string(b))
			continue
		}
		*into = str
	}
	slices.Sort(s.DeployTime)
}

// SendSchedule is an AWS::Scheduler::Schedule whose target is SQS SendMessage (a universal
// target, arn:aws:scheduler:::aws-sdk:sqs:sendMessage): a heartbeat.
type SendSchedule struct {
	LogicalID string
	Queue     string // logical id of the queue the request's QueueUrl refers to
	// Input is the SendMessage request (the API's field names) with Scheduler's
	// <aws.scheduler.*> placeholders, and QueueUrl empty: the harness fills in the queue's URL.
	Input   string
	rate    time.Duration // from ScheduleExpression rate(N minutes|hours)
	retries int           // RetryPolicy.MaximumRetryAttempts
}

// sqsSendTarget ends the ARN of Scheduler's universal target for SQS SendMessage.
const sqsSendTarget = ":scheduler:::aws-sdk:sqs:sendMessage"

var rateExpr = regexp.MustCompile(`^rate\(([0-9]+) (minute|minutes|hour|hours)\)$`)

func parseSendSchedule(id string, p map[string]any) (SendSchedule, error) {
	retry, _ := cfn.Dig(p, "Target", "RetryPolicy").(map[string]any)
	s := SendSchedule{LogicalID: id, retries: cfn.Int(retry, "MaximumRetryAttempts", 185)}
	var refs []string
	s.Input = cfn.JoinString(cfn.Dig(p, "Target", "Input"), func(part any) string {
		refs = append(refs, cfn.RefTarget(part))
		return ""
	})
	if len(refs) != 1 || refs[0] == "" || !strings.Contains(s.Input, `"QueueUrl":""`) {
		return s, fmt.Errorf("schedule %s: its SendMessage input refers to %v, want exactly one queue as its QueueUrl", id, refs)
	}
	s.Queue = refs[0]
	expr, _ := p["ScheduleExpression"].(string)
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return s, fmt.Errorf("schedule %s: expression %q: the local kit fires SQS-target schedules by rate(N minutes|hours) only", id, expr)
	}
	n, _ := strconv.Atoi(m[1])
	s.rate = time.Duration(n) * time.Minute
	if strings.HasPrefix(m[2], "hour") {
		s.rate = time.Duration(n) * time.Hour
	}
	return s, nil
}

// readSchedule reads a schedule: one that sends to a queue, or one that invokes a function.
func readSchedule(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	if strings.HasSuffix(cfn.StaticString(cfn.Dig(p, "Target", "Arn")), sqsSendTarget) {
		s, err := parseSendSchedule(id, p)
		if err != nil {
			return err
		}
		t.SendSchedules = append(t.SendSchedules, s)
		return nil
	}
	input, _ := cfn.Dig(p, "Target", "Input").(string)
	s := Schedule{LogicalID: id, Function: cfn.RefTarget(cfn.Dig(p, "Target", "Arn")), Input: input,
		DeadLetter: cfn.RefTarget(cfn.Dig(p, "Target", "DeadLetterConfig", "Arn"))}
	s.props = p
	s.resolve(t.staticString)
	t.Schedules = append(t.Schedules, s)
	return nil
}

// ScheduleFor returns the schedule that invokes a function.
func (t *Template) ScheduleFor(function string) (Schedule, error) {
	for _, s := range t.Schedules {
		if s.Function == function {
			return s, nil
		}
	}
	return Schedule{}, fmt.Errorf("template %s: no schedule invokes %s", t.Name, function)
}
