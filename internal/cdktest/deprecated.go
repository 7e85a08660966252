package cdktest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"

	"github.com/idempotent-sqs/pipeline/constructs/validate"
)

// SetDeprecated sets each field of opts (a struct) in the field of the same name of props (a
// pointer to a construct's props): the deprecated fields that came before opts' type. It
// fails t when props lacks one, so a test that sets every deprecated field cannot miss one.
func SetDeprecated(t *testing.T, props, opts any) {
	t.Helper()
	dst, src := reflect.ValueOf(props).Elem(), reflect.ValueOf(opts)
	for _, f := range reflect.VisibleFields(src.Type()) {
		field := dst.FieldByName(f.Name)
		if !field.IsValid() {
			t.Fatalf("%s has no deprecated %s: the options from before %s must all still work", dst.Type(), f.Name, src.Type())
		}
		field.Set(src.FieldByIndex(f.Index))
	}
}

// ExpectSameResource fails t unless the resources got and want of tpl are the same, apart
// from DependsOn and the properties named in omit (those that name each one's own
// resources, whose ids differ).
func ExpectSameResource(t *testing.T, tpl assertions.Template, got, want string, omit ...string) {
	t.Helper()
	resources := (*tpl.ToJSON())["Resources"].(map[string]any)
	render := func(id string) string {
		res, _ := resources[id].(map[string]any)
		props, _ := res["Properties"].(map[string]any)
		kept := map[string]any{}
		for k, v := range props {
			kept[k] = v
		}
		for _, k := range omit {
			delete(kept, k)
		}
		return JSON(map[string]any{"Type": res["Type"], "Properties": kept, "DeletionPolicy": res["DeletionPolicy"],
			"UpdateReplacePolicy": res["UpdateReplacePolicy"]})
	}
	if g, w := render(got), render(want); g != w {
		t.Errorf("%s:\n%s\nwant the same as %s:\n%s", got, g, want, w)
	}
}

// Problems runs build and returns the problems of the *validate.Error it panics with, nil
// when it builds; any other panic goes on.
func Problems(build func()) (problems []string) {
	defer func() {
		if r := recover(); r != nil {
			verr, ok := validate.AsError(r)
			if !ok {
				panic(r)
			}
			problems = verr.Problems
		}
	}()
	build()
	return nil
}

// ExpectProblemStarting fails t unless one of got starts with want, or, for want "", unless
// got is empty. name is the case, for the message.
func ExpectProblemStarting(t *testing.T, name string, got []string, want string) {
	t.Helper()
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("%s: want no problem, got %q", name, got)
	case want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, want) }):
		t.Errorf("%s: want a problem starting %q, got %q", name, want, got)
	}
}
