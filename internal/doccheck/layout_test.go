package doccheck

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/development.md's layout names the tree as git holds it: every top-level directory is
// an entry, and an entry's text names each directory (or, in scripts/, each file) right under
// it, and docs/ each page and directory. A directory added without a word in the layout fails
// here, with the names to add.
func TestLayoutNamesTheTree(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	under := map[string][]string{} // a top-level directory -> what is right under it
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		top, rest, ok := strings.Cut(f, "/")
		if !ok || strings.HasPrefix(top, ".") {
			continue
		}
		next, _, dir := strings.Cut(rest, "/")
		if dir || top == "scripts" || top == "docs" {
			if !slices.Contains(under[top], next) {
				under[top] = append(under[top], next)
			}
		} else if under[top] == nil {
			under[top] = []string{}
		}
	}
	b, err := os.ReadFile("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	entries := layout(string(b))
	if len(entries) == 0 {
		t.Fatal("docs/development.md has no layout block (a code block of lines 'dir/   what it holds')")
	}
	for _, top := range slices.Sorted(func(yield func(string) bool) {
		for k := range under {
			if !yield(k) {
				return
			}
		}
	}) {
		text, ok := entries[top]
		if !ok {
			t.Errorf("docs/development.md's layout has no entry %s/", top)
			continue
		}
		var missing []string
		for _, name := range under[top] {
			word := strings.TrimSuffix(name, path.Ext(name))
			if top == "scripts" || top == "docs" {
				word = name
			}
			if !regexp.MustCompile(`(^|[^A-Za-z0-9_.-])` + regexp.QuoteMeta(word) + `($|[^A-Za-z0-9_-])`).MatchString(text) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("docs/development.md's layout, %s/: names none of %s", top, strings.Join(missing, ", "))
		}
	}
	t.Logf("the layout's %d entries name the %d top-level directories and what is under them", len(entries), len(under))
}

// layout is the layout block of development.md: each entry's name (without its slash) and
// its text, continuation lines included.
func layout(doc string) map[string]string {
	entries := map[string]string{}
	entry := regexp.MustCompile(`^([a-z][a-z0-9_.-]*)/ +(.*)$`)
	in, cur := false, ""
	for _, line := range strings.Split(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if in && len(entries) > 0 {
				return entries
			}
			in, cur = !in, ""
		case !in:
		case entry.MatchString(line):
			m := entry.FindStringSubmatch(line)
			cur = m[1]
			entries[cur] = m[2]
		case cur != "" && strings.HasPrefix(line, "  "):
			entries[cur] += " " + strings.TrimSpace(line)
		}
	}
	return entries
}
