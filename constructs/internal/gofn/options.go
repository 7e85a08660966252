package gofn

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// Given says which prop the user set each function option through: the construct's
// Function field, or the deprecated top-level field of the same name that came before it.
type Given struct {
	deprecated map[string]bool // options set through their deprecated field
	conflicts  []string        // options set both ways, to different values
}

// Prop is the name a problem with the option field gives: "Timeout" when the user set it
// through the deprecated field, else "Function.Timeout".
func (g Given) Prop(field string) string {
	if g.deprecated[field] {
		return field
	}
	return "Function." + field
}

// Prop is p.Given.Prop(field).
func (p *Props) Prop(field string) string { return p.Given.Prop(field) }

func (g Given) report(problems *validate.Problems) {
	for _, f := range g.conflicts {
		problems.Addf(f, "both %s and Function.%s are set, to different values; set Function.%s alone (%s is deprecated)", f, f, f, f)
	}
}

// optionFields are the fields of function.Options.
var optionFields = reflect.VisibleFields(reflect.TypeFor[function.Options]())

// FromProps is the function options a construct's props give: props.Function, each field
// left unset there (zero, or an empty slice or map) taken from the deprecated top-level field
// of the same name and type, if props has one. props is a pointer to the construct's props
// struct. An option set both ways to different values (pointers, interfaces and slice
// elements compared by identity) is a conflict, reported by Validate, and problems name it
// Function.<field>: Function's value is the one checked. Set both ways to the same value it is
// not a conflict (the pipeline construct fills Function from the deprecated fields before
// the consumer reads them).
func FromProps(props any) (function.Options, Given) {
	v := reflect.ValueOf(props).Elem()
	opts := v.FieldByName("Function").Interface().(function.Options)
	o := reflect.ValueOf(&opts).Elem()
	g := Given{deprecated: map[string]bool{}}
	for _, f := range optionFields {
		was, ok := deprecatedField(v, f)
		if !ok || unset(was) {
			continue
		}
		now := o.FieldByIndex(f.Index)
		switch {
		case unset(now):
			now.Set(was)
			g.deprecated[f.Name] = true
		case same(now, was):
			g.deprecated[f.Name] = true
		default:
			g.conflicts = append(g.conflicts, f.Name)
		}
	}
	return opts, g
}

// Sync sets each deprecated field of props that g says the user set (FromProps of the
// user's own props) to its Function field's value: after the pipeline construct changed
// Function (its hardening), the two agree again, so the part that reads them sees no
// conflict the user did not make, and still sees the ones the user did.
func Sync(props any, g Given) {
	v := reflect.ValueOf(props).Elem()
	fn := v.FieldByName("Function")
	for _, f := range optionFields {
		if was, ok := deprecatedField(v, f); ok && g.deprecated[f.Name] {
			was.Set(fn.FieldByIndex(f.Index))
		}
	}
}

// deprecatedField is the top-level field of the props struct v that came before the option
// f: the same name and type.
func deprecatedField(v reflect.Value, f reflect.StructField) (reflect.Value, bool) {
	old, ok := v.Type().FieldByName(f.Name)
	if !ok || old.Type != f.Type || len(old.Index) != 1 {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(old.Index), true
}

// unset reports whether an option holds nothing: its zero value, or an empty slice or map.
func unset(v reflect.Value) bool {
	if k := v.Kind(); k == reflect.Slice || k == reflect.Map {
		return v.Len() == 0
	}
	return v.IsZero()
}

// same reports whether a and b hold the same value: the same objects for pointers and
// interfaces (two jsii objects are never equal field by field), element by element for
// slices, key by key for maps, and by value where Go cannot compare (an interface holding a
// struct with a slice).
func same(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
	if !a.Comparable() || !b.Comparable() {
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
	return a.Equal(b)
}

// validateOptions holds the network, layer, concurrency and architecture options to
// Lambda's rules and defaults the architecture to arm64.
func (p *Props) validateOptions(problems *validate.Problems) {
	o := &p.Options
	if o.Architecture == nil {
		o.Architecture = awslambda.Architecture_ARM_64()
	} else if name := *o.Architecture.Name(); name != *awslambda.Architecture_ARM_64().Name() && name != *awslambda.Architecture_X86_64().Name() {
		problems.Add(p.Prop("Architecture"), strconv.Quote(name), "use awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64() (the architectures provided.al2023 runs on)")
	}
	if o.Vpc == nil {
		if o.VpcSubnets != nil {
			problems.Add(p.Prop("VpcSubnets"), "a subnet selection without Vpc", "set Vpc as well, or remove VpcSubnets")
		}
		if len(o.SecurityGroups) > 0 {
			problems.Add(p.Prop("SecurityGroups"), fmt.Sprintf("%d security groups without Vpc", len(o.SecurityGroups)), "set Vpc as well, or remove SecurityGroups")
		}
	}
	if slices.Contains(o.SecurityGroups, nil) {
		problems.Add(p.Prop("SecurityGroups"), "a nil security group", "remove it")
	}
	if len(o.Layers) > MaxLayers {
		problems.Add(p.Prop("Layers"), len(o.Layers), fmt.Sprintf("use at most %d layers (Lambda's limit)", MaxLayers))
	}
	if slices.Contains(o.Layers, nil) {
		problems.Add(p.Prop("Layers"), "a nil layer", "remove it")
	}
	if o.ReservedConcurrentExecutions < 0 {
		problems.Add(p.Prop("ReservedConcurrentExecutions"), o.ReservedConcurrentExecutions, "use 0 (none reserved) or a positive number of concurrent executions")
	}
}
