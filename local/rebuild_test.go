package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// A Go executable built for the other architecture, as a Makefile builds it (a file list,
// -tags, -ldflags with -X) or as CDK's GoFunction bundles it (a package), is built again for
// this machine from the source its line table names, with the settings its build info
// records: the tag's file and the stamped version are in what runs, a file the line table
// does not name (its one function inlined) is found in the directory, and the assembly may
// be anywhere. Without its source here (-trimpath, or the file gone), the reason names the
// file and the command that builds it for this machine.
func TestForeignExecutablesAreBuiltAgainFromTheirSource(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no Lambda architecture: %s", runtime.GOARCH)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	mod := t.TempDir()
	for name, src := range map[string]string{
		"go.mod":                 "module example.com/made\n\ngo 1.26\n",
		"sender/main.go":         "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/made/flavor\"\n)\n\nvar version = \"dev\"\n\nfunc main() { fmt.Println(version, flavor.Name, suffix()) }\n",
		"sender/suffix.go":       "package main\n\nfunc suffix() string { return \"!\" }\n", // inlined: no line of its own
		"flavor/tagged.go":       "//go:build made\n\npackage flavor\n\nconst Name = \"tagged\"\n",
		"flavor/plain.go":        "//go:build !made\n\npackage flavor\n\nconst Name = \"plain\"\n",
		"sender/ignored_test.go": "package main\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := func(out string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", append([]string{"build", "-o", out}, args...)...)
		cmd.Dir, cmd.Env = mod, append(os.Environ(), "GOOS=linux", "GOARCH="+other, "CGO_ENABLED=0", "PWD="+mod)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		b, err := os.ReadFile(filepath.Join(mod, out))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	stamp := []string{"-tags", "lambda.norpc,made", "-ldflags", "-s -w -X main.version=from-make"}
	files := build("bin/files", append(stamp, "sender/main.go", "sender/suffix.go")...)
	pkg := build("bin/pkg", "./sender")
	trimmed := build("bin/trimmed", append(stamp, "-trimpath", "sender/main.go", "sender/suffix.go")...)
	elsewhere := cfn.StackRef{Dir: t.TempDir()} // an assembly outside the module

	for _, tc := range []struct {
		name string
		exe  []byte
		want string // what the rebuilt executable prints
	}{
		{"a file list with tags and -X", files, "from-make tagged !"},
		{"a package, as GoFunction bundles it", pkg, "dev plain !"},
	} {
		c, why := buildFor(elsewhere, tc.exe, other, "another machine's")
		if why != "" || c.rebuilt == nil {
			t.Fatalf("%s: not built again: %s", tc.name, why)
		}
		spec, what, alt := c.spec()
		var progress bytes.Buffer
		out := filepath.Join(t.TempDir(), "bootstrap")
		if err := buildCode(context.Background(), spec, what, alt, out, &progress); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, progress.String())
		}
		got, err := exec.Command(out).Output()
		if err != nil || strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("%s: the executable built again prints %q (%v), want %q; built as %s\n%s", tc.name, got, err, tc.want, shellLine(spec.Args()), progress.String())
		}
		t.Logf("%s: %s", tc.name, progress.String())
		if tc.name == "a file list with tags and -X" {
			// The line table names main.go only: suffix.go's one function was inlined.
			if !slices.Equal(spec.Pkgs, []string{"main.go"}) || !slices.Equal(alt, []string{"main.go", "suffix.go"}) ||
				!strings.Contains(progress.String(), "building it again from every file of its directory") ||
				!strings.Contains(c.rebuilt.say(), "cd "+filepath.Join(mod, "sender")+" && go build -ldflags='-s -w -X main.version=from-make' -tags=lambda.norpc,made -o bootstrap main.go") {
				t.Errorf("files %v, then %v; said %q\n%s", spec.Pkgs, alt, c.rebuilt.say(), progress.String())
			}
		}
	}

	// Without its source here: the file is named, and the command that builds it here.
	here := lambdaArch[runtime.GOARCH]
	fix := "put that bootstrap in the function's asset, and synthesize again, or give the function Architecture " + here
	if _, why := buildFor(elsewhere, trimmed, other, "another machine's"); !strings.HasPrefix(why, "another machine's; the kit builds it again for this machine from its source, "+
		"and it was built with -trimpath from the file ./main.go, which names no directory: build it for this machine where its source is with "+
		"`GOOS=linux GOARCH="+runtime.GOARCH+" CGO_ENABLED=0 go build -tags=lambda.norpc,made -trimpath -o bootstrap main.go` "+
		"(with the -ldflags it was built with, which a -trimpath build does not record), ") ||
		!strings.Contains(why, fix) {
		t.Errorf("-trimpath: %s", why)
	}
	if err := os.Rename(filepath.Join(mod, "sender"), filepath.Join(mod, "moved")); err != nil {
		t.Fatal(err)
	}
	if _, why := buildFor(elsewhere, files, other, "another machine's"); !strings.Contains(why, "its source file "+filepath.Join(mod, "sender", "main.go")+" is not on this machine: "+
		"build it for this machine where its source is with `GOOS=linux GOARCH="+runtime.GOARCH+" CGO_ENABLED=0 go build") || !strings.Contains(why, fix) {
		t.Errorf("the source gone: %s", why)
	}
	if _, why := buildFor(elsewhere, pkg, other, "another machine's"); !strings.Contains(why, "its source file "+filepath.Join(mod, "sender", "main.go")+
		" (main package example.com/made/sender) is not on this machine: build it for this machine where its source is with `GOOS=linux GOARCH="+runtime.GOARCH+
		" CGO_ENABLED=0 go build -o bootstrap example.com/made/sender`") {
		t.Errorf("the package's source gone: %s", why)
	}
}
