package gofn

import (
	"errors"
	"fmt"
	"go/build"
	"slices"
)

// roleLibrary is the package a function of each Main builds on: the runtime that reads the
// environment the construct sets and handles the event its trigger sends.
var roleLibrary = map[string]string{"consumer": "consume", "dispatcher": "dispatch"}

// checkEntry says what is wrong with dir as the Entry of a function of role main ("consumer"
// or "dispatcher") on arch ("arm64" or "amd64"), or "": it must be a main package for Linux
// as bundling builds it (tags lambda.norpc, no cgo), and not the other role's main. A
// non-main package would bundle as an archive named bootstrap that Lambda cannot run; a
// dispatcher main behind a consumer's trigger fails on every event. The check reads the
// package clause and the direct imports only: a main that reaches functions/consume through
// a package of its own is not judged.
func checkEntry(dir, main, arch string) string {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", arch, false // as bundling builds it
	ctx.BuildTags = append(slices.Clone(ctx.BuildTags), "lambda.norpc")
	pkg, err := ctx.ImportDir(dir, build.ImportComment)
	var noGo *build.NoGoError
	switch {
	case errors.As(err, &noGo):
		return "it holds no Go source files (for linux/" + arch + "): set Entry to the directory of your main package (package main, with a func main)"
	case err != nil:
		return fmt.Sprintf("it cannot be read as one Go package (%v): set Entry to the directory of your main package", err)
	case pkg.Name != "main":
		return fmt.Sprintf("it is package %s, not package main: Lambda runs an executable, which Go builds only from package main; "+
			"set Entry to your main package (package main, whose func main calls %s.Start)", pkg.Name, roleLibrary[main])
	}
	lib, ok := roleLibrary[main]
	if !ok || slices.Contains(pkg.Imports, modulePath()+"/functions/"+lib) {
		return ""
	}
	for role, other := range roleLibrary {
		if role != main && slices.Contains(pkg.Imports, modulePath()+"/functions/"+other) {
			return fmt.Sprintf("it is a %s main (it imports functions/%s, not functions/%s): the %s's Entry must be a main built on %s "+
				"(see functions/%s/main.go); did you mean to give it to the %s?", role, other, lib, main, modulePath()+"/functions/"+lib, main, role)
		}
	}
	return ""
}
