// The resources functions call, as the kit reads them from a template: tables, SNS topics
// and their subscriptions, S3 buckets and their notifications, Secrets Manager secrets.

package standin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/eventfilter"
)

// bucket is an AWS::S3::Bucket's properties.
type bucket struct {
	LogicalID string
	Props     map[string]any
}

// BucketEvents is a Custom::S3BucketNotifications, CDK's way of setting a bucket's event
// notifications: the bucket (BucketName, as in the template) and its
// NotificationConfiguration (TopicConfigurations, QueueConfigurations,
// LambdaFunctionConfigurations, each with Events and a key Filter).
type BucketEvents struct {
	LogicalID string
	Bucket    any
	Config    map[string]any
}

// Secret is an AWS::SecretsManager::Secret's properties: its Name, and its value as given
// (SecretString) or to be generated (GenerateSecretString).
type Secret struct {
	LogicalID string
	Props     map[string]any
}

// Topic is an AWS::SNS::Topic's properties.
type Topic struct {
	LogicalID string
	Props     map[string]any
}

// Fifo reports whether the topic is a FIFO topic.
func (t Topic) Fifo() bool { b, _ := t.Props["FifoTopic"].(bool); return b }

// Subscription is an AWS::SNS::Subscription: what a topic delivers to.
type Subscription struct {
	LogicalID string
	TopicArn  any // as in the template (the topic may be another stack's)
	protocol  string
	Endpoint  any  // as in the template: an SQS queue's ARN for protocol sqs
	Raw       bool // RawMessageDelivery: the message as it was published, not SNS's JSON envelope
	// Filter is the FilterPolicy, nil for none: a message it does not match is not delivered.
	// It matches the message's attributes, or with FilterOnBody (FilterPolicyScope
	// MessageBody) the message, which must be a JSON object.
	Filter       *eventfilter.Criteria
	FilterOnBody bool
}

// Table is an AWS::DynamoDB::Table's properties, or an AWS::DynamoDB::GlobalTable's
// (Global), which the kit creates as one table: the replica in the stack's region.
type Table struct {
	LogicalID string
	Props     map[string]any
	global    bool
}

// readBucket reads a bucket, with the properties the kit does not apply.
func readBucket(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.buckets[id] = bucket{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "BucketName" {
			t.NotApplied = append(t.NotApplied, "bucket "+id+" "+k)
		}
	}
	return nil
}

// readBucketEvents reads a bucket's event notifications (what bucket.AddEventNotification writes).
func readBucketEvents(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	config, _ := p["NotificationConfiguration"].(map[string]any)
	t.BucketEvents = append(t.BucketEvents, BucketEvents{LogicalID: id, Bucket: p["BucketName"], Config: config})
	if fns, _ := config["LambdaFunctionConfigurations"].([]any); len(fns) > 0 {
		t.NotApplied = append(t.NotApplied, "bucket notifications "+id+": LambdaFunctionConfigurations (the kit delivers a bucket's events to topics and queues only)")
	}
	if handler := cfn.RefTarget(p["ServiceToken"]); handler != "" {
		t.Applied[handler] = "CDK's handler of bucket notifications, which the kit applies itself"
	}
	return nil
}

// readSecret reads a secret, with the properties the kit does not apply (its key, its
// replicas, its tags).
func readSecret(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Secrets[id] = Secret{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "Name" && k != "Description" && k != "SecretString" && k != "GenerateSecretString" {
			t.NotApplied = append(t.NotApplied, "secret "+id+" "+k)
		}
	}
	return nil
}

// readTopic reads a topic, with the properties the kit does not apply.
func readTopic(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Topics[id] = Topic{LogicalID: id, Props: p}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if k != "TopicName" && k != "FifoTopic" && k != "ContentBasedDeduplication" {
			t.NotApplied = append(t.NotApplied, "topic "+id+" "+k)
		}
	}
	return nil
}

// readSubscription reads a topic's subscription: an SQS one with its filter policy compiled, another listed as not applied.
func readSubscription(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	sub := Subscription{LogicalID: id, TopicArn: p["TopicArn"], Endpoint: p["Endpoint"]}
	sub.protocol, _ = p["Protocol"].(string)
	sub.Raw = p["RawMessageDelivery"] == true || p["RawMessageDelivery"] == "true"
	switch {
	case sub.protocol != "sqs":
		t.NotApplied = append(t.NotApplied, fmt.Sprintf("subscription %s (protocol %s): the kit delivers a topic's messages to SQS queues only", id, sub.protocol))
		return nil
	case p["FilterPolicy"] != nil:
		policy := p["FilterPolicy"]
		if s, ok := policy.(string); ok { // CloudFormation takes the policy as JSON text too
			if err := json.Unmarshal([]byte(s), &policy); err != nil {
				return fmt.Errorf("subscription %s: FilterPolicy is not JSON: %w", id, err)
			}
		}
		b, err := json.Marshal(policy)
		if err == nil {
			sub.Filter, err = eventfilter.Compile([]string{string(b)})
		}
		if err != nil {
			return fmt.Errorf("subscription %s: FilterPolicy %s: %w (SNS would refuse the subscription)", id, b, err)
		}
		sub.FilterOnBody = p["FilterPolicyScope"] == "MessageBody"
	}
	t.Subscriptions = append(t.Subscriptions, sub)
	return nil
}

// readTable reads a table (a TableV2's too).
func readTable(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.Tables[id] = Table{LogicalID: id, Props: p, global: r.Type == typeGlobalTable}
	return nil
}
