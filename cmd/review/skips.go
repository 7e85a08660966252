package main

import (
	"regexp"
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// A skip is one rule a tool was told not to apply, the reason given, and the resources it
// was skipped on.
type skip struct {
	Rule, Reason string
	IDs          []string
	// Controls are the framework controls a cdk-nag compliance rule maps to (its report's
	// "Control IDs"), so a reviewer maps a suppression to their framework; "" otherwise.
	Controls string
}

// groupSkips merges entries with the same rule and reason, sorting rules and resources.
func groupSkips(entries []skip) []skip {
	byKey := map[[2]string]*skip{}
	var out []*skip
	for _, e := range entries {
		k := [2]string{e.Rule, e.Reason}
		g, ok := byKey[k]
		if !ok {
			g = &skip{Rule: e.Rule, Reason: e.Reason, Controls: e.Controls}
			byKey[k] = g
			out = append(out, g)
		}
		g.IDs = append(g.IDs, e.IDs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Reason < out[j].Reason
	})
	res := make([]skip, len(out))
	for i, g := range out {
		sort.Strings(g.IDs)
		res[i] = *g
	}
	return res
}

// checkovSkips lists the checkov checks skipped in resource Metadata
// ("checkov": {"skip": [{"id", "comment"}]}).
func checkovSkips(s *stack) []skip {
	var entries []skip
	for _, id := range s.IDs {
		for _, sk := range list(cfn.Dig(s.Resources[id].Metadata, "checkov", "skip")) {
			entries = append(entries, skip{Rule: show(cfn.Dig(sk, "id")), Reason: show(cfn.Dig(sk, "comment")), IDs: []string{id}})
		}
	}
	return groupSkips(entries)
}

// cfnLintSkips lists the cfn-lint checks ignored in resource Metadata
// ("cfn-lint": {"config": {"ignore_checks": [...]}}), which has no place for a reason.
func cfnLintSkips(s *stack) []skip {
	var entries []skip
	for _, id := range s.IDs {
		for _, c := range list(cfn.Dig(s.Resources[id].Metadata, "cfn-lint", "config", "ignore_checks")) {
			entries = append(entries, skip{Rule: show(c), IDs: []string{id}})
		}
	}
	return groupSkips(entries)
}

// nagSuppressions lists the cdk-nag report rows marked Suppressed, grouped by rule and the
// reason the report gives.
func nagSuppressions(rows []stackNagRow) []skip {
	var entries []skip
	for _, r := range rows {
		if r.Compliance == "Suppressed" {
			entries = append(entries, skip{r.Rule, r.Reason, []string{orDefault(r.ID, r.Path)}, controls(r.Info)})
		}
	}
	return groupSkips(entries)
}

// controlIDs finds the control ids in a compliance rule's info: "... - (Control IDs: AC-2, AC-3). ..."
var controlIDs = regexp.MustCompile(`\(Control IDs?: ((?:[^()]|\([^()]*\))*)\)`)

// controls returns the framework control ids a rule's info names, or "".
func controls(info string) string {
	if m := controlIDs.FindStringSubmatch(info); m != nil {
		return m[1]
	}
	return ""
}

// pack is the cdk-nag pack of a rule id: what precedes the first "-" ("NIST.800.53.R5").
func pack(rule string) string {
	p, _, _ := strings.Cut(rule, "-")
	return p
}

// nagFindings returns the rows that are neither compliant, suppressed nor not applicable:
// the findings nobody has answered.
func nagFindings(rows []stackNagRow) []stackNagRow {
	var out []stackNagRow
	for _, r := range rows {
		switch r.Compliance {
		case "Compliant", "Suppressed", "N/A", "Not Applicable":
		default:
			out = append(out, r)
		}
	}
	return out
}

// idleNagSuppressions lists the suppressions recorded in resource Metadata
// ("cdk_nag": {"rules_to_suppress": [...]}) that suppress no row of the reports: the rule
// found nothing on that resource, so the suppression only waits to hide a future finding.
func idleNagSuppressions(s *stack, rows []stackNagRow) []skip {
	used := map[[2]string]bool{}
	for _, r := range rows {
		if r.Compliance == "Suppressed" {
			used[[2]string{r.ID, r.Rule}] = true
		}
	}
	var entries []skip
	for _, id := range s.IDs {
		for _, sup := range list(cfn.Dig(s.Resources[id].Metadata, "cdk_nag", "rules_to_suppress")) {
			rule := show(cfn.Dig(sup, "id"))
			if used[[2]string{id, rule}] {
				continue
			}
			reason := show(cfn.Dig(sup, "reason"))
			if a := showAll(cfn.Dig(sup, "applies_to")); len(a) > 0 {
				reason = "[" + strings.Join(a, ", ") + "] " + reason
			}
			entries = append(entries, skip{Rule: rule, Reason: reason, IDs: []string{id}})
		}
	}
	return groupSkips(entries)
}
