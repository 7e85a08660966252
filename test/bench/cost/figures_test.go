package main

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/functions/telemetry"
)

// docText is a file's text as a reader sees it: comment markers and line breaks folded to
// single spaces.
func docText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^\s*//\s?`).ReplaceAllString(string(b), "")
	return strings.Join(strings.Fields(s), " ")
}

// The heartbeat's monthly cost, wherever the docs quote it, is the model's: on an otherwise
// idle pipeline each probe's invocation publishes the consumer's counters as 0, which a
// pipeline with traffic publishes anyway. A doc that says another figure fails here.
func TestHeartbeatCostAsQuoted(t *testing.T) {
	counters := len(telemetry.ConsumerMetrics())
	idle := nearest(heartbeatCost(5*time.Minute, counters), 0.05)
	busy := nearest(heartbeatCost(5*time.Minute, 0), 0.05)
	t.Logf("heartbeat at 5 minutes: $%.4f a month idle ($%.2f quoted), $%.4f with traffic ($%.2f quoted); %d counters",
		heartbeatCost(5*time.Minute, counters), idle, heartbeatCost(5*time.Minute, 0), busy, counters)
	quoted := fmt.Sprintf("about $%.2f a month a pipeline at 5 minutes on an otherwise idle pipeline, $%.2f on one with traffic", idle, busy)
	for _, path := range []string{"README.md", "CHANGELOG.md", "constructs/heartbeat/heartbeat.go", "constructs/pipeline/pipeline.go"} {
		text := docText(t, path)
		if !strings.Contains(text, quoted) {
			t.Errorf("%s does not say %q", path, quoted)
		}
		if strings.Contains(text, "$0.45 a month a pipeline at 5 minutes,") {
			t.Errorf("%s still quotes the heartbeat without the counters it publishes", path)
		}
	}
}

// The storage a million records take a month, as the CHANGELOG and design.md quote it: the record size
// the last make bench measured (docs/benchmarks.md, which it writes) plus DynamoDB's 100
// bytes of per-item overhead.
func TestRecordStorageAsQuoted(t *testing.T) {
	m := regexp.MustCompile(`Records of ([0-9]+) bytes`).FindStringSubmatch(docText(t, "docs/benchmarks.md"))
	if m == nil {
		t.Fatal("docs/benchmarks.md names no record size (\"Records of N bytes\")")
	}
	var size float64
	fmt.Sscan(m[1], &size)
	quoted := fmt.Sprintf("about $%.2f a month per million records kept", nearest(storagePerMillionRecords(size), 0.01))
	for _, path := range []string{"CHANGELOG.md", "docs/design.md"} {
		if text := docText(t, path); !strings.Contains(text, quoted) {
			t.Errorf("%s does not say %q (records of %v bytes + 100 of overhead)", path, quoted, size)
		}
	}
}

// capacity.md's "Quotas" bullet says what its plan table shows: how many times the minimum
// the provisioned maximum is, from which load it passes DynamoDB's table quota, what the
// largest load writes, and whether its minimum alone passes the account's quota. Each number
// is read from the table's standard rows (the model's output, `make bench`), so the prose
// cannot drift from it.
func TestQuotasAsTheTableSays(t *testing.T) {
	b, err := os.ReadFile("../../../docs/capacity.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^\| ([0-9,]+)/s \| standard \| [^|]+\| [^|]+\| [^|]+\| provisioned ([0-9,]+)-([0-9,]+) WCU @([0-9]+)%`).FindAllStringSubmatch(string(b), -1)
	if len(rows) < 2 {
		t.Fatalf("docs/capacity.md has %d standard rows with provisioned capacity, want the plan per load", len(rows))
	}
	num := func(s string) float64 {
		var v float64
		fmt.Sscan(strings.ReplaceAll(s, ",", ""), &v)
		return v
	}
	const tableQuota, accountQuota = 40000, 80000
	times := map[int]string{2: "twice", 3: "three times", 4: "four times", 5: "five times"}
	var ratio int
	from := ""
	for _, r := range rows {
		rate, lo, hi := r[1], num(r[2]), num(r[3])
		if got := int(math.Round(hi / lo)); ratio == 0 {
			ratio = got
		} else if got != ratio {
			t.Errorf("the %s/s row's maximum is %d times its minimum, the first row's %d: one rule, one figure", rate, got, ratio)
		}
		if from == "" && hi > tableQuota {
			from = rate
		}
	}
	last := rows[len(rows)-1]
	lo, target := num(last[2]), num(last[4])/100
	writes := nearest(lo*2*target, 1000) // the minimum holds half the load's writes at the target utilization
	minimum := "its minimum alone passes the 80,000 a provisioned account holds in a Region"
	if lo <= accountQuota {
		minimum = fmt.Sprintf("its minimum (%s write units) stays under the 80,000 a provisioned account holds in a Region, its maximum does not", last[2])
	}
	text := docText(t, "docs/capacity.md")
	for _, want := range []string{
		fmt.Sprintf("From %s messages a second the provisioned maximum (%s the minimum, room for a redrive) passes DynamoDB's default 40,000 write units a second per table",
			from, times[ratio]),
		fmt.Sprintf("at %s the load itself does (%s writes a second), and %s", last[1], commas(writes), minimum),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("docs/capacity.md does not say %q", want)
		}
	}
}
