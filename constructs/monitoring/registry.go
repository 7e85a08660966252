package monitoring

import (
	"fmt"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// A resource is watched once per app, whoever watches it: a Watch call for resources
// already watched (by this PipelineMonitoring or another one in the same app) creates
// nothing and returns the first call's alarms. So a table shared by several pipelines, each
// of which watches its table, has one set of table alarms.
//
// The record is a watches construct at the app root (registryID): a plain construct outside
// any stack's resources, which adds nothing to a template, and holds the first call's alarms
// by kind and watch key.
const registryID = "IdempotentSqsMonitoringWatches"

// watches is an app's record of watched resources: each kind's alarms by watch key.
type watches struct {
	constructs.Construct
	queues      map[string]QueueAlarms
	consumers   map[string]ConsumerAlarms
	dispatchers map[string]DispatcherAlarms
	heartbeats  map[string]HeartbeatAlarms
	tables      map[string]TableAlarms
	// consumerOf is the consumer WatchConsumer was called with for a queue (queueKey), and
	// redescribe the function that names it in that queue's DLQ alarm, when WatchQueue came
	// first.
	consumerOf map[string]consumerName
	redescribe map[string]func(consumerName)
}

// Watched is how many Watch calls of the app created alarms (jsii requires a construct
// defined in Go to have a method of its own).
func (w *watches) Watched() int {
	return len(w.queues) + len(w.consumers) + len(w.dispatchers) + len(w.heartbeats) + len(w.tables)
}

// watchesOf returns the record of watched resources of c's app, creating it on first use.
func watchesOf(c constructs.IConstruct) *watches {
	root := c.Node().Root()
	found := root.Node().TryFindChild(jsii.String(registryID))
	if found == nil {
		scope, ok := root.(constructs.Construct)
		if !ok {
			panic(fmt.Sprintf("monitoring: the app root %T is not a constructs.Construct", root))
		}
		w := &watches{queues: map[string]QueueAlarms{}, consumers: map[string]ConsumerAlarms{}, dispatchers: map[string]DispatcherAlarms{},
			heartbeats: map[string]HeartbeatAlarms{}, tables: map[string]TableAlarms{},
			consumerOf: map[string]consumerName{}, redescribe: map[string]func(consumerName){}}
		constructs.NewConstruct_Override(w, scope, jsii.String(registryID))
		return w
	}
	w, ok := found.(*watches)
	if !ok {
		panic(fmt.Sprintf("monitoring: the app root's child %s is a %T, not this package's record of watched resources: "+
			"give your construct another id", registryID, found))
	}
	return w
}

// watchKey identifies a Watch call by its kind and resources. A resource is its ARN when
// the ARN is known at synthesis (imported by ARN: two imports of one resource are one),
// else its construct's unique address.
func watchKey(kind string, resources ...watchedResource) string {
	parts := []string{kind}
	for _, r := range resources {
		if r.arn != nil && !validate.Unresolved(*r.arn) {
			parts = append(parts, *r.arn)
		} else {
			parts = append(parts, *r.c.Node().Addr())
		}
	}
	return strings.Join(parts, "|")
}

type watchedResource struct {
	c   constructs.IConstruct
	arn *string
}
