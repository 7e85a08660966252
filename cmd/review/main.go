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
//
//	go run ./cmd/review -compliance docs/compliance.md -hardened cdk.out.hardened [-check] [cdk.out]
//
// With -compliance FILE it writes no report: it takes FILE's figures that the cdk-nag reports
// produce (the verdicts per pack of the default and the hardened stage, the resources each
// compliance-pack rule is suppressed on) from the two assemblies and rewrites them in FILE,
// printing each one it changed; with -check it only prints them and exits 1 when any drifted.
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
	check := fl.Bool("check", false, "with -diff: exit 1 when the report differs from the -diff file; with -compliance: exit 1 when a figure drifted, changing nothing")
	complianceDoc := fl.String("compliance", "", "take this document's cdk-nag figures from the assembly and the -hardened one, instead of writing a report")
	hardenedDir := fl.String("hardened", "", "with -compliance: the hardened stage's assembly")
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
	if *complianceDoc != "" {
		return runCompliance(*complianceDoc, fl.Arg(0), *hardenedDir, *check, stdout, stderr)
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

// runCompliance is -compliance: it checks or rewrites doc's cdk-nag figures.
func runCompliance(doc, defDir, hardDir string, check bool, stdout, stderr io.Writer) int {
	if defDir == "" {
		defDir = "cdk.out"
	}
	if hardDir == "" {
		fmt.Fprintln(stderr, "review: -compliance needs -hardened DIR, the hardened stage's assembly")
		return 2
	}
	withNag := func(dir string) (*assembly, error) {
		a, err := loadAssembly(dir)
		if err == nil && a.NagReports == 0 {
			err = fmt.Errorf("no cdk-nag report in %s", dir)
		}
		return a, err
	}
	def, err := withNag(defDir)
	if err != nil {
		fmt.Fprintf(stderr, "review: %v\n", err)
		return 2
	}
	hard, err := withNag(hardDir)
	if err != nil {
		fmt.Fprintf(stderr, "review: %v\n", err)
		return 2
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		fmt.Fprintf(stderr, "review: %v\n", err)
		return 2
	}
	updated, changed, err := complianceFigures(string(b), def, hard)
	if err != nil {
		fmt.Fprintf(stderr, "review: %s: %v\n", doc, err)
		return 2
	}
	for _, c := range changed {
		fmt.Fprintf(stdout, "%s: %s\n", doc, c)
	}
	switch {
	case len(changed) == 0:
		fmt.Fprintf(stdout, "review: %s's cdk-nag figures match the reports of %s and %s\n", doc, defDir, hardDir)
	case check:
		fmt.Fprintf(stderr, "review: %d of %s's cdk-nag figures drifted from the reports: run `make review` and commit it\n", len(changed), doc)
		return 1
	default:
		if err := os.WriteFile(doc, []byte(updated), 0o644); err != nil {
			fmt.Fprintf(stderr, "review: %v\n", err)
			return 2
		}
	}
	return 0
}
