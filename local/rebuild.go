package local

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"errors"
	"fmt"
	"go/build"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// rebuild is a Go executable built for another machine, to be built again for this one
// from its source with the settings it was built with.
type rebuild struct {
	spec lambdart.Spec
	// alt is the files of the main package's directory, tried when spec (the files the line
	// table names) does not compile: a file whose every function was inlined or dropped by
	// the linker leaves no line in the table.
	alt  []string
	arch string // the executable's, as Lambda names it
}

// spec is how c is built for this machine, what the start says of it, and the files to try
// when that does not compile.
func (c code) spec() (spec lambdart.Spec, what string, alt []string) {
	if c.src != nil {
		dir, pkg := c.src.Entry, "."
		if c.src.ModuleDir != "" {
			dir, pkg = c.src.ModuleDir, c.src.Entry
		}
		return lambdart.Deployed(dir, pkg), fmt.Sprintf("%s (%s)", c.src.Entry, c.src.Role), nil
	}
	r := c.rebuilt
	return r.spec, fmt.Sprintf("%s in %s (the main package of its %s bootstrap, as it was built)", strings.Join(r.spec.Pkgs, " "), r.spec.Dir, r.arch), r.alt
}

// buildCode builds spec into out, saying so (what) to progress; when that does not compile
// and alt is not nil, it builds alt's files instead: the line table names no file whose
// functions were all inlined, and the directory's files for this machine are what
// `go build x/*.go` would take.
func buildCode(ctx context.Context, spec lambdart.Spec, what string, alt []string, out string, progress io.Writer) error {
	fmt.Fprintf(progress, "local: building %s for this machine\n", what)
	err := buildKept(ctx, spec, out)
	if err != nil && alt != nil {
		fmt.Fprintf(progress, "local: building it again from every file of its directory for this machine (%s): %s\n",
			strings.Join(alt, " "), strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
		spec.Pkgs = alt
		err = buildKept(ctx, spec, out)
	}
	return err
}

// say is what the start prints of r: what is built, and how.
func (r *rebuild) say() string {
	return fmt.Sprintf("its %s bootstrap is built again for this machine (%s) from its source, as it was built: cd %s && %s",
		r.arch, lambdaArch[runtime.GOARCH], r.spec.Dir, shellLine(r.spec.Args()))
}

// buildFor finds, for a Go executable built for another machine (arch), how to build it for
// this one: the source files of its main package from its line table (absolute paths unless
// it was built with -trimpath), the module they are in, and the settings of its build info
// (-tags, -ldflags, -gcflags, CGO_ENABLED, ...), so that it is built as its author's
// Makefile or CDK's bundling built it. Without the files on this machine, the main package
// in the module whose go.mod is in the assembly's directory or above it (a -trimpath build
// of a package) will do. why is what to say when neither is here.
func buildFor(ref cfn.StackRef, exe []byte, arch, why string) (code, string) {
	info, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil { // not Go: nothing to build again
		return code{}, why + ": " + archFix()
	}
	flags, env := buildSettings(info)
	mainFile, files, _ := mainSources(exe)
	r := &rebuild{arch: lambdaArch[arch], spec: lambdart.Spec{Flags: flags, Env: env}}
	missing := mainFile // the file to name when the source is not here
	// go build x/main.go: the files are the package.
	if info.Path == "command-line-arguments" {
		i := slices.IndexFunc(files, func(f string) bool { return !exists(f) })
		if i < 0 && len(files) > 0 {
			r.spec.Dir = filepath.Dir(files[0])
			for _, f := range files {
				r.spec.Pkgs = append(r.spec.Pkgs, relTo(r.spec.Dir, f))
			}
			r.alt = packageFiles(r.spec.Dir, flags, files)
			return code{rebuilt: r}, ""
		}
		if i >= 0 && exists(mainFile) {
			missing = files[i]
		}
	} else { // a package: built in its module, found from its source, else (-trimpath) from the assembly
		from := ref.Dir
		if exists(mainFile) {
			from = filepath.Dir(mainFile)
		}
		if dir := moduleAbove(from, info.Main.Path); dir != "" && info.Main.Path != "" {
			r.spec.Dir, r.spec.Pkgs = dir, []string{info.Path}
			return code{rebuilt: r}, ""
		}
	}
	return code{}, fmt.Sprintf("%s; the kit builds it again for this machine from its source, and %s: %s, or %s",
		why, notHere(info, missing, ref.Dir), buildHint(info, flags, env, files), archFix())
}

// notHere says which source of info's main package is not on this machine.
func notHere(info *buildinfo.BuildInfo, missing, assembly string) string {
	switch {
	case missing == "":
		return "its executable names no source file of its main package (stripped of its line table)"
	case !filepath.IsAbs(missing) && info.Path == "command-line-arguments":
		return fmt.Sprintf("it was built with -trimpath from the file %s, which names no directory", missing)
	case !filepath.IsAbs(missing):
		return fmt.Sprintf("it was built with -trimpath (its source file %s names no directory) and its main package %s (module %s %s) is in no module at or above %s",
			missing, info.Path, info.Main.Path, info.Main.Version, assembly)
	case info.Path == "command-line-arguments":
		return "its source file " + missing + " is not on this machine"
	case exists(missing):
		return fmt.Sprintf("its source file %s is in no module %s, its main package %s's", missing, info.Main.Path, info.Path)
	}
	return fmt.Sprintf("its source file %s (main package %s) is not on this machine", missing, info.Path)
}

// buildHint is the command that builds the executable's main package for this machine with
// its settings, for a user who has its source.
func buildHint(info *buildinfo.BuildInfo, flags, env, files []string) string {
	pkg := []string{info.Path}
	if info.Path == "command-line-arguments" {
		pkg = nil
		for _, f := range files {
			pkg = append(pkg, filepath.Base(f))
		}
		if len(pkg) == 0 {
			pkg = []string{"main.go"}
		}
	}
	line := append(append([]string{"GOOS=linux", "GOARCH=" + runtime.GOARCH}, env...), "go", "build")
	line = append(append(append(line, flags...), "-o", "bootstrap"), pkg...)
	ldflags := ""
	if slices.Contains(flags, "-trimpath") && !slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(f, "-ldflags=") }) {
		ldflags = " (with the -ldflags it was built with, which a -trimpath build does not record)"
	}
	return "build it for this machine where its source is with `" + shellLine(line) + "`" + ldflags +
		", put that bootstrap in the function's asset, and synthesize again"
}

// buildSettings is what go build needs to build as info was built: its flags (one argument
// each) and its environment. The architecture's own level (GOAMD64, GOARM64) is not
// carried: it is the other architecture's.
func buildSettings(info *buildinfo.BuildInfo) (flags, env []string) {
	for _, s := range info.Settings {
		switch s.Key {
		case "-tags", "-ldflags", "-gcflags", "-asmflags":
			flags = append(flags, s.Key+"="+s.Value)
		case "-trimpath":
			if s.Value == "true" {
				flags = append(flags, "-trimpath")
			}
		case "CGO_ENABLED", "GOEXPERIMENT":
			env = append(env, s.Key+"="+s.Value)
		}
	}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "CGO_ENABLED=") }) {
		env = append(env, "CGO_ENABLED=0")
	}
	return flags, env
}

// mainSources reads the source files of the main package from a Go executable's line
// table (which -s -w keep: the runtime needs it): the file of main.main, and every file of
// package main with a function left in the executable, sorted.
func mainSources(exe []byte) (mainFile string, files []string, err error) {
	f, err := elf.NewFile(bytes.NewReader(exe))
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return "", nil, errors.New("no line table")
	}
	b, err := pcln.Data()
	if err != nil {
		return "", nil, err
	}
	t, err := gosym.NewTable(nil, gosym.NewLineTable(b, text.Addr))
	if err != nil {
		return "", nil, err
	}
	for _, fn := range t.Funcs {
		if fn.PackageName() != "main" {
			continue
		}
		file, _, _ := t.PCToLine(fn.Entry)
		if file == "" || strings.HasPrefix(file, "<") {
			continue
		}
		if fn.Name == "main.main" {
			mainFile = file
		}
		if !slices.Contains(files, file) {
			files = append(files, file)
		}
	}
	slices.Sort(files)
	return mainFile, files, nil
}

// packageFiles is the Go files of the main package in dir that a build for this machine
// with flags' tags takes, when they are more than files: nil otherwise.
func packageFiles(dir string, flags, files []string) []string {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = runtime.GOOS, runtime.GOARCH, false
	for _, f := range flags {
		if tags, ok := strings.CutPrefix(f, "-tags="); ok {
			ctx.BuildTags = strings.FieldsFunc(tags, func(r rune) bool { return r == ',' || r == ' ' })
		}
	}
	p, err := ctx.ImportDir(dir, 0)
	if err != nil || p.Name != "main" || len(p.GoFiles) <= len(files) {
		return nil
	}
	return p.GoFiles
}

// moduleAbove is the directory of the go.mod in dir or above it that declares module path
// ("" for any module); "" when there is none.
func moduleAbove(dir, path string) string {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if mod := modfilePath(b); path == "" || mod == path {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func exists(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// relTo is path relative to dir when it is inside it, else path.
func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// shellLine quotes each argument of a command line that a shell would split.
func shellLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if strings.ContainsAny(a, " \t\"'$\\|&;<>()*?[]#~`") {
			k, v, ok := strings.Cut(a, "=")
			if ok && !strings.ContainsAny(k, " \"'") {
				q[i] = k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'"
			} else {
				q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
		}
	}
	return strings.Join(q, " ")
}
