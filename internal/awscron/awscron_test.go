package awscron

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// What the evaluator cannot evaluate it refuses, instead of producing wrong occurrences.
func TestParseRejectsWhatItCannotEvaluate(t *testing.T) {
	for expr, want := range map[string]string{
		"0 * * * *":           "5 fields",
		"0 12 * * MON *":      "exactly one of day-of-month",
		"0 12 ? * ? *":        "exactly one of day-of-month",
		"0 22-2 * * ? *":      "wrap-around ranges are not supported",
		"0 12 ? * FRI-MON *":  "wrap-around ranges are not supported",
		"0 12 L-3 * ? *":      "L and W only as",
		"0 12 1W,15W * ? *":   "L and W only as",
		"0 12 ? * 3#1,6#3 *":  "L and # only as",
		"0 12 ? * 2/2 *":      `no "/" in this field`,
		"60 12 * * ? *":       `"60" is not a value from 0 to 59`,
		"0 12 * 13 ? *":       `"13" is not a value from 1 to 12`,
		"0 12 * * ? 1969":     `"1969" is not a value from 1970 to 2199`,
		"0/0 12 * * ? *":      `step "0" is not a positive integer`,
		"x 12 * * ? *":        `"x" is not a value`,
		"0 12 ? * 8L *":       "L and # only as",
		"0 12 32W * ? *":      "day 32 is not from 1 to 31",
		"0 12 ? * MON#6 *":    "L and # only as",
		"0 12 ? * monday *":   `"monday" is not a value`,
		"0 12 ? jan * 2025 *": "7 fields",
	} {
		if _, err := Parse(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", expr, err, want)
		}
	}
}

// A parse error names the field, for messages that point at it.
func TestErrorNamesTheField(t *testing.T) {
	for expr, field := range map[string]string{
		"61 * * * ? *":      "minutes",
		"0 25 * * ? *":      "hours",
		"0 0 32 * ? *":      "day-of-month",
		"0 0 * 13 ? *":      "month",
		"0 0 ? * 8 *":       "day-of-week",
		"0 0 * * ? 2200":    "year",
		"* * * * * *":       "day fields",
		"0 0 ? * MON#6 *":   "day-of-week",
		"0 0 * * ?":         "fields",
		"0 0 1W,2W * ? *":   "day-of-month",
		"0 0 ? * MON-SUN *": "day-of-week",
	} {
		_, err := Parse(expr)
		var e *Error
		if !errors.As(err, &e) || e.Field != field || e.Expr != expr {
			t.Errorf("Parse(%q) = %v, want an *Error for field %q", expr, err, field)
		}
	}
}

func TestRunsOnOrAfter(t *testing.T) {
	from := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for expr, want := range map[string]bool{
		"0 * * * ? *":             true,
		"0 2 ? * MON-FRI *":       true,
		"0 0 29 2 ? *":            true,  // leap days: 2028
		"0 0 29 2 ? 2027":         false, // not a leap year
		"0 0 30 2 ? *":            false, // February 30th
		"0 0 31 4,6,9,11 ? *":     false, // 30-day months
		"0 0 31W 4 ? *":           false, // nW never crosses into another month
		"0 0 * * ? 2020":          false, // wholly in the past
		"0 0 * * ? 2020-2026":     true,  // this year still
		"0 0 24 11 ? 2026":        true,  // today
		"0 0 23 11 ? 2026":        false, // yesterday
		"0 0 ? * 2#5 2027":        true,  // a fifth Monday in 2027 (March 29th)
		"0 0 ? FEB 2#5 2027":      false, // February 2027 has four Mondays
		"0 0 ? FEB 2#5 2027-2199": true,  // 2028 has five
		"0 0 1 1 ? 2199":          true,
	} {
		c, err := Parse(expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		if got := c.RunsOnOrAfter(from); got != want {
			t.Errorf("Parse(%q).RunsOnOrAfter(%s) = %v, want %v", expr, from.Format(time.DateOnly), got, want)
		}
	}
}

// Every cron this repository writes (in Go code, the README, docs and examples) parses and
// runs: what the construct checks at synth cannot refuse what the project itself tells users.
func TestEveryCronInTheRepositoryParses(t *testing.T) {
	root := filepath.Join("..", "..")
	cronLike := regexp.MustCompile("[\x60\"']((?:[0-9A-Z*?/,#L-]+ ){5}[0-9A-Z*?/,#L-]+)[\x60\"']")
	found := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", ".cache", ".venv", "cdk.out", "cdk.out.e2e", "testdata", "profiles":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && ext != ".json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range cronLike.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The refusal tests' own examples are crons that must fail: skip this package's files,
	// and the constructs' and the local kit's refusal tests.
	n := 0
	for expr, path := range found {
		if strings.HasPrefix(path, filepath.Join(root, "internal", "awscron")) || strings.Contains(path, "validation_test.go") ||
			path == filepath.Join(root, "internal", "standin", "schedule", "schedule_test.go") {
			continue
		}
		n++
		c, err := Parse(expr)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		// A test may pin past years on purpose; what users read must still run.
		if !strings.HasSuffix(path, "_test.go") && !c.RunsOnOrAfter(time.Now()) {
			t.Errorf("%s: cron %q never runs again", path, expr)
		}
	}
	if n < 5 {
		t.Errorf("found %d crons outside the refusal tests; the README and the constructs alone have more: the pattern is broken", n)
	}
	t.Logf("%d crons in the repository parse and run", n)
}
