// Package cfn reads synthesized CloudFormation templates: which resource a property points
// at, and nested property lookup. The diagram tool and the stack tests share it.
package cfn

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
