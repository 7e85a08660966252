// Package doccheck reads the environment tables of docs/environment.md, so tests in the
// function packages can hold that document to what the functions read. It is for tests only.
package doccheck

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// EnvRow is one row of an environment table: `VAR` | default | meaning.
type EnvRow struct {
	Var string
	// Default is the literal default (the text between backticks), or "" when the default is
	// "empty" or the variable is Required.
	Default  string
	Required bool
}

var (
	rowPattern     = regexp.MustCompile("^\\| `([A-Z0-9_]+)` \\| ([^|]+) \\|")
	literalDefault = regexp.MustCompile("^`([^`]*)`$")
)

// EnvTable returns the rows of the first table after the line that starts with heading in
// the Markdown file at path. Every row must name one variable and a default that is
// "required", "empty" or one literal in backticks: anything else is an error, so the table
// stays checkable.
func EnvTable(path, heading string) ([]EnvRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], heading) {
		i++
	}
	if i == len(lines) {
		return nil, fmt.Errorf("%s: no line starts with %q", path, heading)
	}
	for i < len(lines) && !strings.HasPrefix(lines[i], "|") {
		i++
	}
	var rows []EnvRow
	for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ { // past the header and its rule
		m := rowPattern.FindStringSubmatch(lines[i])
		if m == nil {
			return nil, fmt.Errorf("%s:%d: not a row of one `VARIABLE` and its default: %q", path, i+1, lines[i])
		}
		row := EnvRow{Var: m[1]}
		switch def := strings.TrimSpace(m[2]); {
		case def == "required":
			row.Required = true
		case def == "empty":
		case literalDefault.MatchString(def):
			row.Default = literalDefault.FindStringSubmatch(def)[1]
		default:
			return nil, fmt.Errorf("%s:%d: %s: default %q is neither required, empty nor one `literal`", path, i+1, row.Var, def)
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no table rows after %q", path, heading)
	}
	return rows, nil
}

// CheckEnv holds the environment table under heading in the README at readme to load, a
// function's LoadConfig: every variable load reads (but Lambda's own AWS_*) has a row, every
// row is read, a required variable missing fails the configuration with an error naming it,
// and each default written there is the default: setting the variable to it gives the same
// configuration (reflect.DeepEqual) as leaving it unset. required gives a valid value for
// each required variable.
func CheckEnv[C any](t testing.TB, readme, heading string, load func(lookup func(string) (string, bool)) (C, error), required map[string]string) {
	t.Helper()
	rows, err := EnvTable(readme, heading)
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	loadEnv := func(env map[string]string) (C, error) {
		return load(func(k string) (string, bool) {
			read[k] = true
			v, ok := env[k]
			return v, ok
		})
	}
	base := map[string]string{}
	for _, r := range rows {
		if r.Required {
			v, ok := required[r.Var]
			if !ok {
				t.Fatalf("the README says %s is required; give the test a valid value for it", r.Var)
			}
			base[r.Var] = v
		}
	}
	want, err := loadEnv(base)
	if err != nil {
		t.Fatalf("LoadConfig with the required variables only: %v", err)
	}
	for _, r := range rows {
		env := maps.Clone(base)
		switch {
		case r.Required:
			delete(env, r.Var)
			if _, err := loadEnv(env); err == nil || !strings.Contains(err.Error(), r.Var) {
				t.Errorf("without %s (required in the README): err = %v, want one naming it", r.Var, err)
			}
		case r.Default != "":
			env[r.Var] = r.Default
			got, err := loadEnv(env)
			if err != nil {
				t.Errorf("%s=%s (the README's default): %v", r.Var, r.Default, err)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s (the README's default) gives another configuration than leaving it unset:\n got %+v\nwant %+v", r.Var, r.Default, got, want)
			}
		}
	}
	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.Var] = true
		if !read[r.Var] {
			t.Errorf("the README lists %s, which LoadConfig never reads", r.Var)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(read)) {
		if !documented[v] && !strings.HasPrefix(v, "AWS_") {
			t.Errorf("LoadConfig reads %s, which the README's table lacks", v)
		}
	}
}
