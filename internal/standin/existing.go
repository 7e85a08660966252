package standin

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// standInMaxReceiveCount is the redrive count of a stand-in for an imported queue whose
// MaxReceiveCount the app did not give: constructs/queue's DefaultMaxReceiveCount.
const standInMaxReceiveCount = 5

// standInDLQRetention is the stand-in DLQ's retention, in seconds: SQS's maximum, 14 days
// (what the consumer construct assumes of a DLQ whose retention it is not told).
const standInDLQRetention = 14 * 24 * 3600

// StandInQueue makes the template's mapping read a queue of its own in place of the queue
// the stack imports, described by q (the consumer construct records it in the cloud
// assembly, cfn.ReadExistingQueues): a queue named as the imported one, with its type,
// visibility timeout, retention and a redrive policy to a stand-in for its DLQ. Deploy then
// creates both, and every reference to the imported queues (the consumer's
// DEAD_LETTER_QUEUE_URL, a dispatcher's QUEUE_URL, an alarm's QueueName) resolves to them.
// It returns what it assumed, one line each, for the kit's StandIns.
func (t *Template) StandInQueue(mapping string, q cfn.ExistingQueue) ([]string, error) {
	i := -1
	for j, m := range t.Mappings {
		if m.LogicalID == mapping {
			i = j
		}
	}
	if i < 0 || t.Mappings[i].SourceArn == nil {
		return nil, fmt.Errorf("mapping %s: no event source mapping of an imported queue by that logical id", mapping)
	}
	src := queueNameOf(staticString(t.withParameters(q.QueueArn)))
	if src == "" {
		return nil, fmt.Errorf("mapping %s: the imported queue's ARN %s is not a value the local kit can resolve "+
			"(another stack's export, or a parameter without a value: give it with Options.Parameters or pipelinectl local up --parameter)", mapping, JSONish(q.QueueArn))
	}
	if q.DeadLetterQueueArn == nil {
		return nil, fmt.Errorf("mapping %s: the imported queue %s has no dead-letter queue the consumer knows of: "+
			"give the consumer a DeadLetterSource (queue.ImportProcessingQueue's DeadLetterQueueArn or DeadLetterQueueName)", mapping, src)
	}
	dlq := queueNameOf(staticString(t.withParameters(q.DeadLetterQueueArn)))
	if dlq == "" {
		return nil, fmt.Errorf("mapping %s: the imported dead-letter queue's ARN %s is not a value the local kit can resolve "+
			"(another stack's export, or a parameter without a value: give it with Options.Parameters or pipelinectl local up --parameter)", mapping, JSONish(q.DeadLetterQueueArn))
	}
	var notes []string
	receives := q.MaxReceiveCount
	if receives <= 0 {
		receives = standInMaxReceiveCount
		notes = append(notes, fmt.Sprintf("queue %s: its maxReceiveCount is not in the app (ExistingProcessingQueueProps.MaxReceiveCount); the stand-in uses %d", src, receives))
	}
	queue := map[string]any{
		"QueueName":              src,
		"VisibilityTimeout":      float64(q.VisibilityTimeout),
		"MessageRetentionPeriod": float64(q.RetentionPeriod),
		"RedrivePolicy":          map[string]any{"deadLetterTargetArn": "arn:aws:sqs:local:000000000000:" + dlq, "maxReceiveCount": float64(receives)},
	}
	dead := map[string]any{"QueueName": dlq, "MessageRetentionPeriod": float64(standInDLQRetention)}
	if q.Fifo {
		queue["FifoQueue"], dead["FifoQueue"] = true, true
	}
	for name, props := range map[string]map[string]any{src: queue, dlq: dead} {
		if old, ok := t.Queues[name]; ok && !old.standIn {
			return nil, fmt.Errorf("mapping %s: the imported queue %s has the name of the template's queue %s", mapping, name, name)
		}
		t.Queues[name] = Queue{LogicalID: name, Props: props, standIn: true}
	}
	t.Mappings[i].Queue = src
	notes = append(notes, fmt.Sprintf("queue %s and its DLQ %s (imported by the stack; created locally, visibility timeout %d s, maxReceiveCount %d)",
		src, dlq, q.VisibilityTimeout, receives))
	return notes, nil
}

// withParameters is v with every Ref of a parameter that has a value (UseParameters)
// replaced by the value.
func (t *Template) withParameters(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = t.withParameters(e)
		}
		return out
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok && len(x) == 1 {
			if p, ok := t.Parameters[ref]; ok && p.Value != nil {
				return p.Value
			}
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = t.withParameters(e)
		}
		return out
	}
	return v
}

// staticString renders a CloudFormation value that depends on nothing deployed (a string;
// Fn::Join, Fn::Select and Fn::Split of such values; the AWS:: pseudo parameters, as
// placeholders) as a string, and anything else (a reference to a resource, a parameter or
// an import) as "".
func staticString(v any) string {
	r, ok := staticValue(v)
	s, _ := r.(string)
	if !ok {
		return ""
	}
	return s
}

var pseudo = map[string]string{
	"AWS::Partition": "aws", "AWS::Region": "local", "AWS::AccountId": "000000000000", "AWS::URLSuffix": "amazonaws.com",
}

func staticValue(v any) (any, bool) {
	switch x := v.(type) {
	case string, float64: // an Fn::Select's index is a number
		return x, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, ok := staticValue(e)
			if !ok {
				return nil, false
			}
			out[i] = r
		}
		return out, true
	case map[string]any:
		if len(x) != 1 {
			return nil, false
		}
		if ref, ok := x["Ref"].(string); ok {
			s, ok := pseudo[ref]
			return s, ok
		}
		if arg, ok := x["Fn::Join"]; ok {
			return evalJoin(arg, staticValue)
		}
		if arg, ok := x["Fn::Select"]; ok {
			return evalSelect(arg, staticValue)
		}
		if arg, ok := x["Fn::Split"]; ok {
			return evalSplit(arg, staticValue)
		}
	}
	return nil, false
}

// evalJoin, evalSelect and evalSplit evaluate Fn::Join, Fn::Select and Fn::Split with eval
// for their arguments.
func evalJoin(arg any, eval func(any) (any, bool)) (any, bool) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, false
	}
	sep, _ := a[0].(string)
	list, ok := eval(a[1])
	parts, _ := list.([]any)
	if !ok || parts == nil {
		return nil, false
	}
	strs := make([]string, len(parts))
	for i, p := range parts {
		if strs[i], ok = p.(string); !ok {
			return nil, false
		}
	}
	return strings.Join(strs, sep), true
}

func evalSelect(arg any, eval func(any) (any, bool)) (any, bool) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, false
	}
	idx, ok := eval(a[0])
	if !ok {
		return nil, false
	}
	var n int
	switch i := idx.(type) {
	case float64:
		n = int(i)
	case string:
		var err error
		if n, err = strconv.Atoi(i); err != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	list, ok := eval(a[1])
	parts, _ := list.([]any)
	if !ok || n < 0 || n >= len(parts) {
		return nil, false
	}
	return parts[n], true
}

func evalSplit(arg any, eval func(any) (any, bool)) (any, bool) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, false
	}
	sep, _ := a[0].(string)
	r, ok := eval(a[1])
	s, isString := r.(string)
	if !ok || !isString || sep == "" {
		return nil, false
	}
	var out []any
	for _, p := range strings.Split(s, sep) {
		out = append(out, p)
	}
	return out, true
}

// queueNameOf is the queue name at the end of an SQS ARN (arn:aws:sqs:region:account:name)
// or queue URL (https://sqs.region.amazonaws.com/account/name), "" for anything else.
func queueNameOf(s string) string {
	if parts := strings.Split(s, ":"); len(parts) == 6 && parts[0] == "arn" && parts[2] == "sqs" {
		return parts[5]
	}
	if rest, ok := strings.CutPrefix(s, "https://sqs."); ok {
		if parts := strings.Split(rest, "/"); len(parts) == 3 {
			return parts[2]
		}
	}
	return ""
}

// JSONish is v for a message: a string quoted, anything else in Go's form.
func JSONish(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v", v)
}

// LinkQueue makes queue, a queue of the template from of another stack of the run, the
// source of mapping, whose EventSourceArn imports that queue's ARN (an Fn::ImportValue of
// from's export, as CDK writes a queue passed to another stack, or a nested stack's
// parameter its parent gives). The queue and its dead-letter queue are added to t under ids
// of their own (from's name, ".", the logical id: CDK gives the same construct path the same
// id in every stack), with the local names that from's deployment gives them (names, by
// logical id): the two stacks' deployments then address one queue, which the mapping reads
// as one of t's.
func (t *Template) LinkQueue(mapping string, from *Template, queue string, names map[string]string) error {
	i := slices.IndexFunc(t.Mappings, func(m Mapping) bool { return m.LogicalID == mapping })
	if i < 0 {
		return fmt.Errorf("mapping %s: no event source mapping by that logical id", mapping)
	}
	q, ok := from.Queues[queue]
	if !ok {
		return fmt.Errorf("mapping %s: queue %s is not a queue of stack %s", mapping, queue, from.Name)
	}
	linked := func(id string) string { return from.Name + "." + id }
	q.Props = maps.Clone(q.Props)
	if dlq := q.DeadLetterQueue(); dlq != "" {
		d, ok := from.Queues[dlq]
		if !ok {
			return fmt.Errorf("mapping %s: the dead-letter queue %s of queue %s is not a queue of stack %s", mapping, dlq, queue, from.Name)
		}
		redrive, _ := q.Props["RedrivePolicy"].(map[string]any)
		redrive = maps.Clone(redrive)
		redrive["deadLetterTargetArn"] = map[string]any{"Fn::GetAtt": []any{linked(dlq), "Arn"}}
		q.Props["RedrivePolicy"] = redrive
		d.LogicalID, d.shared = linked(dlq), names[dlq]
		t.Queues[linked(dlq)] = d
	}
	q.LogicalID, q.shared = linked(queue), names[queue]
	t.Queues[linked(queue)] = q
	t.Mappings[i].Queue = linked(queue)
	return nil
}
