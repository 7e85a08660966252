package lambdart_test

import (
	"bufio"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// Build must produce what `make build` and bundling produce, for the host.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The Makefile passes the flags through a shell: an argument with a space is quoted.
	quoted := make([]string, len(lambdart.BuildFlags))
	for i, arg := range lambdart.BuildFlags {
		if strings.ContainsAny(arg, " \t") {
			arg = `"` + arg + `"`
		}
		quoted[i] = arg
	}
	want := strings.Join(quoted, " ")
	line := regexp.MustCompile(`^GO_LAMBDA_FLAGS\s*:?=\s*(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			if got := strings.TrimSpace(m[1]); got != want {
				t.Fatalf("Makefile GO_LAMBDA_FLAGS = %q, lambdart.BuildFlags = %q", got, want)
			}
			return
		}
	}
	t.Fatal("GO_LAMBDA_FLAGS not found in the Makefile")
}

// The binary TestMain built is static and stripped, as CGO_ENABLED=0 and -s -w make it.
func TestBuildIsStaticAndStripped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	bin, err := elf.Open(fnBinary)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("binary is dynamically linked (CGO on?)")
		}
	}
	if bin.Section(".symtab") != nil {
		t.Error(`binary has a symbol table; -ldflags "-s -w" was not applied`)
	}
}

// A module reached through a symbolic link (macOS's /tmp, a devcontainer's /workspace)
// builds as from its real path: go resolves its working directory to the real path, so an
// entry given through the link would otherwise be "outside main module".
func TestBuildInThroughSymlink(t *testing.T) {
	real := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":     "module example.com/linked\n\ngo 1.24\n",
		"fn/main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(real, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bootstrap")
	if err := lambdart.BuildIn(t.Context(), link, filepath.Join(link, "fn"), out); err != nil {
		t.Fatalf("BuildIn through the link %s: %v", link, err)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	err := lambdart.BuildIn(t.Context(), filepath.Join(link, "gone"), filepath.Join(link, "fn"), out)
	if err == nil || !strings.Contains(err.Error(), "the directory to build in: lstat") {
		t.Errorf("a directory that does not exist: err = %v", err)
	}
}
