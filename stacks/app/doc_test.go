package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/idempotent-sqs/pipeline/stacks"
)

// The app's doc comment and docs/settings.md tell users which context keys exist: each key
// the app reads must be in both (in settings.md, first in a row of its tables), so a new key
// cannot ship undocumented; settings.md names no key the app does not read, and the README
// links to it.
func TestEveryContextKeyIsDocumented(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc, settings, readme := read("main.go"), read("../../docs/settings.md"), read("../../README.md")
	// The keys of settings.md's rows: "| `key` |" or "| `key`, `key` |".
	rowKeys := map[string]bool{}
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]*`) \\|").FindAllStringSubmatch(settings, -1) {
		for _, k := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
			rowKeys[k[1]] = true
		}
	}
	for _, key := range stacks.ContextKeys {
		if !regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(key) + ` `).MatchString(doc) {
			t.Errorf("context key %q is missing from the doc comment of stacks/app/main.go", key)
		}
		if !rowKeys[key] {
			t.Errorf("context key %q has no row in docs/settings.md (as | `%s` |)", key, key)
		}
		delete(rowKeys, key)
	}
	for key := range rowKeys {
		t.Errorf("docs/settings.md has a row for %q, which the app does not read", key)
	}
	if !regexp.MustCompile(`\]\(docs/settings\.md\)`).MatchString(readme) {
		t.Error("README.md does not link docs/settings.md")
	}
}
