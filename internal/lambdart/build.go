package lambdart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	// go finds the main module from its working directory, which it takes from $PWD only
	// when that is the same directory: a path through a symbolic link (macOS's /tmp, a
	// devcontainer's /workspace) and the real path would name two places, and an absolute
	// pkg through the other one is "outside main module". Both are resolved first.
	dir, pkg, err := realPaths(dir, pkg)
	if err != nil {
		return fmt.Errorf("lambdart: go build %s: %w", pkg, err)
	}
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
	if dir != "" {
		cmd.Env = append(cmd.Env, "PWD="+dir)
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdart: go build %s: %w\n%s", pkg, err, output)
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
