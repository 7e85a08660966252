package main

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// show renders a template value the way cdk-nag spells it in a suppression's applies_to:
// {"Ref": id} as <id>, {"Fn::GetAtt": [id, attr]} as <id.attr>, Fn::Join as the joined
// parts, Fn::Sub as its template string; anything else as compact JSON. A reviewer reads
// logical ids, and a wildcard renders exactly as the suppression that covers it names it.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = show(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if s, ok := intrinsic(fn, arg); ok {
					return s
				}
			}
		}
	}
	b, _ := json.Marshal(v) // map keys come out sorted
	return string(b)
}

func intrinsic(fn string, arg any) (string, bool) {
	switch fn {
	case "Ref":
		if s, ok := arg.(string); ok {
			return "<" + s + ">", true
		}
	case "Fn::GetAtt":
		switch a := arg.(type) {
		case []any:
			if len(a) == 2 {
				return "<" + show(a[0]) + "." + show(a[1]) + ">", true
			}
		case string:
			return "<" + a + ">", true
		}
	case "Fn::Join":
		if a, ok := arg.([]any); ok && len(a) == 2 {
			sep, _ := a[0].(string)
			parts, ok := a[1].([]any)
			if !ok {
				return "", false
			}
			s := make([]string, len(parts))
			for i, p := range parts {
				s[i] = show(p)
			}
			return strings.Join(s, sep), true
		}
	case "Fn::Sub":
		switch a := arg.(type) {
		case string:
			return a, true
		case []any:
			if len(a) > 0 {
				if s, ok := a[0].(string); ok {
					return s, true
				}
			}
		}
	case "Fn::ImportValue":
		return "<import " + show(arg) + ">", true
	}
	return "", false
}

// list turns a value that may be one item or a list of items into a list.
func list(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

// showAll renders each item of a one-or-many value, sorted.
func showAll(v any) []string {
	var out []string
	for _, e := range list(v) {
		out = append(out, show(e))
	}
	sort.Strings(out)
	return out
}

// code wraps each item in backticks and joins them with sep.
func code(items []string, sep string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, sep)
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
