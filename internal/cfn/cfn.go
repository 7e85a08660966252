// Package cfn reads synthesized CloudFormation templates: their resources, which resource a
// property points at, and nested property lookup. The diagram and review tools and the stack
// tests share it.
package cfn

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// A Resource is one resource of a synthesized template.
type Resource struct {
	Type                string         `json:"Type"`
	Properties          map[string]any `json:"Properties"`
	Metadata            map[string]any `json:"Metadata"`
	DeletionPolicy      string         `json:"DeletionPolicy"`
	UpdateReplacePolicy string         `json:"UpdateReplacePolicy"`
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
