// Command review writes a reviewer's report of a synthesized CDK app: what a security or
// operations reviewer would otherwise dig out of the CloudFormation templates and cdk-nag
// reports in cdk.out by hand.
//
//	go run ./cmd/review [-out docs/review.md] [-diff docs/review.md [-check]] [cdk.out]
//
// The report is Markdown, read top-down: a summary line, then per stack the resources by
// type; every IAM statement as principal -> actions -> resources, with each wildcard in an
// Allow flagged and the cdk-nag suppression that accepts it; who may do what to each data
// store; the encryption at rest and key of each data store; the retention, DeletionPolicy
// and UpdateReplacePolicy of each stateful resource; every alarm with its metric or
// expression, threshold, periods, missing-data treatment, actions and runbook link; the
// cdk-nag verdicts, unsuppressed findings and suppressions with their reasons; and the
// checkov and cfn-lint skips recorded on resources. The output is deterministic (sorted,
// no time stamps, no paths of this machine), so a committed report changes exactly when
// what would be deployed changes.
//
// With -diff FILE it prints a unified diff from FILE (the committed report) to the report
// of the assembly, so a change shows what it changes; with -check as well it exits 1 when
// they differ, for a staleness check. With -out FILE it writes the report there (after
// reading FILE for -diff, so the two may be the same file); with neither -out nor -diff it
// writes the report to standard output. Errors exit 2.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and output streams; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("review", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("out", "", "write the report to this file instead of standard output")
	diffWith := fl.String("diff", "", "print a unified diff from this file (the committed report) to the new report")
	check := fl.Bool("check", false, "with -diff: exit 1 when the report differs from the -diff file")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "usage: review [-out FILE] [-diff FILE [-check]] [ASSEMBLY_DIR (default cdk.out)]")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 1 {
		fmt.Fprintf(stderr, "review: one assembly directory expected, got %d arguments\n", fl.NArg())
		return 2
	}
	if *check && *diffWith == "" {
		fmt.Fprintln(stderr, "review: -check needs -diff FILE, the report to compare with")
		return 2
	}
	dir := "cdk.out"
	if fl.NArg() == 1 {
		dir = fl.Arg(0)
	}
	a, err := loadAssembly(dir)
	if err != nil {
		fmt.Fprintf(stderr, "review: %v\n", err)
		return 2
	}
	var report bytes.Buffer
	render(&report, a)

	var old []byte
	if *diffWith != "" {
		old, err = os.ReadFile(*diffWith)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "review: %v\n", err)
			return 2
		}
	}
	// The file first: a reader of the diff who stops early (| head) must not lose it.
	switch {
	case *out != "":
		if err := os.WriteFile(*out, report.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "review: %v\n", err)
			return 2
		}
	case *diffWith == "":
		if _, err := stdout.Write(report.Bytes()); err != nil {
			return 2
		}
	}
	status := 0
	if *diffWith != "" {
		changed := unifiedDiff(stdout, *diffWith+" (committed)", *diffWith+" (from "+dir+")", string(old), report.String())
		switch {
		case changed && *check:
			fmt.Fprintf(stderr, "review: %s is stale: run `make review` and commit it\n", *diffWith)
			status = 1
		case !changed:
			fmt.Fprintf(stdout, "review: no change against %s\n", *diffWith)
		}
	}
	return status
}
