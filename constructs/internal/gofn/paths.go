package gofn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
)

// locator finds the module that holds the function mains. Its three lookups are fields so
// tests can play each case (a normal build, a -trimpath build, no module at all) without
// building an app with -trimpath, which recompiles every dependency.
type locator struct {
	// caller is the file this package was compiled from, as runtime.Caller reports it: an
	// absolute path, or a module-relative one under -trimpath.
	caller func() (file string, ok bool)
	// buildInfo is the running binary's module list (debug.ReadBuildInfo).
	buildInfo func() (*debug.BuildInfo, bool)
	// goList runs `go list -m -json modulePath` in the working directory and returns what
	// it printed.
	goList func(modulePath string) (listedModule, error)
}

// listedModule is the part of `go list -m -json` output the lookup uses.
type listedModule struct {
	Path    string
	Version string
	Dir     string
	Replace *listedModule
}

var defaultLocator = locator{
	caller: func() (string, bool) {
		_, file, _, ok := runtime.Caller(0)
		return file, ok
	},
	buildInfo: debug.ReadBuildInfo,
	goList:    goListModule,
}

// pkgPath is this package's import path; the module holding it is the one to find.
var pkgPath = reflect.TypeFor[Props]().PkgPath()

// DefaultPaths returns the default Entry of main (functions/<main>) and the module root.
//
// The module root is where this package's source file was compiled from. A binary built with
// -trimpath (go build -trimpath, GOFLAGS=-trimpath) records that file relative to its module,
// so the module is found the way the go command finds it instead: its path (and version,
// when it is a dependency) from the binary's build info, its directory from
// `go list -m -json <path>` in the working directory, which answers for the main module, a
// replace directive and the module cache alike. The CDK CLI runs the app in the project
// directory, whose go.mod is the one the app was built with.
func DefaultPaths(main string) (entry, moduleDir string, err error) {
	return defaultLocator.paths(main)
}

// errVendored is DefaultPaths' error when the app builds in vendor mode: vendor/ holds this
// module's packages but never its function mains, which are package main and cannot be
// imported, so not vendored; and `go list -m` does not answer in vendor mode.
var errVendored = errors.New("the app builds in vendor mode (this package was compiled from vendor/), and vendor/ holds no function main: " +
	"they are package main, which nothing imports, so go mod vendor leaves them out")

func (l locator) paths(main string) (entry, moduleDir string, err error) {
	var reasons []string
	if file, ok := l.caller(); ok && strings.Contains(filepath.ToSlash(file), "/vendor/"+modulePath()+"/") {
		return "", "", errVendored
	} else if ok && filepath.IsAbs(file) {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
		err := checkRoot(root, main)
		if err == nil {
			return filepath.Join(root, "functions", main), root, nil
		}
		// Built on another machine, or the source moved since: try the go command.
		reasons = append(reasons, fmt.Sprintf("where the constructs were compiled: %v", err))
	} else {
		reasons = append(reasons, fmt.Sprintf("the source path is %q, not absolute (built with -trimpath)", file))
	}
	root, err := l.fromGoList(main)
	if err == nil {
		return filepath.Join(root, "functions", main), root, nil
	}
	if errors.Is(err, errVendored) {
		return "", "", err
	}
	reasons = append(reasons, err.Error())
	return "", "", errors.New(strings.Join(reasons, "; "))
}

// fromGoList finds the module directory through the build info and `go list -m`.
func (l locator) fromGoList(main string) (string, error) {
	info, ok := l.buildInfo()
	if !ok {
		return "", errors.New("the binary has no build info")
	}
	mod := ownModule(info)
	if mod == nil {
		return "", fmt.Errorf("the build info lists no module holding %s", pkgPath)
	}
	listed, err := l.goList(mod.Path)
	if err != nil && strings.Contains(err.Error(), "vendor") {
		// -mod=vendor: "go list -m: can't match module patterns using the vendor directory".
		return "", errVendored
	}
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %v", mod.Path, err)
	}
	dir := listed.Dir
	if dir == "" && listed.Replace != nil {
		dir = listed.Replace.Dir
	}
	if dir == "" {
		return "", fmt.Errorf("go list -m %s gives no directory (not in the module cache? run go mod download %s)", mod.Path, mod.Path)
	}
	// The working directory's go.mod must select the version the app was built with, or the
	// mains bundled would not be the ones the constructs were written for.
	if built := mod.Version; built != "" && built != "(devel)" && listed.Version != "" && listed.Version != built {
		return "", fmt.Errorf("go list -m %s in the working directory selects %s, but the app was built with %s", mod.Path, listed.Version, built)
	}
	if err := checkRoot(dir, main); err != nil {
		return "", fmt.Errorf("go list -m %s gives %s: %v", mod.Path, dir, err)
	}
	return dir, nil
}

// ownModule is the module of info (main or dependency) that holds this package: the one
// whose path is the longest prefix of pkgPath.
func ownModule(info *debug.BuildInfo) *debug.Module {
	var best *debug.Module
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m == nil || m.Path == "" || (pkgPath != m.Path && !strings.HasPrefix(pkgPath, m.Path+"/")) {
			continue
		}
		if best == nil || len(m.Path) > len(best.Path) {
			best = m
		}
	}
	return best
}

// checkRoot reports whether root holds go.mod and the main's directory.
func checkRoot(root, main string) error {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("no go.mod in %s", root)
	}
	if st, err := os.Stat(filepath.Join(root, "functions", main)); err != nil || !st.IsDir() {
		return fmt.Errorf("no directory functions/%s in %s", main, root)
	}
	return nil
}

// goListModule runs `go list -m -json modulePath` in the working directory.
func goListModule(modulePath string) (listedModule, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-json", modulePath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return listedModule{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var m listedModule
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
		return listedModule{}, fmt.Errorf("reading its output: %v", err)
	}
	return m, nil
}

// modulePath is the path of the module holding this package, for messages: this package
// sits at constructs/internal/gofn of it.
func modulePath() string {
	return strings.TrimSuffix(pkgPath, "/constructs/internal/gofn")
}
