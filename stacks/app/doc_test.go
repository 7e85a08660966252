package main

import (
	"os"
	"regexp"
	"testing"

	"github.com/idempotent-sqs/pipeline/stacks"
)

// The app's doc comment and the README tell users which context keys exist: each key the app
// reads must be in both, so a new key cannot ship undocumented.
func TestEveryContextKeyIsDocumented(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc, readme := read("main.go"), read("../../README.md")
	for _, key := range stacks.ContextKeys {
		if !regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(key) + ` `).MatchString(doc) {
			t.Errorf("context key %q is missing from the doc comment of stacks/app/main.go", key)
		}
		if !regexp.MustCompile("`" + regexp.QuoteMeta(key) + "`").MatchString(readme) {
			t.Errorf("context key %q is missing from README.md (as `%s`)", key, key)
		}
	}
}
