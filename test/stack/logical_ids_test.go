package stack

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/logical-ids.txt from the synthesized reference stack")

const logicalIDsFile = "testdata/logical-ids.txt"

const logicalIDsHeader = `# The reference stack's resources as "<resource type> <logical id>", sorted.
# TestLogicalIDsAreStable compares the synthesized stack against this file: a changed logical
# id makes CloudFormation replace the resource. Rewrite it only for an intended change
# (README "Compatibility"): go test ./test/stack/ -run TestLogicalIDsAreStable -update
`

// stateful are the resource types whose replacement loses data: items, messages, logs, keys
// (and what they encrypt), subscriptions.
var stateful = map[string]bool{
	"AWS::DynamoDB::Table": true, "AWS::SQS::Queue": true, "AWS::Logs::LogGroup": true,
	"AWS::KMS::Key": true, "AWS::SNS::Topic": true, "AWS::SNS::Subscription": true,
}

// A construct id is part of every logical id below it. Renaming or moving a construct changes
// them, and CloudFormation then creates new resources and deletes the old ones: a queue's
// messages, the table's idempotency records, a log group's logs are gone. This test makes
// such a change visible in review.
func TestLogicalIDsAreStable(t *testing.T) {
	got := make([]string, 0, len(resources))
	for id, r := range resources {
		got = append(got, r.Type+" "+id)
	}
	slices.Sort(got)

	path := filepath.FromSlash(logicalIDsFile)
	if *update {
		if err := os.WriteFile(path, []byte(logicalIDsHeader+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d logical ids to %s", len(got), path)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./test/stack/ -run TestLogicalIDsAreStable -update", err)
	}
	var want []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			want = append(want, line)
		}
	}
	removed, added := difference(want, got), difference(got, want)
	if len(removed) == 0 && len(added) == 0 {
		return
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "the reference stack's logical ids differ from %s.\n", logicalIDsFile)
	for _, line := range removed {
		note := ""
		if stateful[strings.Fields(line)[0]] {
			note = "   <- stateful: replacing it loses its data"
		}
		fmt.Fprintf(&msg, "  - %s%s\n", line, note)
	}
	for _, line := range added {
		fmt.Fprintf(&msg, "  + %s\n", line)
	}
	msg.WriteString("A changed logical id makes CloudFormation replace the resource on the next deploy: it creates the new one and " +
		"deletes the old, and a stateful resource (table, queue, log group, key, topic) loses its data. Keep construct ids as " +
		"they are; if the change is intended, it needs a major version and a CHANGELOG.md entry (README \"Compatibility\"), " +
		"and you accept it with: go test ./test/stack/ -run TestLogicalIDsAreStable -update (then commit " + logicalIDsFile + ")")
	t.Fatal(msg.String())
}

// difference is the lines of a that are not in b.
func difference(a, b []string) []string {
	var out []string
	for _, line := range a {
		if !slices.Contains(b, line) {
			out = append(out, line)
		}
	}
	return out
}
