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
	src := queueNameOf(t.staticString(q.QueueArn))
	if src == "" {
		return nil, fmt.Errorf("mapping %s: the imported queue's ARN %s is not a value the local kit can resolve "+
			"(another stack's export, or a parameter without a value: give it with Options.Parameters or pipelinectl local up --parameter)", mapping, jsonish(q.QueueArn))
	}
	if q.DeadLetterQueueArn == nil {
		return nil, fmt.Errorf("mapping %s: the imported queue %s has no dead-letter queue the consumer knows of: "+
			"give the consumer a DeadLetterSource (queue.ImportProcessingQueue's DeadLetterQueueArn or DeadLetterQueueName)", mapping, src)
	}
	dlq := queueNameOf(t.staticString(q.DeadLetterQueueArn))
	if dlq == "" {
		return nil, fmt.Errorf("mapping %s: the imported dead-letter queue's ARN %s is not a value the local kit can resolve "+
			"(another stack's export, or a parameter without a value: give it with Options.Parameters or pipelinectl local up --parameter)", mapping, jsonish(q.DeadLetterQueueArn))
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

// jsonish is v for a message: a string quoted, anything else in Go's form.
func jsonish(v any) string {
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
	if dlq := q.deadLetterQueue(); dlq != "" {
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
