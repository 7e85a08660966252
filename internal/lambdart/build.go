package lambdart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildFlags are the go build arguments of every deployed function, one argument per
// element: the Makefile's GO_LAMBDA_FLAGS, which constructs/internal/gofn.BuildFlags hands
// to bundling (a test here compares them with the Makefile, as gofn's test does). They are
// repeated rather than imported because gofn is internal to constructs/, out of this
// package's reach.
var BuildFlags = []string{"-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w"}

// Build compiles the Go main package pkg into the executable out the way bundling does
// (CGO_ENABLED=0, BuildFlags), but for the host's GOOS and GOARCH so the Env can run it.
// pkg is an import path or a path relative to the working directory, as `go build` takes
// it; a test's working directory is its package directory, inside this module.
func Build(ctx context.Context, pkg, out string) error {
	return BuildIn(ctx, "", pkg, out)
}

// BuildIn is Build run in directory dir ("" for the working directory): the module whose
// go.mod is in or above dir builds pkg, as bundling builds an Entry in its ModuleDir.
func BuildIn(ctx context.Context, dir, pkg, out string) error {
	return BuildSpec(ctx, Deployed(dir, pkg), out)
}

// Deployed is the Spec of BuildIn: pkg built in dir as bundling builds a function, for the
// host.
func Deployed(dir, pkg string) Spec {
	return Spec{Dir: dir, Pkgs: []string{pkg}, Flags: BuildFlags, Env: []string{"CGO_ENABLED=0"}}
}

// Spec is one go build of a main package for the host: in Dir, the packages or the files
// Pkgs (as go build takes them), with Flags, and Env over the environment (CGO_ENABLED,
// GOEXPERIMENT). GOOS and GOARCH are always the host's.
type Spec struct {
	Dir   string
	Pkgs  []string
	Flags []string
	Env   []string
}

// Args is the go command line of s, as a user would type it after `cd s.Dir`: what a start
// line says the kit builds.
func (s Spec) Args() []string {
	return append(append(append([]string{"go", "build"}, s.Flags...), "-o", "bootstrap"), s.Pkgs...)
}

// BuildSpec builds s into the executable out for the host.
func BuildSpec(ctx context.Context, s Spec, out string) error {
	// go finds the main module from its working directory, which it takes from $PWD only
	// when that is the same directory: a path through a symbolic link (macOS's /tmp, a
	// devcontainer's /workspace) and the real path would name two places, and an absolute
	// pkg through the other one is "outside main module". Both are resolved first.
	dir := s.Dir
	pkgs := make([]string, len(s.Pkgs))
	for i, pkg := range s.Pkgs {
		var err error
		if dir, pkgs[i], err = realPaths(s.Dir, pkg); err != nil {
			return fmt.Errorf("lambdart: go build %s: %w", pkg, err)
		}
	}
	args := append([]string{"build"}, s.Flags...)
	args = append(append(args, "-o", out), pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), s.Env...), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if dir != "" {
		cmd.Env = append(cmd.Env, "PWD="+dir)
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdart: go build %s: %w\n%s", strings.Join(s.Pkgs, " "), err, output)
	}
	return nil
}

// realPaths resolves the symbolic links in dir and, when it is a directory path, pkg.
func realPaths(dir, pkg string) (string, string, error) {
	var err error
	if dir != "" {
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return "", pkg, fmt.Errorf("the directory to build in: %w", err)
		}
	}
	if filepath.IsAbs(pkg) {
		if pkg, err = filepath.EvalSymlinks(pkg); err != nil {
			return "", pkg, fmt.Errorf("the package directory: %w", err)
		}
	}
	return dir, pkg, nil
}
