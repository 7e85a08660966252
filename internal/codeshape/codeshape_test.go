package codeshape

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFunctionLines is the longest a function may be, from its signature to its closing brace.
const maxFunctionLines = 100

// longFunctionLines is where a function starts to be long: how many are over it is logged.
const longFunctionLines = 60

// Every function of the module and its examples (tests, testdata and benchmarks aside) is
// at most maxFunctionLines long; the longest are logged.
func TestNoFunctionIsLong(t *testing.T) {
	type fn struct {
		where string
		lines int
	}
	var all []fn
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "cdk.out") || name == "node_modules" || name == "testdata" ||
			filepath.ToSlash(path) == "../../test/bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if d, ok := decl.(*ast.FuncDecl); ok && d.Body != nil {
				n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
				all = append(all, fn{strings.TrimPrefix(filepath.ToSlash(path), "../../") + ": " + d.Name.Name, n})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 500 {
		t.Fatalf("read %d functions: the walk missed the module", len(all))
	}
	slices.SortFunc(all, func(a, b fn) int { return b.lines - a.lines })
	for _, f := range all[:3] {
		t.Logf("%d lines: %s", f.lines, f.where)
	}
	over, shipped := 0, 0
	for _, f := range all {
		if f.lines > longFunctionLines {
			over++
			if !strings.HasPrefix(f.where, "test/") && !strings.HasPrefix(f.where, "examples/") {
				shipped++
			}
		}
	}
	t.Logf("%d of %d functions are over %d lines, %d of them shipped (outside test/ and examples/): a figure to watch, not a limit",
		over, len(all), longFunctionLines, shipped)
	for _, f := range all {
		if f.lines > maxFunctionLines {
			t.Errorf("%s is %d lines, over %d: split it into its steps", f.where, f.lines, maxFunctionLines)
		}
	}
}
