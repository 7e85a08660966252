package cfn

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Resolver evaluates the intrinsic functions of a template value: Ref, Fn::GetAtt, Fn::Join,
// Fn::Select, Fn::Split, Fn::Sub and Fn::ImportValue, inside lists and objects at any depth.
// It is the one evaluator of the local kit; what differs between its modes is only how a
// name is answered, by the hooks:
//   - static (Static, StaticString): the pseudo parameters as placeholders and the
//     parameters' values, nothing deployed: what a template says on its own;
//   - planned and real (package standin's Deployment.Resolve): the names, URLs and ARNs a
//     deployment gives, before anything exists or after the backends created it.
//
// A hook left nil answers nothing: the value is Unresolved.
type Resolver struct {
	// Ref is the value of {"Ref": name}: a parameter, a resource or a pseudo parameter. Fn::Sub's
	// ${Name} asks it too.
	Ref func(name string) (any, error)
	// GetAtt is the value of {"Fn::GetAtt": [id, attr]}, and of Fn::Sub's ${Id.Attr}.
	GetAtt func(id, attr string) (any, error)
	// Import is the value of {"Fn::ImportValue": name}, name resolved.
	Import func(name any) (any, error)
	// Literal, when set, is the value of a plain string of the template and of the string an
	// Fn::Join makes (the kit reads an SQS ARN or URL built from a queue's name as that queue's).
	Literal func(s string) any
}

// Unresolved is a reference a Resolver has no value for: a resource it does not know (or an
// attribute it cannot give), a parameter without a value, an intrinsic it does not evaluate.
type Unresolved struct {
	What  string // `Orders1234 (AWS::SNS::Topic)`, `parameter RefundsTableArn`, `Fn::ImportValue "x"`
	Why   string
	Param string // the parameter's name, when a parameter has no value
}

func (e *Unresolved) Error() string { return e.What + ", " + e.Why }

// Resolve is v with every intrinsic evaluated, or the first reference it cannot resolve.
func (r Resolver) Resolve(v any) (any, error) {
	switch x := v.(type) {
	case string:
		if r.Literal != nil {
			return r.Literal(x), nil
		}
		return x, nil
	case float64, bool, nil:
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			res, err := r.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = res
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return r.intrinsic(k, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			res, err := r.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[k] = res
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected template value %T", v)
}

func (r Resolver) intrinsic(name string, arg any) (any, error) {
	switch name {
	case "Ref":
		s, _ := arg.(string)
		return r.ref(s)
	case "Fn::GetAtt":
		a, _ := arg.([]any)
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
		}
		id, _ := a[0].(string)
		attr, _ := a[1].(string)
		return r.getAtt(id, attr)
	case "Fn::Join", "Fn::Select", "Fn::Split":
		res, err := r.listFunc(name, arg)
		if s, ok := res.(string); ok && err == nil && name == "Fn::Join" && r.Literal != nil {
			return r.Literal(s), nil
		}
		return res, err
	case "Fn::Sub":
		return r.sub(arg)
	case "Fn::ImportValue":
		n, err := r.Resolve(arg)
		if err != nil {
			return nil, err
		}
		if r.Import == nil {
			return nil, UnresolvedImport(n)
		}
		return r.Import(n)
	}
	b, _ := json.Marshal(arg)
	return nil, &Unresolved{What: name + " " + string(b), Why: "an intrinsic the local kit does not evaluate"}
}

// UnresolvedImport is the Unresolved of an Fn::ImportValue of name that no stack the kit
// runs exports.
func UnresolvedImport(name any) *Unresolved {
	return &Unresolved{What: "Fn::ImportValue " + quoted(name), Why: "an export of none of the stacks the kit runs (run the stack that exports it too)"}
}

func (r Resolver) ref(name string) (any, error) {
	if r.Ref == nil {
		return nil, &Unresolved{What: name, Why: "which has no value before deployment"}
	}
	return r.Ref(name)
}

func (r Resolver) getAtt(id, attr string) (any, error) {
	if r.GetAtt == nil {
		return nil, &Unresolved{What: id + "." + attr, Why: "which has no value before deployment"}
	}
	return r.GetAtt(id, attr)
}

// listFunc evaluates Fn::Join, Fn::Select or Fn::Split, keeping the first error of an
// argument as the cause.
func (r Resolver) listFunc(name string, arg any) (any, error) {
	var inner error
	eval := func(v any) (any, bool) {
		res, err := r.Resolve(v)
		if err != nil && inner == nil {
			inner = err
		}
		return res, err == nil
	}
	fn := map[string]func(any, func(any) (any, bool)) (any, bool){"Fn::Join": join, "Fn::Select": selectOne, "Fn::Split": split}[name]
	if res, ok := fn(arg, eval); ok {
		return res, nil
	}
	b, _ := json.Marshal(arg)
	if inner != nil {
		return nil, fmt.Errorf("%s %s: %w", name, b, inner)
	}
	return nil, fmt.Errorf("%s %s: not resolvable in this deployment", name, b)
}

// sub evaluates Fn::Sub: "${Name}" (a parameter, a resource's Ref, a pseudo parameter, or
// a variable of its map) and "${Id.Attribute}"; "${!Literal}" stays "${Literal}".
func (r Resolver) sub(arg any) (any, error) {
	format, _ := arg.(string)
	vars := map[string]any{}
	if a, ok := arg.([]any); ok && len(a) == 2 {
		format, _ = a[0].(string)
		vars, _ = a[1].(map[string]any)
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(format, func(m string) string {
		name := m[2 : len(m)-1]
		var v any
		var err error
		if expr, ok := vars[name]; ok {
			v, err = r.Resolve(expr)
		} else if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = r.getAtt(id, attr)
		} else {
			v, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return Scalar(v)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return strings.ReplaceAll(out, "${!", "${"), nil
}

func join(arg any, eval func(any) (any, bool)) (any, bool) {
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

func selectOne(arg any, eval func(any) (any, bool)) (any, bool) {
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

func split(arg any, eval func(any) (any, bool)) (any, bool) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, false
	}
	sep, _ := a[0].(string)
	res, ok := eval(a[1])
	s, isString := res.(string)
	if !ok || !isString || sep == "" {
		return nil, false
	}
	var out []any
	for _, p := range strings.Split(s, sep) {
		out = append(out, p)
	}
	return out, true
}

// pseudo are the placeholders the static mode gives the pseudo parameters that do not
// depend on a deployment's account and region being known.
var pseudo = map[string]string{
	"AWS::Partition": "aws", "AWS::Region": "local", "AWS::AccountId": "000000000000", "AWS::URLSuffix": "amazonaws.com",
}

// Static is the static mode: the pseudo parameters as placeholders (pseudo), and the names
// known gives a value (a template's parameters that have one); nil knows none. Nothing
// deployed has a value.
func Static(known func(name string) (any, bool)) Resolver {
	return Resolver{Ref: func(name string) (any, error) {
		if known != nil {
			if v, ok := known(name); ok {
				return v, nil
			}
		}
		if s, ok := pseudo[name]; ok {
			return s, nil
		}
		return nil, &Unresolved{What: name, Why: "which has no value before deployment"}
	}}
}

// String is v resolved when it resolves to a string, and "" otherwise.
func (r Resolver) String(v any) string {
	res, err := r.Resolve(v)
	s, _ := res.(string)
	if err != nil {
		return ""
	}
	return s
}

// StaticString is v as a string when it depends on nothing deployed and on no parameter: a
// string, Fn::Join, Fn::Select, Fn::Split and Fn::Sub of such values, the pseudo parameters
// as placeholders (pseudo). Anything else (a reference to a resource, a parameter or an
// import; a value that is not a string) is "".
func StaticString(v any) string { return Static(nil).String(v) }

// Float is a numeric property's value: a number, or a string holding one (CloudFormation
// takes both); 0 for anything else.
func Float(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case string:
		var f float64
		if _, err := fmt.Sscan(n, &f); err == nil {
			return f
		}
	}
	return 0
}

// Int is the integer property key of p, def when p does not have it.
func Int(p map[string]any, key string, def int) int {
	if v, ok := p[key]; ok {
		return int(Float(v))
	}
	return def
}

// Scalar renders a resolved value as an environment variable or an SQS attribute holds it:
// a string as it is, a number and a boolean as text, anything else as JSON.
func Scalar(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// quoted is v for a message: a string quoted, anything else in Go's form.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%v", v)
}
