// Functions, as the kit reads them from a template: what runs them (an asset's bootstrap,
// a zip, an image), their environment, timeout and memory, and their asynchronous
// invocation settings (AWS::Lambda::EventInvokeConfig).

package standin

import (
	"fmt"
	"maps"
	"slices"

	"github.com/idempotent-sqs/pipeline/functions/contract"
	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// Function properties the kit applies (Environment, Timeout, MemorySize, reported) or that
// have no meaning for a function built from its source and run here; any other is listed
// in NotApplied.
var functionPropsNoEffect = map[string]bool{
	"Environment": true, "Timeout": true, "MemorySize": true, "Handler": true, "Runtime": true, "Code": true, "Role": true,
	"Description": true, "Tags": true, "Architectures": true, "LoggingConfig": true, "TracingConfig": true, "FunctionName": true,
}

// InvokeConfig is an AWS::Lambda::EventInvokeConfig: Lambda's retries of an asynchronous
// invocation and where an event goes when they are exhausted.
type InvokeConfig struct {
	LogicalID       string
	maxRetries      int
	OnFailureQueue  string // logical id of the on-failure destination queue, "" for none
	maxEventAgeSecs int
}

// Function is an AWS::Lambda::Function: its environment (values still CloudFormation
// expressions), timeout and memory.
type Function struct {
	LogicalID string
	Env       map[string]any
	Timeout   int // seconds
	MemoryMB  int
	Handler   string
	Runtime   string
	// Path is the construct path CDK recorded in the resource's aws:cdk:path metadata
	// ("" when the assembly was synthesized without it): the key of its source in the
	// cloud assembly (cfn.ReadSources).
	Path string
	// Asset is the directory of the function's code asset in the cloud assembly, relative
	// to it (the aws:asset:path metadata of a Code asset), "" for none (inline code, an
	// image, an S3 object the app names, or an assembly synthesized without asset metadata).
	Asset string
	// Image reports a container image function (PackageType Image).
	Image bool
}

// Binary names the program of this repository that the function runs. The template says
// only which asset holds the code, so it is told by the function's environment contract:
// IDEMPOTENCY_TABLE_NAME is the consumer's, QUEUE_URL the dispatcher's.
func (f Function) Binary() (string, error) {
	_, consumer := f.Env[contract.EnvTableName]
	_, dispatcher := f.Env[contract.EnvQueueURL]
	switch {
	case consumer && !dispatcher:
		return "consumer", nil
	case dispatcher && !consumer:
		return "dispatcher", nil
	}
	return "", fmt.Errorf("function %s: cannot tell consumer from dispatcher by its environment", f.LogicalID)
}

// readFunction reads a function: its environment, handler, runtime and code, and the properties the kit does not apply.
func readFunction(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	for _, k := range slices.Sorted(maps.Keys(p)) {
		switch {
		case k == "Layers":
			t.NotApplied = append(t.NotApplied, "function "+id+" Layers: a layer's files are not under /opt locally, "+
				"and an extension in one does not run; the function runs without them")
		case !functionPropsNoEffect[k]:
			t.NotApplied = append(t.NotApplied, "function "+id+" "+k)
		}
	}
	env, _ := cfn.Dig(p, "Environment", "Variables").(map[string]any)
	f := Function{LogicalID: id, Env: env, Timeout: cfn.Int(p, "Timeout", 3), MemoryMB: cfn.Int(p, "MemorySize", 128)}
	f.Handler, _ = p["Handler"].(string)
	f.Runtime, _ = p["Runtime"].(string)
	f.Path, _ = r.Metadata["aws:cdk:path"].(string)
	if prop, _ := r.Metadata["aws:asset:property"].(string); prop == "Code" {
		f.Asset, _ = r.Metadata["aws:asset:path"].(string)
	}
	f.Image = p["PackageType"] == "Image"
	t.Functions[id] = f
	return nil
}

// readInvokeConfig reads a function's asynchronous invocation settings.
func readInvokeConfig(t *Template, id string, r resource, doc map[string]resource) error {
	p := r.Properties
	t.InvokeConfigs[cfn.RefTarget(p["FunctionName"])] = InvokeConfig{LogicalID: id, maxRetries: cfn.Int(p, "MaximumRetryAttempts", 2),
		OnFailureQueue: cfn.RefTarget(cfn.Dig(p, "DestinationConfig", "OnFailure", "Destination")), maxEventAgeSecs: cfn.Int(p, "MaximumEventAgeInSeconds", 21600)}
	return nil
}
