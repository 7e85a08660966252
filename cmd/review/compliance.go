package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The figures of docs/compliance.md that the cdk-nag reports produce: the rule verdicts per
// pack of the default and the hardened stage ("Findings per pack"), and the resources each
// compliance-pack rule is suppressed on ("suppressions, by rule"). complianceFigures checks
// them against two assemblies, or rewrites them, so that the document cannot drift from
// what the packs say. The "before" column is a measurement of an earlier commit and stays
// as written.

// packNames maps the names docs/compliance.md uses to the packs' rule prefixes.
var packNames = map[string]string{
	"AwsSolutions": "AwsSolutions", "Serverless": "Serverless", "NIST 800-53 R5": "NIST.800.53.R5",
	"PCI DSS 3.2.1": "PCI.DSS.321", "HIPAA Security": "HIPAA.Security",
	// The short forms of the by-rule table.
	"NIST": "NIST.800.53.R5", "PCI": "PCI.DSS.321", "HIPAA": "HIPAA.Security",
}

// verdicts counts an assembly's rule verdicts: pack -> compliant, suppressed, unsuppressed.
func verdicts(a *assembly) map[string][3]int {
	out := map[string][3]int{}
	for _, row := range a.Nag {
		c := out[pack(row.Rule)]
		switch row.Compliance {
		case "Compliant":
			c[0]++
		case "Suppressed":
			c[1]++
		case "N/A", "Not Applicable":
		default:
			c[2]++
		}
		out[pack(row.Rule)] = c
	}
	return out
}

// suppressedOn counts the resources each rule is suppressed on: pack -> rule name -> count.
func suppressedOn(a *assembly) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, row := range a.Nag {
		if row.Compliance != "Suppressed" {
			continue
		}
		p := pack(row.Rule)
		if out[p] == nil {
			out[p] = map[string]int{}
		}
		out[p][strings.TrimPrefix(row.Rule, p+"-")]++
	}
	return out
}

var (
	// | AwsSolutions | 36 / 10 / **0** | 36 / 10 / 0 | 49 / 11 / 0 |
	verdictRow = regexp.MustCompile(`^\| ([A-Za-z0-9 .-]+) \| ([^|]+) \| [0-9]+ / [0-9]+ / [0-9]+ \| [0-9]+ / [0-9]+ / [0-9]+ \|$`)
	// | `IAMNoInlinePolicy` (NIST, PCI, HIPAA) | 6 | 7 (+ the flow log role's) | reason |
	ruleRow = regexp.MustCompile("^\\| `([A-Za-z0-9]+)` \\(([^)]*)\\) \\| ([0-9]+)([^|]*)\\| ([0-9]+)([^|]*)\\|(.*)$")
)

// complianceFigures returns doc with its figures taken from the default and hardened
// assemblies, and what changed, one line per figure, in words.
func complianceFigures(doc string, def, hard *assembly) (string, []string, error) {
	vd, vh := verdicts(def), verdicts(hard)
	sd, sh := suppressedOn(def), suppressedOn(hard)
	var changed []string
	packsSeen, rulesSeen := map[string]bool{}, map[string]bool{}
	lines := strings.Split(doc, "\n")
	for i, line := range lines {
		vm, m := verdictRow.FindStringSubmatch(line), ruleRow.FindStringSubmatch(line)
		// A row that looks like one of the tables' but does not parse would be skipped
		// silently, its figures unchecked: it is an error instead.
		if looksLikeFigureRow(line) && vm == nil && m == nil {
			return "", nil, fmt.Errorf("line %d is a pack's or a rule's row whose figures this command cannot read: %q", i+1, line)
		}
		if vm != nil {
			p, ok := packNames[vm[1]]
			if !ok {
				return "", nil, fmt.Errorf("line %d: pack %q is not one this command knows (%s)", i+1, vm[1], line)
			}
			packsSeen[p] = true
			cell := func(c [3]int) string { return fmt.Sprintf("%d / %d / %d", c[0], c[1], c[2]) }
			want := fmt.Sprintf("| %s | %s | %s | %s |", vm[1], vm[2], cell(vd[p]), cell(vh[p]))
			if want != line {
				changed = append(changed, fmt.Sprintf("line %d, %s: the reports say default %s, hardened %s; the document says %q", i+1, vm[1], cell(vd[p]), cell(vh[p]), line))
				lines[i] = want
			}
			continue
		}
		if m == nil {
			continue
		}
		rule := m[1]
		rulesSeen[rule] = true
		var packs []string
		for _, name := range strings.Split(strings.ReplaceAll(m[2], " and ", ", "), ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			p, ok := packNames[name]
			if !ok {
				return "", nil, fmt.Errorf("line %d: pack %q of rule %s is not one this command knows", i+1, name, rule)
			}
			packs = append(packs, p)
		}
		if len(packs) == 0 {
			return "", nil, fmt.Errorf("line %d: rule %s names no pack", i+1, rule)
		}
		count := func(s map[string]map[string]int, stage string) (int, error) {
			n := -1
			for _, p := range packs {
				c := s[p][rule]
				if n >= 0 && c != n {
					return 0, fmt.Errorf("line %d: %s is suppressed on %d resources in %s and %d in another of its packs (%s stage): the table's one figure cannot say both", i+1, rule, c, p, n, stage)
				}
				n = c
			}
			return n, nil
		}
		nd, err := count(sd, "default")
		if err != nil {
			return "", nil, err
		}
		nh, err := count(sh, "hardened")
		if err != nil {
			return "", nil, err
		}
		if strconv.Itoa(nd) != m[3] || strconv.Itoa(nh) != m[5] {
			changed = append(changed, fmt.Sprintf("line %d, %s: suppressed on %d resources per pack (default) and %d (hardened); the document says %s and %s", i+1, rule, nd, nh, m[3], m[5]))
			lines[i] = fmt.Sprintf("| `%s` (%s) | %d%s| %d%s|%s", rule, m[2], nd, m[4], nh, m[6], m[7])
		}
	}
	if len(packsSeen) == 0 || len(rulesSeen) == 0 {
		return "", nil, fmt.Errorf("found %d pack verdict rows and %d rule rows: the tables' form changed, so nothing would be checked", len(packsSeen), len(rulesSeen))
	}
	if err := everyRowHeld(vd, vh, sd, sh, packsSeen, rulesSeen); err != nil {
		return "", nil, err
	}
	out, change, err := checkovFigures(strings.Join(lines, "\n"), def, hard)
	if change != "" {
		changed = append(changed, change)
	}
	return out, changed, err
}

// everyRowHeld fails when a pack of the reports has no row in the verdicts table, or a rule
// suppressed in a compliance pack (NIST, PCI, HIPAA) none in the suppressions table.
func everyRowHeld(vd, vh map[string][3]int, sd, sh map[string]map[string]int, packsSeen, rulesSeen map[string]bool) error {
	// Every pack of the reports has its row, and every rule suppressed in a compliance pack
	// (NIST, PCI, HIPAA) has one: a suppression added without its row fails here, since its
	// reason is for a person to write.
	for _, v := range []map[string][3]int{vd, vh} {
		for p := range v {
			if !packsSeen[p] {
				return fmt.Errorf("the reports hold verdicts of pack %s, which has no row in the verdicts table", p)
			}
		}
	}
	for _, s := range []map[string]map[string]int{sd, sh} {
		for _, p := range []string{"NIST.800.53.R5", "PCI.DSS.321", "HIPAA.Security"} {
			for rule, n := range s[p] {
				if !rulesSeen[rule] {
					return fmt.Errorf("%s-%s is suppressed on %d resources and has no row in the suppressions table: add one with its reason", p, rule, n)
				}
			}
		}
	}
	return nil
}

// checkovFigures holds the document's sentence of checkov skips to the assemblies' counts:
// out is the document with the sentence made true, change what was changed ("" for none).
func checkovFigures(out string, def, hard *assembly) (string, string, error) {
	m := checkovSentence.FindStringSubmatchIndex(out)
	if m == nil {
		return "", "", fmt.Errorf("no sentence %q: its form changed, so the checkov figures would not be checked", checkovSentence)
	}
	nd, nh := checkovSkipCount(def), checkovSkipCount(hard)
	if out[m[2]:m[3]] == strconv.Itoa(nd) && out[m[4]:m[5]] == strconv.Itoa(nh) {
		return out, "", nil
	}
	change := fmt.Sprintf("checkov skips %d checks on the default stage and %d on the hardened one; the document says %s and %s", nd, nh, out[m[2]:m[3]], out[m[4]:m[5]])
	return out[:m[2]] + strconv.Itoa(nd) + out[m[3]:m[4]] + strconv.Itoa(nh) + out[m[5]:], change, nil
}

// looksLikeFigureRow reports whether line starts like a row of the verdicts table (a pack's
// name) or of the suppressions table (a rule in backticks).
func looksLikeFigureRow(line string) bool {
	if strings.HasPrefix(line, "| `") {
		return true
	}
	for name := range packNames {
		if strings.HasPrefix(line, "| "+name+" |") {
			return true
		}
	}
	return false
}

// checkovSentence is the sentence that states how many checkov checks each stage skips.
var checkovSentence = regexp.MustCompile(`checkov skips ([0-9]+) checks on the default\s+stage and ([0-9]+) on the hardened one`)

// checkovSkipCount is how many checkov checks an assembly's resources skip on purpose, a
// check on each resource counted once (what checkov's summary counts as skipped).
func checkovSkipCount(a *assembly) int {
	n := 0
	for _, s := range a.Stacks {
		for _, sk := range checkovSkips(s) {
			n += len(sk.IDs)
		}
	}
	return n
}
