package monitoring

import (
	"fmt"
	"strings"
	"sync"

	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// A resource is watched once per app, whoever watches it: a Watch call for resources
// already watched (by this PipelineMonitoring or another one in the same app) creates
// nothing and returns the first call's alarms. So a table shared by several pipelines, each
// of which watches its table, has one set of table alarms.
//
// The record lives in this process, keyed by a marker construct at the app root (registryID,
// with one child whose id names the app's entry). Plain constructs outside any stack's
// resources add nothing to a template.
const registryID = "IdempotentSqsMonitoringWatches"

var registry = struct {
	sync.Mutex
	apps    int
	watches map[string]map[string]any // app entry -> watch key -> the first call's alarms
}{watches: map[string]map[string]any{}}

// watchesOf returns the record of watched resources of c's app, creating it on first use.
func watchesOf(c constructs.IConstruct) map[string]any {
	registry.Lock()
	defer registry.Unlock()
	root := c.Node().Root()
	marker := root.Node().TryFindChild(jsii.String(registryID))
	if marker == nil {
		scope, ok := root.(constructs.Construct)
		if !ok {
			panic(fmt.Sprintf("monitoring: the app root %T is not a constructs.Construct", root))
		}
		registry.apps++
		entry := fmt.Sprintf("app%d", registry.apps)
		marker = constructs.NewConstruct(scope, jsii.String(registryID))
		constructs.NewConstruct(marker.(constructs.Construct), jsii.String(entry))
		registry.watches[entry] = map[string]any{}
	}
	entry := *(*marker.Node().Children())[0].Node().Id()
	return registry.watches[entry]
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

// watched returns the alarms of an earlier Watch call for key, if there was one.
func (m *pipelineMonitoring) watched(key string) (any, bool) {
	a, ok := watchesOf(m)[key]
	return a, ok
}

// remember records the alarms of the Watch call for key.
func (m *pipelineMonitoring) remember(key string, alarms any) {
	watchesOf(m)[key] = alarms
}
