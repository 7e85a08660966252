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
// or "dispatcher"), or "": it must be a main package for Linux, and built on its role's
// library (functions/consume, functions/dispatch). A non-main package would bundle as an
// archive named bootstrap that Lambda cannot run; a dispatcher main behind a consumer's
// trigger fails on every event. The check reads the package clause and imports only.
func checkEntry(dir, main string) string {
	ctx := build.Default
	ctx.GOOS, ctx.CgoEnabled = "linux", false // as bundling builds it
	pkg, err := ctx.ImportDir(dir, build.ImportComment)
	var noGo *build.NoGoError
	switch {
	case errors.As(err, &noGo):
		return "it holds no Go source files (for linux): set Entry to the directory of your main package (package main, with a func main)"
	case err != nil:
		return fmt.Sprintf("it cannot be read as one Go package (%v): set Entry to the directory of your main package", err)
	case pkg.Name != "main":
		return fmt.Sprintf("it is package %s, not package main: Lambda runs an executable, which Go builds only from package main; "+
			"set Entry to your main package (package main, whose func main calls %s.Start)", pkg.Name, roleLibrary[main])
	}
	lib, ok := roleLibrary[main]
	if !ok {
		return ""
	}
	want := modulePath() + "/functions/" + lib
	if slices.Contains(pkg.Imports, want) {
		return ""
	}
	for role, other := range roleLibrary {
		if role != main && slices.Contains(pkg.Imports, modulePath()+"/functions/"+other) {
			return fmt.Sprintf("it is a %s main (it imports functions/%s, not functions/%s): the %s's Entry must be a main built on %s "+
				"(see functions/%s/main.go); did you mean to give it to the %s?", role, other, lib, main, want, main, role)
		}
	}
	return fmt.Sprintf("it does not import %s: the %s's main is built on it (%s.Start, see functions/%s/main.go), "+
		"which reads the environment the construct sets and handles the events its trigger sends", want, main, lib, main)
}
