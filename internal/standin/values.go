// CloudFormation values, as the kit resolves them: statically when it reads a template
// (parameters with their defaults, Fn::Join, Fn::Select, Fn::Split: withParameters,
// staticValue), and against a deployment when it creates the resources and the functions'
// environments (Ref, Fn::GetAtt, Fn::Sub, pseudo parameters, imports: Deployment.Resolve).
// Every value the kit reads from a template is resolved here.

package standin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

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

func intProp(p map[string]any, key string, def int) int {
	if v, ok := p[key]; ok {
		return int(asFloat(v))
	}
	return def
}

func asFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case string: // CloudFormation accepts numbers as strings
		var f float64
		if _, err := fmt.Sscan(n, &f); err == nil {
			return f
		}
	}
	return 0
}

// unresolved is a reference the kit has no local value for: a resource it does not create
// (or an attribute it cannot give), a parameter without a value, or an intrinsic it does not
// evaluate.
type unresolved struct {
	what  string // `Orders1234 (AWS::SNS::Topic)`, `parameter RefundsTableArn`, `Fn::ImportValue`
	why   string
	param string // the parameter's name, when a parameter has no value
}

func (e *unresolved) Error() string { return e.what + ", " + e.why }

// UnresolvedImport is the unresolved of an Fn::ImportValue of name that no stack the kit
// runs exports.
func UnresolvedImport(name any) *unresolved {
	return &unresolved{what: "Fn::ImportValue " + jsonish(name), why: "an export of none of the stacks the kit runs (run the stack that exports it too)"}
}

// Resolve evaluates the CloudFormation intrinsics the templates use: Ref and Fn::GetAtt of
// queues and tables, the AWS:: pseudo parameters, Fn::Join. An SQS ARN built from a template
// queue name (as redrive-allow policies are) is rewritten to the local queue's ARN.
func (d *Deployment) Resolve(v any) (any, error) {
	switch x := v.(type) {
	case string, float64, bool, nil:
		if s, ok := x.(string); ok {
			if m := sqsARN.FindStringSubmatch(s); m != nil { // a template or imported queue's ARN, by name
				if id, ok := d.byName[m[1]]; ok {
					return d.QueueARN[id], nil
				}
			}
			if m := sqsURL.FindStringSubmatch(s); m != nil { // an imported queue's URL
				if id, ok := d.byName[m[1]]; ok {
					return d.QueueURL[id], nil
				}
			}
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := d.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				switch k {
				case "Ref":
					return d.ref(arg)
				case "Fn::GetAtt":
					return d.getAtt(arg)
				case "Fn::Join", "Fn::Select", "Fn::Split":
					r, err := d.intrinsic(k, arg)
					if err != nil || k != "Fn::Join" {
						return r, err
					}
					return d.Resolve(r) // the joined string may be a template queue's ARN or URL
				case "Fn::Sub":
					return d.sub(arg)
				case "Fn::ImportValue":
					name, err := d.Resolve(arg)
					s, ok := name.(string)
					switch {
					case err != nil:
						return nil, err
					case !ok || d.Import == nil:
						return nil, UnresolvedImport(name)
					}
					return d.Import(s)
				}
				if strings.HasPrefix(k, "Fn::") {
					b, _ := json.Marshal(arg)
					return nil, &unresolved{what: k + " " + string(b), why: "an intrinsic the local kit does not evaluate"}
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			r, err := d.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected template value %T", v)
}

func (d *Deployment) ref(arg any) (any, error) {
	id, _ := arg.(string)
	switch id {
	case "AWS::AccountId":
		return d.account, nil
	case "AWS::Region":
		return d.region, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return cmp.Or(d.StackName, d.Template.Name), nil
	}
	if url, ok := d.QueueURL[id]; ok {
		return url, nil
	}
	if name, ok := d.TableName[id]; ok {
		return name, nil
	}
	if arn, ok := d.TopicARN[id]; ok {
		return arn, nil
	}
	if arn, ok := d.SecretARN[id]; ok {
		return arn, nil
	}
	if name, ok := d.Bucket[id]; ok {
		return name, nil
	}
	if name := d.LocalName(id); name != "" {
		return name, nil
	}
	if p, ok := d.Template.Parameters[id]; ok {
		if p.Value != nil {
			return p.Value, nil
		}
		why := "which has no Default"
		if p.FromSSM() {
			why = fmt.Sprintf("whose value is read from Systems Manager parameter %s at deploy time", jsonish(p.Default))
		}
		return nil, &unresolved{what: "parameter " + id + " (" + p.Type + ")", why: why, param: id}
	}
	return nil, d.notLocal(id, "")
}

func (d *Deployment) getAtt(arg any) (any, error) {
	a, _ := arg.([]any)
	if len(a) != 2 {
		return nil, fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
	}
	id, _ := a[0].(string)
	attr, _ := a[1].(string)
	switch {
	case attr == "Arn" && d.QueueARN[id] != "":
		return d.QueueARN[id], nil
	case attr == "QueueUrl" && d.QueueURL[id] != "":
		return d.QueueURL[id], nil
	case attr == "QueueName" && d.QueueName[id] != "":
		return d.QueueName[id], nil
	case attr == "Arn" && d.Bucket[id] != "":
		return "arn:aws:s3:::" + d.Bucket[id], nil
	case attr == "TopicArn" && d.TopicARN[id] != "":
		return d.TopicARN[id], nil
	case attr == "TopicName" && d.TopicARN[id] != "":
		return d.TopicARN[id][strings.LastIndex(d.TopicARN[id], ":")+1:], nil
	case attr == "Arn" && d.TableName[id] != "":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", d.region, d.account, d.TableName[id]), nil
	case strings.HasPrefix(attr, "Outputs.") && d.Template.Types[id] == typeNestedStack && d.NestedOutput != nil:
		return d.NestedOutput(id, strings.TrimPrefix(attr, "Outputs."))
	}
	return nil, d.notLocal(id, attr)
}

// intrinsic evaluates Fn::Join, Fn::Select (of an imported queue's ARN: its name, region,
// account) or Fn::Split with the deployment's values, keeping the first error of an
// argument as the cause.
func (d *Deployment) intrinsic(name string, arg any) (any, error) {
	var inner error
	eval := func(v any) (any, bool) {
		r, err := d.Resolve(v)
		if err != nil && inner == nil {
			inner = err
		}
		return r, err == nil
	}
	fn := map[string]func(any, func(any) (any, bool)) (any, bool){"Fn::Join": evalJoin, "Fn::Select": evalSelect, "Fn::Split": evalSplit}[name]
	if r, ok := fn(arg, eval); ok {
		return r, nil
	}
	b, _ := json.Marshal(arg)
	if inner != nil {
		return nil, fmt.Errorf("%s %s: %w", name, b, inner)
	}
	return nil, fmt.Errorf("%s %s: not resolvable in this deployment", name, b)
}

// sub evaluates Fn::Sub: "${Name}" (a parameter, a resource's Ref, a pseudo parameter, or
// a variable of its map) and "${Id.Attribute}"; "${!Literal}" stays "${Literal}".
func (d *Deployment) sub(arg any) (any, error) {
	format, _ := arg.(string)
	vars := map[string]any{}
	if a, ok := arg.([]any); ok && len(a) == 2 {
		format, _ = a[0].(string)
		vars, _ = a[1].(map[string]any)
	}
	var firstErr error
	out := cfn.SubVar.ReplaceAllStringFunc(format, func(m string) string {
		name := m[2 : len(m)-1]
		var v any
		var err error
		if expr, ok := vars[name]; ok {
			v, err = d.Resolve(expr)
		} else if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = d.getAtt([]any{id, attr})
		} else {
			v, err = d.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return scalar(v)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return strings.ReplaceAll(out, "${!", "${"), nil
}

func scalar(v any) string {
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
