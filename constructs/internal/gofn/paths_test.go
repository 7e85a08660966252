package gofn

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/constructs/function"
	"github.com/idempotent-sqs/pipeline/constructs/validate"
	"github.com/idempotent-sqs/pipeline/internal/cdktest"
)

// trimmedCaller is what runtime.Caller reports for this package under -trimpath: the
// module path, not a directory.
func trimmedCaller() (string, bool) {
	return modulePath() + "/constructs/internal/gofn/paths.go", true
}

// moduleRoot is this module's directory, from a normal (not -trimpath) test build.
func moduleRoot(t *testing.T) string {
	t.Helper()
	_, root, err := defaultLocator.paths("consumer")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func mainModule(path, version string) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: path, Version: version}}, true
	}
}

func dependency(path, version string) func() (*debug.BuildInfo, bool) {
	return func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v1.0.0"}, {Path: path, Version: version}},
		}, true
	}
}

func noGoList(t *testing.T) func(string) (listedModule, error) {
	return func(string) (listedModule, error) {
		t.Error("go list must not run when the compiled-in path works")
		return listedModule{}, errors.ErrUnsupported
	}
}

// fakeModule is a directory with a go.mod and functions/<main>, as the module cache holds.
func fakeModule(t *testing.T, main string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "functions", main), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+modulePath()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func expectPaths(t *testing.T, l locator, main, root string) {
	t.Helper()
	entry, moduleDir, err := l.paths(main)
	if err != nil {
		t.Fatal(err)
	}
	if moduleDir != root || entry != filepath.Join(root, "functions", main) {
		t.Fatalf("entry %s, module %s; want %s/functions/%s", entry, moduleDir, root, main)
	}
}

func expectError(t *testing.T, l locator, want ...string) {
	t.Helper()
	_, _, err := l.paths("consumer")
	if err == nil {
		t.Fatalf("found paths; want an error containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestPathsFromTheCompiledInSource(t *testing.T) {
	l := defaultLocator
	l.buildInfo = func() (*debug.BuildInfo, bool) { t.Error("build info read"); return nil, false }
	l.goList = noGoList(t)
	root := moduleRoot(t)
	if _, err := os.Stat(filepath.Join(root, "functions", "dispatcher", "main.go")); err != nil {
		t.Fatal(err)
	}
	expectPaths(t, l, "dispatcher", root)
}

// -trimpath, app in this module (stacks/app): go list -m finds the main module.
func TestPathsUnderTrimpathFromTheMainModule(t *testing.T) {
	root := moduleRoot(t)
	t.Setenv("GOPROXY", "off") // everything go list needs is on disk; never the network
	l := locator{caller: trimmedCaller, buildInfo: mainModule(modulePath(), "(devel)"), goList: goListModule}
	expectPaths(t, l, "consumer", root)
}

// -trimpath, app in its own module that replaces this one with a directory.
func TestPathsUnderTrimpathThroughAReplace(t *testing.T) {
	root := moduleRoot(t)
	app := t.TempDir()
	gomod := "module example.com/app\n\ngo 1.26\n\nrequire " + modulePath() + " v0.0.0\n\nreplace " + modulePath() + " => " + root + "\n"
	if err := os.WriteFile(filepath.Join(app, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(app)
	t.Setenv("GOPROXY", "off")
	l := locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v0.0.0"), goList: goListModule}
	expectPaths(t, l, "dispatcher", root)
}

// -trimpath, this module in the module cache at the version the app was built with.
func TestPathsUnderTrimpathFromTheModuleCache(t *testing.T) {
	cache := fakeModule(t, "consumer")
	var asked string
	l := locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"),
		goList: func(path string) (listedModule, error) {
			asked = path
			return listedModule{Path: path, Version: "v1.2.0", Dir: cache}, nil
		}}
	expectPaths(t, l, "consumer", cache)
	if asked != modulePath() {
		t.Errorf("go list asked for %q, want %q", asked, modulePath())
	}
}

// A binary built on another machine: the compiled-in path is absolute but not here.
func TestPathsFromAnotherMachineFallBackToGoList(t *testing.T) {
	cache := fakeModule(t, "consumer")
	l := locator{caller: func() (string, bool) { return "/nonexistent/build/constructs/internal/gofn/paths.go", true },
		buildInfo: dependency(modulePath(), "v1.2.0"),
		goList: func(path string) (listedModule, error) {
			return listedModule{Path: path, Version: "v1.2.0", Dir: cache}, nil
		}}
	expectPaths(t, l, "consumer", cache)
}

func TestPathsNotFound(t *testing.T) {
	cache := fakeModule(t, "consumer")
	listed := func(m listedModule, err error) func(string) (listedModule, error) {
		return func(string) (listedModule, error) { return m, err }
	}
	t.Run("no build info", func(t *testing.T) {
		expectError(t, locator{caller: trimmedCaller, buildInfo: func() (*debug.BuildInfo, bool) { return nil, false }, goList: noGoList(t)},
			"not absolute (built with -trimpath)", "no build info")
	})
	t.Run("module not in the build info", func(t *testing.T) {
		expectError(t, locator{caller: trimmedCaller, buildInfo: mainModule("example.com/app", "(devel)"), goList: noGoList(t)},
			"lists no module holding "+pkgPath)
	})
	t.Run("go list fails", func(t *testing.T) {
		expectError(t, locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"),
			goList: listed(listedModule{}, errors.New("go.mod file not found"))},
			"go list -m "+modulePath()+": go.mod file not found")
	})
	t.Run("not downloaded", func(t *testing.T) {
		expectError(t, locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"),
			goList: listed(listedModule{Path: modulePath(), Version: "v1.2.0"}, nil)},
			"gives no directory", "go mod download")
	})
	t.Run("another version selected", func(t *testing.T) {
		expectError(t, locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"),
			goList: listed(listedModule{Path: modulePath(), Version: "v1.3.0", Dir: cache}, nil)},
			"selects v1.3.0, but the app was built with v1.2.0")
	})
	t.Run("no such main", func(t *testing.T) {
		_, _, err := locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"),
			goList: listed(listedModule{Path: modulePath(), Version: "v1.2.0", Dir: cache}, nil)}.paths("dispatcher")
		if err == nil || !strings.Contains(err.Error(), "no directory functions/dispatcher in "+cache) {
			t.Errorf("err = %v, want no functions/dispatcher", err)
		}
	})
}

// What a user sees when nothing works: the construct's prop to set, and how to find a value.
func TestValidateNamesEntryWhenTheSourceIsNotFound(t *testing.T) {
	saved := defaultLocator
	t.Cleanup(func() { defaultLocator = saved })
	defaultLocator = locator{caller: trimmedCaller, buildInfo: mainModule("example.com/app", "(devel)"), goList: noGoList(t)}
	cdktest.ExpectProblem(t, func() {
		p := Props{Main: "consumer", Options: function.Options{Timeout: 30 * time.Second, MemorySize: 256}}
		problems := validate.New("IdempotentConsumer", "App/Orders/Consumer")
		p.Validate(problems)
		problems.Check()
	}, "Entry: cannot find the consumer function's source", "built with -trimpath",
		"set Entry to the directory of your consumer main package",
		"$(go list -m -f '{{.Dir}}' "+modulePath()+")/functions/consumer", "ModuleDir")
}

// In vendor mode the package is compiled from vendor/, where no function main is (they are
// package main, so go mod vendor leaves them out) and `go list -m` does not answer: the
// error says so, and the hint works in vendor mode (your own main, or GOFLAGS=-mod=mod),
// not `go list -m`.
func TestValidateInVendorMode(t *testing.T) {
	saved := defaultLocator
	t.Cleanup(func() { defaultLocator = saved })
	vendored := func() (string, bool) {
		return "/home/dev/billing/vendor/" + modulePath() + "/constructs/internal/gofn/gofn.go", true
	}
	defaultLocator = locator{caller: vendored, buildInfo: mainModule("example.com/billing", "(devel)"), goList: noGoList(t)}
	if _, _, err := defaultLocator.paths("consumer"); !errors.Is(err, errVendored) {
		t.Fatalf("paths: err = %v, want errVendored", err)
	}
	// Under -trimpath the path is module-relative; go list then refuses in vendor mode.
	refused := func(string) (listedModule, error) {
		return listedModule{}, errors.New("go: can't match module patterns using the vendor directory (Use -mod=mod or -mod=readonly to bypass.)")
	}
	trimmed := locator{caller: trimmedCaller, buildInfo: dependency(modulePath(), "v1.2.0"), goList: refused}
	if _, _, err := trimmed.paths("consumer"); !errors.Is(err, errVendored) {
		t.Errorf("-trimpath in vendor mode: err = %v, want errVendored", err)
	}
	for _, main := range []string{"consumer", "dispatcher"} {
		lib := map[string]string{"consumer": "consume", "dispatcher": "dispatch"}[main]
		cdktest.ExpectProblem(t, func() {
			p := Props{Main: main, Options: function.Options{Timeout: 30 * time.Second, MemorySize: 256}}
			problems := validate.New("IdempotentConsumer", "App/Orders/Consumer")
			p.Validate(problems)
			problems.Check()
		}, "Entry: cannot find the "+main+" function's source: the app builds in vendor mode (this package was compiled from vendor/), and vendor/ holds no function main",
			"Set Entry to your own main package in your module (package main whose func main calls "+lib+".Start",
			"or synth with GOFLAGS=-mod=mod")
	}
}
