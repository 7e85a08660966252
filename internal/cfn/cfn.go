// Package cfn reads synthesized CloudFormation templates: their resources, which resource a
// property points at, and nested property lookup. The diagram and review tools and the stack
// tests share it.
package cfn

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A Resource is one resource of a synthesized template.
type Resource struct {
	Type                string         `json:"Type"`
	Properties          map[string]any `json:"Properties"`
	Metadata            map[string]any `json:"Metadata"`
	DeletionPolicy      string         `json:"DeletionPolicy"`
	UpdateReplacePolicy string         `json:"UpdateReplacePolicy"`
	Condition           string         `json:"Condition"` // created only when the condition holds
}

// ReadResources reads the Resources section of the template file at path, by logical id.
func ReadResources(path string) (map[string]Resource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t struct {
		Resources map[string]Resource `json:"Resources"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t.Resources, nil
}

// RefTarget returns the logical id v points at when v is {"Ref": id} or
// {"Fn::GetAtt": [id, attr]}, and "" otherwise.
func RefTarget(v any) string {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return ""
	}
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	if a, ok := m["Fn::GetAtt"].([]any); ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// References lists, in order and once each, the logical ids (and parameter names) v refers
// to anywhere inside it: by Ref, by Fn::GetAtt, and by ${Id} or ${Id.Attribute} in an
// Fn::Sub; the AWS:: pseudo parameters are left out.
func References(v any) []string {
	var out []string
	add := func(id string) {
		if id != "" && !strings.HasPrefix(id, "AWS::") && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if id := RefTarget(x); id != "" {
				add(id)
				return
			}
			if sub, ok := x["Fn::Sub"]; ok && len(x) == 1 {
				format, _ := sub.(string)
				if a, ok := sub.([]any); ok && len(a) == 2 {
					format, _ = a[0].(string)
					walk(a[1])
				}
				for _, m := range subVar.FindAllStringSubmatch(format, -1) {
					id, _, _ := strings.Cut(m[1], ".")
					add(id)
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// subVar matches a variable of an Fn::Sub format, ${Name} or ${Id.Attribute}, its name the
// first group; ${!Literal} is not one.
var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// Dig follows keys through nested objects, returning nil where a key is missing.
func Dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// JoinString renders v, a string or {"Fn::Join": [separator, parts]}, as a string: the parts
// that are strings as they are, every other part (a Ref, a GetAtt, a pseudo parameter)
// through resolve. Anything else renders as "".
func JoinString(v any, resolve func(part any) string) string {
	if s, ok := v.(string); ok {
		return s
	}
	join, _ := Dig(v, "Fn::Join").([]any)
	if len(join) != 2 {
		return ""
	}
	sep, _ := join[0].(string)
	parts, _ := join[1].([]any)
	out := make([]string, len(parts))
	for i, p := range parts {
		if s, ok := p.(string); ok {
			out[i] = s
		} else {
			out[i] = resolve(p)
		}
	}
	return strings.Join(out, sep)
}

// SourceMetadata is the type of the cloud assembly metadata entry each bundled function of
// these constructs carries (on its AWS::Lambda::Function, in the stack's manifest, not in
// the template): where its source is, so that package local can build it for the machine it
// runs on. Its data is a Source.
const SourceMetadata = "idempotent-sqs:function-source"

// Source is the data of a SourceMetadata entry: absolute paths on the machine that
// synthesized, and the role of the main ("consumer" or "dispatcher").
type Source struct {
	Entry     string `json:"entry"`
	ModuleDir string `json:"moduleDir,omitempty"` // "" when bundling searched upwards from Entry
	Role      string `json:"role"`
	// Path is the construct path of the function resource ("/Stack/Consumer/Resource/Resource");
	// ReadSources fills it from the entry's place in the manifest.
	Path string `json:"-"`
}

// ReadSources reads the SourceMetadata entries of stack in the cloud assembly at dir, by the
// logical id of the function resource (from the aws:cdk:logicalId entry of the same
// construct path). A function without an entry (synthesized by an older version) is absent.
// With keep, only the entries of the construct paths it keeps: a stack's metadata holds its
// nested stacks' too, whose logical ids may be the same as its own.
func ReadSources(dir, stack string, keep ...func(path string) bool) (map[string]Source, error) {
	return readMetadata[Source](dir, stack, SourceMetadata, func(s *Source, path string) { s.Path = path }, keep)
}

// ExistingQueueMetadata is the type of the cloud assembly metadata entry on the event source
// mapping of a consumer whose queue the stack imports (queue.ImportProcessingQueue): what the
// template cannot say of a queue it does not create, so that package local can stand in for
// it. Its data is an ExistingQueue.
const ExistingQueueMetadata = "idempotent-sqs:existing-queue"

// ExistingQueue is the data of an ExistingQueueMetadata entry. The ARNs are CloudFormation
// values: a string, or an expression of pseudo parameters (a queue imported by name).
type ExistingQueue struct {
	QueueArn           any  `json:"queueArn"`
	DeadLetterQueueArn any  `json:"deadLetterQueueArn"`
	Fifo               bool `json:"fifo"`
	// VisibilityTimeout and RetentionPeriod are in seconds.
	VisibilityTimeout int `json:"visibilityTimeout"`
	RetentionPeriod   int `json:"retentionPeriod"`
	// MaxReceiveCount is the redrive policy's, 0 when the user did not give it.
	MaxReceiveCount int `json:"maxReceiveCount,omitempty"`
}

// ReadExistingQueues reads the ExistingQueueMetadata entries of stack in the cloud assembly
// at dir, by the logical id of the event source mapping that carries each; with keep, as
// ReadSources.
func ReadExistingQueues(dir, stack string, keep ...func(path string) bool) (map[string]ExistingQueue, error) {
	return readMetadata[ExistingQueue](dir, stack, ExistingQueueMetadata, nil, keep)
}

// metadataEntries are a stack's cloud assembly metadata by construct path.
type metadataEntries = map[string][]struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// stackMetadata is the metadata of stack in the cloud assembly dir: the manifest's, and the
// additional metadata file's when the CLI moved it there.
func stackMetadata(dir, stack string) (metadataEntries, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m struct {
		Artifacts map[string]struct {
			Type       string `json:"type"`
			Metadata   metadataEntries
			Additional string `json:"additionalMetadataFile"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	a, ok := m.Artifacts[stack]
	if !ok || a.Type != "aws:cloudformation:stack" {
		return nil, fmt.Errorf("%s: no stack %q in the cloud assembly", dir, stack)
	}
	md := a.Metadata
	if a.Additional != "" {
		raw, err := os.ReadFile(filepath.Join(dir, a.Additional))
		if err != nil {
			return nil, err
		}
		var more metadataEntries
		if err := json.Unmarshal(raw, &more); err != nil {
			return nil, fmt.Errorf("%s/%s: %w", dir, a.Additional, err)
		}
		md = more
		for path, es := range a.Metadata {
			md[path] = append(md[path], es...)
		}
	}
	return md, nil
}

// readMetadata reads the entries of one metadata type of stack in the cloud assembly at dir
// (the manifest's and the additional metadata file's), by the logical id of the resource
// whose construct path carries each; fill, when not nil, is given each entry's path.
func readMetadata[T any](dir, stack, typ string, fill func(*T, string), keep []func(string) bool) (map[string]T, error) {
	md, err := stackMetadata(dir, stack)
	if err != nil {
		return nil, err
	}
	out := map[string]T{}
	for path, es := range md {
		if slices.ContainsFunc(keep, func(k func(string) bool) bool { return !k(path) }) {
			continue
		}
		var v *T
		var id string
		for _, e := range es {
			switch e.Type {
			case typ:
				v = new(T)
				if err := json.Unmarshal(e.Data, v); err != nil {
					return nil, fmt.Errorf("%s: %s of %s: %w", dir, typ, path, err)
				}
			case "aws:cdk:logicalId":
				_ = json.Unmarshal(e.Data, &id)
			}
		}
		if v != nil {
			if id == "" {
				return nil, fmt.Errorf("%s: %s has a %s entry but no aws:cdk:logicalId", dir, path, typ)
			}
			if fill != nil {
				fill(v, path)
			}
			out[id] = *v
		}
	}
	return out, nil
}

// StackRef is one stack of a cloud assembly: its artifact id, the name `cdk deploy` shows
// (the hierarchical id for a stack inside a Stage: "Dev/Billing") and where its template is.
type StackRef struct {
	// ID is the artifact id, DisplayName the stack's construct path ("Dev/Pipeline" in a
	// Stage), StackName its CloudFormation name ("Dev-Pipeline"), which `cdk deploy
	// --outputs-file` keys the outputs by.
	ID, DisplayName, StackName string
	Dir                        string // the (nested) assembly directory holding the template and manifest
	TemplateFile               string
	Environment                string // aws://ACCOUNT/REGION, unknown-account/unknown-region when agnostic
	// A nested stack (CDK's NestedStack, which Stacks does not list: package local adds
	// them) has the ID of the stack it is nested in as Parent and the logical id of its
	// AWS::CloudFormation::Stack there as ParentResource; its ID is the parent's, "/" and
	// that logical id, and Path is the NestedStack construct's path ("Parent/Workers").
	Parent, ParentResource, Path string
}

// Artifact is the ID of the cloud assembly artifact that describes the stack: its own, or
// for a nested stack that of the stack at the top of its nest.
func (r StackRef) Artifact() string {
	id, _, _ := strings.Cut(r.ID, "/")
	return id
}

// Stacks lists every stack of the cloud assembly at dir, the stacks of nested assemblies
// (one per Stage) included, by display name. A directory without manifest.json is an
// error satisfying errors.Is(err, fs.ErrNotExist).
func Stacks(dir string) ([]StackRef, error) {
	var out []StackRef
	if err := walkAssembly(dir, &out, 0); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b StackRef) int { return strings.Compare(a.DisplayName, b.DisplayName) })
	return out, nil
}

func walkAssembly(dir string, out *[]StackRef, depth int) error {
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	var m struct {
		Artifacts map[string]struct {
			Type        string `json:"type"`
			DisplayName string `json:"displayName"`
			Environment string `json:"environment"`
			Properties  struct {
				TemplateFile  string `json:"templateFile"`
				StackName     string `json:"stackName"`
				DirectoryName string `json:"directoryName"`
			} `json:"properties"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	for id, a := range m.Artifacts {
		switch a.Type {
		case "aws:cloudformation:stack":
			name := a.DisplayName
			if name == "" {
				name = id
			}
			stackName := a.Properties.StackName
			if stackName == "" {
				stackName = id
			}
			*out = append(*out, StackRef{ID: id, DisplayName: name, StackName: stackName, Dir: dir, TemplateFile: a.Properties.TemplateFile,
				Environment: a.Environment})
		case "cdk:cloud-assembly":
			if depth < 8 && a.Properties.DirectoryName != "" {
				if err := walkAssembly(filepath.Join(dir, a.Properties.DirectoryName), out, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
