package cdktest

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"unicode"
)

// RunbookLink matches the end of an alarm description: "Runbook: <url>#<anchor>".
var RunbookLink = regexp.MustCompile(`Runbook: (\S+)#([a-z0-9_-]+)$`)

// GithubAnchor is the fragment GitHub gives a heading: lower case, every character that is
// not a letter, digit, space, "-" or "_" dropped, spaces as hyphens.
func GithubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// MarkdownAnchors returns the anchors of a Markdown file's level 2 and 3 headings outside
// code blocks. Two headings with one anchor are an error (GitHub would suffix the second).
func MarkdownAnchors(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	anchors := map[string]bool{}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, prefix := range []string{"## ", "### "} {
			if h, ok := strings.CutPrefix(line, prefix); ok {
				a := GithubAnchor(h)
				if anchors[a] {
					return nil, fmt.Errorf("%s: two headings have the anchor %q", path, a)
				}
				anchors[a] = true
			}
		}
	}
	return anchors, sc.Err()
}
