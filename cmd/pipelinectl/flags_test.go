package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/backfill"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/dlq"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/health"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/localkit"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/policy"
	"github.com/idempotent-sqs/pipeline/cmd/pipelinectl/internal/record"
)

// definedFlags are the flags the file at path defines on a flag set (fs.String("name", ...),
// fs.IntVar(&v, "name", ...), ...), read from its source, with "output" when it calls
// cli.OutputFlag.
func definedFlags(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "cli" && sel.Sel.Name == "OutputFlag" {
			names = append(names, "output")
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "fs" { // every flag set here is fs
			return true
		}
		arg := -1
		switch sel.Sel.Name {
		case "String", "Int", "Bool", "Duration", "Float64", "Func", "BoolFunc":
			arg = 0
		case "StringVar", "IntVar", "BoolVar", "DurationVar", "Float64Var", "Var", "TextVar":
			arg = 1
		}
		if arg < 0 || len(call.Args) <= arg {
			return true
		}
		if lit, ok := call.Args[arg].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			name, _ := strconv.Unquote(lit.Value)
			names = append(names, name)
		}
		return true
	})
	slices.Sort(names)
	return slices.Compact(names)
}

// Every flag a command defines is in its help and in docs/operator-cli.md, and every flag its
// help names is one it (or every command) takes: help and docs cannot fall behind the code,
// nor promise a flag that is not there.
func TestEveryFlagIsInItsHelpAndTheDocs(t *testing.T) {
	common := definedFlags(t, "internal/cli/target.go") // NewFlags: every command but local takes them
	if len(common) < 5 {
		t.Fatalf("internal/cli/target.go defines %q: want the common flags", common)
	}
	docs, err := os.ReadFile("../../docs/operator-cli.md")
	if err != nil {
		t.Fatal(err)
	}
	mentioned := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	for _, c := range []struct {
		file, help string
		common     bool
	}{
		{"internal/dlq/inspect.go", dlq.InspectUsage, true},
		{"internal/dlq/redrive.go", dlq.RedriveUsage, true},
		{"internal/record/record.go", record.Usage, true},
		{"internal/health/status.go", health.StatusUsage, true},
		{"internal/health/verify.go", health.VerifyUsage, true},
		{"internal/backfill/backfill.go", backfill.Usage, true},
		{"internal/policy/policy.go", policy.Usage, true},
		{"internal/localkit/local.go", localkit.Usage, false},
	} {
		own := definedFlags(t, c.file)
		if len(own) == 0 {
			t.Errorf("%s: no flag found in its source; the test reads flag definitions wrong", c.file)
		}
		for _, name := range own {
			if !strings.Contains(c.help, "--"+name) {
				t.Errorf("%s defines --%s, which its help does not name", c.file, name)
			}
			if !strings.Contains(string(docs), "--"+name) {
				t.Errorf("%s defines --%s, which docs/operator-cli.md does not name", c.file, name)
			}
		}
		// A flag the package defines elsewhere (a helper two commands share) counts as taken.
		takes := slices.Clone(own)
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(c.file), "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				takes = append(takes, definedFlags(t, f)...)
			}
		}
		if c.common {
			takes = append(takes, common...)
		}
		for _, m := range mentioned.FindAllStringSubmatch(c.help, -1) {
			if !slices.Contains(takes, m[1]) && !slices.Contains(common, m[1]) {
				t.Errorf("the help of %s names --%s, which no command takes", c.file, m[1])
			}
		}
	}
	// The commands that take --output json, as the usage and the docs list them.
	var withJSON []string
	for _, c := range commands {
		if strings.Contains(c.help, "--output json") && c.name != "record release" {
			withJSON = append(withJSON, "`"+c.name+"`")
			line := regexp.MustCompile(`(?m)^  pipelinectl ` + c.name + ` .*(\n {29}.*)*`).FindString(usage)
			if !strings.Contains(line, "[--output json]") {
				t.Errorf("pipelinectl's usage shows %s without [--output json]: %q", c.name, line)
			}
		}
	}
	list := strings.Join(withJSON[:len(withJSON)-1], ", ") + " and " + withJSON[len(withJSON)-1] + " take `--output json`"
	if !strings.Contains(strings.Join(strings.Fields(string(docs)), " "), list) {
		t.Errorf("docs/operator-cli.md does not say %q", list)
	}
	for _, name := range common {
		if !strings.Contains(usage, "--"+name) {
			t.Errorf("every command takes --%s, which pipelinectl's usage does not name", name)
		}
	}
}
