package main

import (
	"fmt"
	"io"
	"strings"
)

// A stackReview is everything the report says about one stack.
type stackReview struct {
	*stack
	Types      map[string]int
	Statements []statement
	Grants     []grant
	Encryption []encryption
	Retention  []retention
	Alarms     []alarm
	Topics     []topic
	NagRan     bool
	NagCounts  map[string]int
	// PackCounts are the rule verdicts per cdk-nag pack: pack -> compliance -> count.
	PackCounts map[string]map[string]int
	Findings   []stackNagRow
	Suppressed []skip
	Idle       []skip
	Checkov    []skip
	CfnLint    []skip
}

func reviewStack(a *assembly, s *stack) stackReview {
	rows := a.nagRows(s)
	r := stackReview{
		stack: s, Types: map[string]int{}, Statements: statements(s),
		Encryption: encryptions(s), Retention: retentions(s), Alarms: alarms(s),
		NagRan: a.NagReports > 0, NagCounts: map[string]int{}, PackCounts: map[string]map[string]int{}, Findings: nagFindings(rows),
		Suppressed: nagSuppressions(rows), Idle: idleNagSuppressions(s, rows),
		Checkov: checkovSkips(s), CfnLint: cfnLintSkips(s),
	}
	r.Grants = access(s, r.Statements)
	r.Topics = topics(s, r.Alarms)
	for _, id := range s.IDs {
		r.Types[s.Resources[id].Type]++
	}
	for _, row := range rows {
		r.NagCounts[row.Compliance]++
		if r.PackCounts[pack(row.Rule)] == nil {
			r.PackCounts[pack(row.Rule)] = map[string]int{}
		}
		r.PackCounts[pack(row.Rule)][row.Compliance]++
	}
	return r
}

// tally is the summary of one stack, or of all.
type tally struct {
	Stacks, Resources, Findings, Suppressions, Idle, Checkov, CfnLint int
	Statements, Wildcards, WildcardsSuppressed                        int
	Stores, Unencrypted, Alarms, Composite, Silent, NoRunbook         int
	Paging, Topics, Unsubscribed, UnheardAlarms                       int
	// Lost is what deleting the stacks deletes with its data: kind -> count.
	Lost map[string]int
}

func (r stackReview) tally() tally {
	t := tally{Stacks: 1, Resources: len(r.IDs), Findings: len(r.Findings), Statements: len(r.Statements)}
	for _, g := range r.Suppressed {
		t.Suppressions += len(g.IDs)
	}
	for _, g := range r.Idle {
		t.Idle += len(g.IDs)
	}
	for _, g := range r.Checkov {
		t.Checkov += len(g.IDs)
	}
	for _, g := range r.CfnLint {
		t.CfnLint += len(g.IDs)
	}
	for _, st := range r.Statements {
		if len(st.Wildcards) > 0 {
			t.Wildcards++
			if len(st.Suppressions) > 0 {
				t.WildcardsSuppressed++
			}
		}
	}
	t.Stores = len(r.Encryption)
	for _, e := range r.Encryption {
		if strings.HasPrefix(e.At, "none") {
			t.Unencrypted++
		}
	}
	for _, a := range r.Alarms {
		t.Alarms++
		if a.Composite {
			t.Composite++
		}
		if a.Actions == "none" || strings.HasPrefix(a.Actions, "disabled") {
			t.Silent++
		}
		if a.Runbook == "" {
			t.NoRunbook++
		}
		if a.Severity == "page" {
			t.Paging++
		}
	}
	for _, tp := range r.Topics {
		t.Topics++
		if len(tp.Subscriptions) == 0 {
			t.Unsubscribed++
			t.UnheardAlarms += tp.alarmCount()
		}
	}
	t.Lost = map[string]int{}
	for kind, ids := range deletionLosses(r.Retention) {
		t.Lost[kind] += len(ids)
	}
	return t
}

func (t *tally) add(u tally) {
	t.Stacks += u.Stacks
	t.Resources += u.Resources
	t.Findings += u.Findings
	t.Suppressions += u.Suppressions
	t.Idle += u.Idle
	t.Checkov += u.Checkov
	t.CfnLint += u.CfnLint
	t.Statements += u.Statements
	t.Wildcards += u.Wildcards
	t.WildcardsSuppressed += u.WildcardsSuppressed
	t.Stores += u.Stores
	t.Unencrypted += u.Unencrypted
	t.Alarms += u.Alarms
	t.Composite += u.Composite
	t.Silent += u.Silent
	t.NoRunbook += u.NoRunbook
	t.Paging += u.Paging
	t.Topics += u.Topics
	t.Unsubscribed += u.Unsubscribed
	t.UnheardAlarms += u.UnheardAlarms
	for k, n := range u.Lost {
		if t.Lost == nil {
			t.Lost = map[string]int{}
		}
		t.Lost[k] += n
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// bullets renders the tally as the summary's list.
func (t tally) bullets(p printer, nagRan bool) {
	nag := plural(t.Findings, "unsuppressed finding", "unsuppressed findings")
	if !nagRan {
		nag = "no report in the assembly (cdk-nag did not run)"
	}
	p("- %s in %s\n", plural(t.Resources, "resource", "resources"), plural(t.Stacks, "stack", "stacks"))
	p("- cdk-nag: %s; %s with reasons, %d idle (suppressing no finding)\n", nag,
		plural(t.Suppressions, "suppression", "suppressions"), t.Idle)
	p("- checkov: %s with reasons; cfn-lint: %s\n", plural(t.Checkov, "skip", "skips"), plural(t.CfnLint, "skip", "skips"))
	p("- IAM: %s, %s with a wildcard in an Allow, %d of them accepted by a cdk-nag suppression\n",
		plural(t.Statements, "statement", "statements"), plural(t.Wildcards, "statement", "statements"), t.WildcardsSuppressed)
	p("- %s, %d unencrypted\n", plural(t.Stores, "data store", "data stores"), t.Unencrypted)
	p("- %s (%d composite): %d without an action, %d without a runbook link, %d paging\n",
		plural(t.Alarms, "alarm", "alarms"), t.Composite, t.Silent, t.NoRunbook, t.Paging)
	if t.Unsubscribed > 0 {
		p("- **SNS topics without a subscription: %d of %d; the alarm notifications they carry (%d) reach no one** until one is added\n",
			t.Unsubscribed, t.Topics, t.UnheardAlarms)
	} else {
		p("- SNS topics: %d, each with a subscription\n", t.Topics)
	}
	if len(t.Lost) > 0 {
		var parts []string
		for _, k := range sortedKeys(t.Lost) {
			parts = append(parts, fmt.Sprintf("%s: %d", k, t.Lost[k]))
		}
		p("- deleting the stack deletes %s\n", strings.Join(parts, "; "))
	}
}

// render writes the reviewer's report of a: a summary, then one section per stack.
func render(w io.Writer, a *assembly) {
	reviews := make([]stackReview, len(a.Stacks))
	var total tally
	for i, s := range a.Stacks {
		reviews[i] = reviewStack(a, s)
		total.add(reviews[i].tally())
	}
	p := printer(func(format string, args ...any) { fmt.Fprintf(w, format, args...) })
	p("# Reviewer's report\n\n")
	p("Generated by `make review` from the synthesized templates and cdk-nag reports in `cdk.out`;\n")
	p("do not edit by hand. Resources are named by logical id, and a reference inside a value is\n")
	p("written as cdk-nag writes it: `<Id>` for a Ref, `<Id.Attr>` for a Fn::GetAtt.\n\n")
	p("## Summary\n\n")
	if len(reviews) > 1 {
		p("All %d stacks:\n\n", len(reviews))
	}
	total.bullets(p, a.NagReports > 0)
	if stray := a.strayNagRows(); len(stray) > 0 {
		p("- **cdk-nag report rows about no resource of these templates: %d, of which %d unanswered findings (listed below)**\n",
			len(stray), len(nagFindings(stray)))
	}
	p("\n")
	if stray := nagFindings(a.strayNagRows()); len(stray) > 0 {
		p("### cdk-nag findings on no resource of the templates\n\n")
		findingTable(p, stray)
	}
	approve(p)
	for _, r := range reviews {
		p("## %s\n\n", r.Name)
		if len(reviews) > 1 {
			r.tally().bullets(p, r.NagRan)
			p("\n")
		}
		r.render(p)
	}
}

type printer func(format string, args ...any)

// table writes a Markdown table of rows under header, escaping each cell, or none when
// there are no rows.
func table(p printer, none string, header []string, rows [][]string) {
	if len(rows) == 0 {
		p("%s\n\n", none)
		return
	}
	p("| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = cell(c)
		}
		p("| %s |\n", strings.Join(cells, " | "))
	}
	p("\n")
}

func (r stackReview) render(p printer) {
	p("### Resources by type\n\n")
	var rows [][]string
	for _, t := range sortedKeys(r.Types) {
		rows = append(rows, []string{t, fmt.Sprint(r.Types[t])})
	}
	table(p, "No resource.", []string{"Type", "Count"}, append(rows, []string{"**all**", fmt.Sprintf("**%d**", len(r.IDs))}))
	r.renderIAM(p)
	r.renderStores(p)
	r.renderAlarms(p)
	r.renderChecks(p)
}

// renderIAM writes every IAM statement, by kind of policy.
func (r stackReview) renderIAM(p printer) {
	var rows [][]string
	p("### IAM statements\n\n")
	p("Every statement as principal -> actions -> resources. A wildcard in an Allow is flagged with\n")
	p("the cdk-nag suppression that accepts it, if any; Deny statements are not flagged.\n\n")
	for _, k := range []struct{ kind, title string }{
		{"identity", "What each identity may do (identity policies)"},
		{"managed", "Managed policies attached"},
		{"trust", "Who may assume each role (trust policies)"},
		{"resource", "Who may use each resource (resource policies)"},
	} {
		rows = nil
		for _, st := range r.Statements {
			if st.Kind == k.kind {
				rows = append(rows, statementRow(st))
			}
		}
		if len(rows) > 0 {
			p("#### %s\n\n", k.title)
			table(p, "", []string{"Principal", "Effect", "Actions", "Resources", "Condition", "Wildcard", "Policy"}, rows)
		}
	}
}

// renderStores writes who may use each data store, its encryption and its retention.
func (r stackReview) renderStores(p printer) {
	p("### Access to data stores\n\n")
	p("Who may do what to each queue, table, topic, bucket and key: the Allow statements that name it.\n\n")
	var rows [][]string
	for _, g := range r.Grants {
		rows = append(rows, []string{g.Store, g.Principal, code(g.Actions, ", "), g.Via})
	}
	table(p, "No statement names a data store.", []string{"Data store", "Principal", "Actions", "Policy"}, rows)

	p("### Encryption at rest\n\n")
	rows = nil
	for _, e := range r.Encryption {
		at := e.At
		if strings.HasPrefix(at, "none") {
			at = "**" + at + "**"
		}
		rows = append(rows, []string{e.ID, e.Type, at, orDefault(e.Key, "-")})
	}
	table(p, "No data store.", []string{"Data store", "Type", "Encryption", "Key"}, rows)

	p("### Retention and deletion\n\n")
	p("What each stateful resource keeps, and what CloudFormation does with it when the stack deletes\n")
	p("or replaces it.\n\n")
	rows = nil
	for _, t := range r.Retention {
		rows = append(rows, []string{t.ID, t.Type, orDefault(t.Keeps, "-"), t.Deletion, t.Replace})
	}
	table(p, "No stateful resource.", []string{"Resource", "Type", "Keeps", "DeletionPolicy", "UpdateReplacePolicy"}, rows)
	if lost := deletionLosses(r.Retention); len(lost) > 0 {
		p("Deleting the stack (`cdk destroy`) deletes, with their data:\n\n")
		for _, k := range sortedKeys(lost) {
			p("- %s: %s\n", k, strings.Join(lost[k], ", "))
		}
		p("\nDrain or redrive the queues first: a message still on a source queue or in a dead-letter\n")
		p("queue when the stack is deleted is gone.\n\n")
	}
}

// renderAlarms writes every alarm and who each topic notifies.
func (r stackReview) renderAlarms(p printer) {
	p("### Alarms\n\n")
	var rows [][]string
	for _, a := range r.Alarms {
		name := a.ID
		if a.Composite {
			name += " (composite)"
		}
		if a.Name != "" {
			name += "<br>" + a.Name
		}
		actions := a.Actions
		if actions == "none" {
			actions = "**none**"
		}
		runbook := "-"
		if a.Runbook != "" {
			// docs/review.md sits next to docs/runbooks.md, so the link resolves.
			runbook = "[" + strings.TrimPrefix(a.Runbook, "runbooks.md") + "](" + a.Runbook + ")"
		}
		rows = append(rows, []string{name, orDefault(a.Severity, "-"), code(a.Metric, "<br>"), a.Condition, a.Missing, actions, runbook})
	}
	table(p, "No alarm.", []string{"Alarm", "Severity", "Evaluates", "Fires when", "Missing data", "Actions", "Runbook"}, rows)

	p("### Who is notified\n\n")
	p("Each SNS topic, who it reaches and which alarms notify it. A topic without a subscription\n")
	p("reaches no one: subscribe to it (the monitoring construct's AlarmEmails, or `aws sns subscribe`).\n\n")
	rows = nil
	for _, t := range r.Topics {
		subs := "**none: its alarms reach no one**"
		if len(t.Subscriptions) > 0 {
			subs = strings.Join(t.Subscriptions, "<br>")
		}
		var sev []string
		for _, k := range sortedKeys(t.Alarms) {
			sev = append(sev, fmt.Sprintf("%d %s", t.Alarms[k], orDefault(k, "without a severity")))
		}
		rows = append(rows, []string{t.ID, subs, orDefault(strings.Join(sev, ", "), "none")})
	}
	table(p, "No SNS topic.", []string{"Topic", "Subscriptions", "Alarms notifying it"}, rows)
}

// renderChecks writes cdk-nag's findings and suppressions, and the checkov and cfn-lint skips.
func (r stackReview) renderChecks(p printer) {
	p("### cdk-nag\n\n")
	if !r.NagRan {
		p("The assembly holds no cdk-nag report: cdk-nag did not run.\n\n")
	} else {
		var counts []string
		for _, c := range sortedKeys(r.NagCounts) {
			counts = append(counts, fmt.Sprintf("%s %d", strings.ToLower(c), r.NagCounts[c]))
		}
		p("Rule verdicts on this stack's resources: %s.\n\n", orDefault(strings.Join(counts, ", "), "none"))
		var packs [][]string
		for _, name := range sortedKeys(r.PackCounts) {
			c := r.PackCounts[name]
			unanswered := 0
			for verdict, n := range c {
				switch verdict {
				case "Compliant", "Suppressed", "N/A", "Not Applicable":
				default:
					unanswered += n
				}
			}
			packs = append(packs, []string{name, fmt.Sprint(c["Compliant"]), fmt.Sprint(c["Suppressed"]), fmt.Sprint(unanswered)})
		}
		table(p, "No pack ran.", []string{"Pack", "Compliant", "Suppressed", "Unsuppressed"}, packs)
		p("#### Unsuppressed findings\n\n")
		findingTable(p, r.Findings)
		p("#### Suppressions\n\n")
		p("By pack and rule; a compliance pack's rule lists the controls it maps to.\n\n")
		nagSkipTable(p, r.Suppressed)
		p("#### Idle suppressions\n\n")
		p("Recorded on a resource where the rule found nothing, e.g. on a role because its default policy\n")
		p("needs it; harmless today, but each would hide a new finding of its rule on that resource.\n\n")
		skipTable(p, r.Idle)
	}

	p("### checkov skips\n\n")
	skipTable(p, r.Checkov)
	p("### cfn-lint skips\n\n")
	skipTable(p, r.CfnLint)
}

func statementRow(st statement) []string {
	actions := code(st.Actions, "<br>")
	if st.NotAction {
		actions = "all but " + actions
	}
	if st.Kind == "managed" {
		actions = "all the managed policy allows"
	}
	resources := code(st.Resources, "<br>")
	if st.NotResource {
		resources = "all but " + resources
	}
	return []string{st.Principal, st.Effect, actions, resources, st.Condition, wildcardNote(st), st.Holder}
}

func findingTable(p printer, findings []stackNagRow) {
	var rows [][]string
	for _, f := range findings {
		rows = append(rows, []string{f.Rule, orDefault(f.ID, f.Path), f.Level, f.Info})
	}
	table(p, "None.", []string{"Rule", "Resource", "Level", "Finding"}, rows)
}

// nagSkipTable is skipTable with the pack and the controls of each rule.
func nagSkipTable(p printer, skips []skip) {
	var rows [][]string
	for _, s := range skips {
		rows = append(rows, []string{pack(s.Rule), s.Rule, orDefault(s.Controls, "-"), strings.Join(s.IDs, "<br>"), orDefault(s.Reason, "**no reason recorded**")})
	}
	table(p, "None.", []string{"Pack", "Rule", "Controls", "Resources", "Reason"}, rows)
}

func skipTable(p printer, skips []skip) {
	var rows [][]string
	for _, s := range skips {
		rows = append(rows, []string{s.Rule, strings.Join(s.IDs, "<br>"), orDefault(s.Reason, "**no reason recorded**")})
	}
	table(p, "None.", []string{"Rule", "Resources", "Reason"}, rows)
}

func wildcardNote(st statement) string {
	if len(st.Wildcards) == 0 {
		return "-"
	}
	note := "**wildcard** " + code(st.Wildcards, ", ")
	if len(st.Suppressions) > 0 {
		return note + " (suppressed: " + strings.Join(st.Suppressions, ", ") + ")"
	}
	if st.Kind == "identity" {
		return note + " (no suppression)"
	}
	var reasons []string
	for _, w := range st.Wildcards {
		reason, ok := resourcePolicyReasons[w]
		if !ok {
			return note + " (cdk-nag checks identity policies only; **no reason recorded**)"
		}
		reasons = append(reasons, reason)
	}
	return note + ": " + strings.Join(reasons, "; ")
}

// approve is what to read first before approving a deploy, and how a pipeline deploys what
// was approved without a terminal.
func approve(p printer) {
	p("## Before you approve a deploy\n\n")
	p("Read first, for each stack below: **IAM statements** with a wildcard and **who may use each\n")
	p("data store** (the access a deploy grants); **retention and deletion** (what a replaced resource\n")
	p("or a deleted stack loses); then the Summary's warnings above. Then read the change itself,\n")
	p("`make diff` against the account (`npx cdk diff --security-only` for the access it widens): a\n")
	p("stateful resource (table, queue, key, log group) whose logical id changes is replaced, and its\n")
	p("data is lost.\n\n")
	p("Deploying from CI: at a terminal `make deploy` stops before a change that widens access and\n")
	p("asks; without one it fails (\"terminal (TTY) is not attached\"). A pipeline approves in review\n")
	p("and deploys the assembly that was reviewed, without asking:\n\n")
	p("```sh\n")
	p("make synth                                              # review job: keep cdk.out as the artifact, with this report\n")
	p("make diff CDK_APP=cdk.out                               # what the deploy changes, for the approval\n")
	p("make deploy CDK_APP=cdk.out REQUIRE_APPROVAL=never      # deploy job, after the approval; outputs in cdk-outputs.json\n")
	p("```\n\n")
	p("`cdk bootstrap` run in the app's directory rewrites `cdk.out` without bundling (its functions'\n")
	p("assets point at the source directory): run `make synth` again before deploying it. `make\n")
	p("rehearse` runs these lines, and an update and a destroy, on a local emulator with no account.\n\n")
}
