package main

import (
	"sort"
	"strings"

	"github.com/idempotent-sqs/pipeline/internal/cfn"
)

// A skip is one rule a tool was told not to apply, the reason given, and the resources it
// was skipped on.
type skip struct {
	Rule, Reason string
	IDs          []string
}

// groupSkips merges entries with the same rule and reason, sorting rules and resources.
func groupSkips(entries []skip) []skip {
	byKey := map[[2]string]*skip{}
	var out []*skip
	for _, e := range entries {
		k := [2]string{e.Rule, e.Reason}
		g, ok := byKey[k]
		if !ok {
			g = &skip{Rule: e.Rule, Reason: e.Reason}
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
			entries = append(entries, skip{show(cfn.Dig(sk, "id")), show(cfn.Dig(sk, "comment")), []string{id}})
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
			entries = append(entries, skip{show(c), "", []string{id}})
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
			entries = append(entries, skip{r.Rule, r.Reason, []string{orDefault(r.ID, r.Path)}})
		}
	}
	return groupSkips(entries)
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
			entries = append(entries, skip{rule, reason, []string{id}})
		}
	}
	return groupSkips(entries)
}
