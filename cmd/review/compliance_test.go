package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A compliance document in the form of docs/compliance.md, its figures wrong on purpose
// (as after a change that adds resources), and the same with the fixture's figures.
const (
	driftedDoc = "| pack | before | default | hardened |\n|---|---|---|---|\n" +
		"| AwsSolutions | 9 / 9 / **9** | 9 / 9 / 9 | 1 / 1 / 2 |\n" +
		"| Serverless | 9 / 9 / **9** | 0 / 1 / 0 | 0 / 2 / 0 |\n" +
		"| NIST 800-53 R5 | 9 / 0 / **9** | 1 / 1 / 0 | 1 / 2 / 0 |\n\n" +
		"Both stages pass; checkov skips 99 checks on the default\nstage and 98 on the hardened one.\n\n" +
		"| rule (packs) | default stage | hardened stage | reason |\n|---|---|---|---|\n" +
		"| `LambdaDLQ` (NIST, and Serverless) | 6 | 1 (a note kept) | the reason, kept |\n"
	fixedDoc = "| pack | before | default | hardened |\n|---|---|---|---|\n" +
		"| AwsSolutions | 9 / 9 / **9** | 1 / 1 / 2 | 1 / 1 / 2 |\n" +
		"| Serverless | 9 / 9 / **9** | 0 / 1 / 0 | 0 / 2 / 0 |\n" +
		"| NIST 800-53 R5 | 9 / 0 / **9** | 1 / 1 / 0 | 1 / 2 / 0 |\n\n" +
		"Both stages pass; checkov skips %d checks on the default\nstage and %d on the hardened one.\n\n" +
		"| rule (packs) | default stage | hardened stage | reason |\n|---|---|---|---|\n" +
		"| `LambdaDLQ` (NIST, and Serverless) | 1 | 2 (a note kept) | the reason, kept |\n"
)

// -compliance finds each figure that drifted from the reports, says what the reports say,
// and rewrites exactly those, the "before" column and the prose kept; -check changes nothing
// and exits 1; a document that matches passes.
func TestComplianceFiguresCannotDrift(t *testing.T) {
	skips := fixtureCheckovSkips(t)
	hardened := hardenedFixture(t)
	doc := filepath.Join(t.TempDir(), "compliance.md")
	if err := os.WriteFile(doc, []byte(driftedDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := run([]string{"-compliance", doc, "-hardened", hardened, "-check", fixture}, &out, &errOut); code != 1 {
		t.Fatalf("-check on a drifted document: exit %d, want 1\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{
		"line 3, AwsSolutions: the reports say default 1 / 1 / 2, hardened 1 / 1 / 2",
		"line 12, LambdaDLQ: suppressed on 1 resources per pack (default) and 2 (hardened); the document says 6 and 1",
		"checkov skips " + itoa(skips) + " checks on the default stage and " + itoa(skips) + " on the hardened one; the document says 99 and 98",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-check output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "3 of "+doc+"'s cdk-nag figures drifted") {
		t.Errorf("-check stderr %q, want the count of drifted figures", errOut.String())
	}
	if b, _ := os.ReadFile(doc); string(b) != driftedDoc {
		t.Errorf("-check changed the document")
	}

	out.Reset()
	if code := run([]string{"-compliance", doc, "-hardened", hardened, fixture}, &out, &errOut); code != 0 {
		t.Fatalf("rewrite: exit %d\n%s", code, errOut.String())
	}
	want := strings.Replace(strings.Replace(fixedDoc, "%d", itoa(skips), 1), "%d", itoa(skips), 1)
	if b, _ := os.ReadFile(doc); string(b) != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", b, want)
	}
	out.Reset()
	if code := run([]string{"-compliance", doc, "-hardened", hardened, "-check", fixture}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "match the reports") {
		t.Errorf("-check after the rewrite: exit %d, %q", code, out.String())
	}
}

// A table whose form changed checks nothing, so it is an error rather than a pass.
func TestComplianceFiguresNeedTheirTables(t *testing.T) {
	a, err := loadAssembly(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := complianceFigures("no tables here", a, a); err == nil || !strings.Contains(err.Error(), "found 0 pack verdict rows and 0 rule rows") {
		t.Errorf("err %v, want the missing tables named", err)
	}
	if _, _, err := complianceFigures(strings.Replace(driftedDoc, "(NIST, and Serverless)", "(NIST, ISO)", 1), a, a); err == nil || !strings.Contains(err.Error(), `pack "ISO" of rule LambdaDLQ`) {
		t.Errorf("err %v, want the unknown pack named", err)
	}
	if _, _, err := complianceFigures(strings.Replace(driftedDoc, "| 1 / 1 / 0 | 1 / 2 / 0 |", "| **1** / 1 / 0 | 1 / 2 / 0 |", 1), a, a); err == nil || !strings.Contains(err.Error(), "whose figures this command cannot read") {
		t.Errorf("err %v, want the unreadable row named", err)
	}
	if _, _, err := complianceFigures(strings.Replace(driftedDoc, "| `LambdaDLQ` (NIST, and Serverless) |", "| `LambdaMemory` (NIST) |", 1), a, a); err == nil || !strings.Contains(err.Error(), "NIST.800.53.R5-LambdaDLQ is suppressed on 1 resources and has no row") {
		t.Errorf("err %v, want the rule without a row named", err)
	}
}

// hardenedFixture is the fixture assembly with one more LambdaDLQ suppression in NIST and in
// Serverless: a stage whose figures differ from the default's, so that a column swapped
// between the stages shows.
func hardenedFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixture, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, pack := range []string{"NIST.800.53.R5", "Serverless"} {
			if strings.HasPrefix(e.Name(), pack+"-") {
				b = append(b, []byte(`"`+pack+`-LambdaDLQ","Fixture/Other/Resource","Suppressed","no async invocations","Error","x"`+"\n")...)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fixtureCheckovSkips counts the fixture's checkov skip entries from its template, as
// checkov counts them: one per check and resource.
func fixtureCheckovSkips(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixture, "Fixture.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Metadata struct {
				Checkov struct {
					Skip []any `json:"skip"`
				} `json:"checkov"`
			} `json:"Metadata"`
		} `json:"Resources"`
	}
	if err := json.Unmarshal(b, &tmpl); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range tmpl.Resources {
		n += len(r.Metadata.Checkov.Skip)
	}
	if n == 0 {
		t.Fatal("the fixture skips no checkov check: the test would prove nothing about them")
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
