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
	// README's breakdown: the metric and its alarm, and the counters an idle pipeline's probes publish.
	number := map[int]string{5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}[counters]
	parts := fmt.Sprintf("the custom metric `ProbeCompleted` ($%.2f) and its alarm ($%.2f), and, with no other traffic, the consumer's %s counters "+
		"that each probe's invocation publishes as 0 ($%.2f)", metricMonth.USD, alarmMonth.USD, number, float64(counters)*metricMonth.USD)
	if text := docText(t, "README.md"); !strings.Contains(text, parts) {
		t.Errorf("README.md does not say %q", parts)
	}
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
	for _, path := range []string{"CHANGELOG.md", "docs/design.md", "constructs/consumer/consumer.go"} {
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

// README's cost paragraph is the model's: the blended cost per million messages as the last
// make bench wrote it to docs/benchmarks.md (to the nearest 5 cents), DynamoDB's share of it
// (its writes: 2 a new message, 1 a duplicate), and what a provisioned table's write costs
// at the default 70% target utilization against an on-demand write (to the nearest 10%).
func TestREADMECostsAsModelled(t *testing.T) {
	m := regexp.MustCompile(`Blended \(([0-9]+)% duplicates\): standard \*\*\$([0-9.]+)\*\*`).FindStringSubmatch(docText(t, "docs/benchmarks.md"))
	if m == nil {
		t.Fatal(`docs/benchmarks.md has no "Blended (N% duplicates): standard **$X**" line: make bench writes it`)
	}
	var dupPercent, blended float64
	fmt.Sscan(m[1], &dupPercent)
	fmt.Sscan(m[2], &blended)
	f := dupPercent / 100
	dynamo := (1-f)*2*ddbWRU.USD*1e6 + f*1*ddbWRU.USD*1e6
	tenths := map[int]string{7: "seven tenths", 8: "eight tenths", 9: "nine tenths"}[int(math.Round(dynamo/blended*10))]
	provisioned := ddbWCUHour.USD / 3600 / 0.70 / ddbWRU.USD
	t.Logf("blended $%.4f per million (%v%% duplicates), DynamoDB $%.4f of it (%.0f%%); a provisioned write at 70%% is %.0f%% of an on-demand one",
		blended, dupPercent, dynamo, 100*dynamo/blended, 100*provisioned)
	text := docText(t, "README.md")
	for _, want := range []string{
		fmt.Sprintf("About **$%.2f per million messages** on an on-demand table (%.0f%% of them duplicates), and %s of that is DynamoDB",
			nearest(blended, 0.05), dupPercent, tenths),
		fmt.Sprintf("costs about %.0f%% of what on-demand writes cost", 100*nearest(provisioned, 0.1)),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
}

// capacity.md's arithmetic is the model's prices worked through: what a provisioned write
// unit and the same writes on-demand cost a month, the utilization where provisioned pays, an
// event poller's standing cost, an on-demand cap's bill, a mapping's metrics, and the record
// storage of a year-round load kept for the reference stack's record TTL (its hours as
// capacity.md says them, which test/stack holds to the synthesized stack).
func TestCapacityArithmetic(t *testing.T) {
	text := docText(t, "docs/capacity.md")
	m := regexp.MustCompile(`Records of ([0-9]+) bytes`).FindStringSubmatch(docText(t, "docs/benchmarks.md"))
	if m == nil {
		t.Fatal("docs/benchmarks.md names no record size (\"Records of N bytes\")")
	}
	var size float64
	fmt.Sscan(m[1], &size)
	h := regexp.MustCompile(`to redrive \(([0-9]+) h in the reference stack\)`).FindStringSubmatch(text)
	if h == nil {
		t.Fatal("docs/capacity.md does not say the reference stack's record TTL (\"to redrive (N h in the reference stack)\")")
	}
	var ttlHours float64
	fmt.Sscan(h[1], &ttlHours)

	const hours = secondsPerMonth / 3600
	wcuMonth := hours * ddbWCUHour.USD
	onDemandMonth := secondsPerMonth * ddbWRU.USD
	pollers := 2 * hours * eventPollerHour.USD
	capWrites := 2000.0
	capMonth := capWrites * 2.6e6 * ddbWRU.USD
	records := 1000 * ttlHours * 3600
	storage := records / 1e6 * storagePerMillionRecords(size)
	t.Logf("WCU-month $%.4f, on-demand $%.4f (%.1f%%); pollers $%.3f; cap $%.0f; %.3g records of %v bytes: $%.1f a month",
		wcuMonth, onDemandMonth, 100*wcuMonth/onDemandMonth, pollers, capMonth, records, size, storage)
	for _, want := range []string{
		fmt.Sprintf("record with the reference stack's keys is %v bytes", size),
		fmt.Sprintf("one WCU held for a month: %d × $%.5f = **$%.2f**", hours, ddbWCUHour.USD, wcuMonth),
		fmt.Sprintf("one per second all month: %.2f M × $%.3f per million = **$%.2f**", secondsPerMonth/1e6, ddbWRU.USD*1e6, onDemandMonth),
		fmt.Sprintf("more than %.0f%% used on average over the month** (%.2f ÷ %.2f)", 100*wcuMonth/onDemandMonth, wcuMonth, onDemandMonth),
		fmt.Sprintf("the table costs about %.0f%% of what on-demand writes cost", 100*ddbWCUHour.USD/3600/0.70/ddbWRU.USD),
		fmt.Sprintf("$%.5f an hour in us-east-1, so the minimum of 2 costs $%.2f a month", eventPollerHour.USD, nearest(pollers, 0.5)),
		fmt.Sprintf("about $%s a month of writes at most in us-east-1 (%s × 2.6 M seconds × $%.3f per million)",
			commas(nearest(capMonth, 100)), commas(capWrites), ddbWRU.USD*1e6),
		fmt.Sprintf("at most %s a mapping at $%.2f a metric-month (us-east-1), $%.2f a month",
			map[int]string{6: "six"}[mappingMetrics], metricMonth.USD, mappingMetrics*metricMonth.USD),
		fmt.Sprintf("At 1,000 messages/s that is about %.0f billion records, $%.0f a month", nearest(records/1e9, 1), nearest(storage, 10)),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("docs/capacity.md does not say %q", want)
		}
	}
}

// capacity.md's share of the bill is its own table's arithmetic: the writes, and the table
// with the records' storage, of the per-million total, storage included.
func TestCapacityShareOfTheBill(t *testing.T) {
	text := docText(t, "docs/capacity.md")
	row := func(part string) float64 {
		m := regexp.MustCompile(`\| ` + regexp.QuoteMeta(part) + ` \| ([0-9.]+) `).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("docs/capacity.md's per-million table has no row %q", part)
		}
		var v float64
		fmt.Sscan(m[1], &v)
		return v
	}
	writes, sqsRequests, consumer := row("DynamoDB writes, on-demand"), row("SQS requests"), row("Lambda (consumer)")
	m := regexp.MustCompile(`so about ([0-9.]+) per million messages`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`docs/capacity.md's storage row does not say "so about N per million messages"`)
	}
	var storage float64
	fmt.Sscan(m[1], &storage)
	total := writes + sqsRequests + consumer + storage
	want := fmt.Sprintf("Of the $%.2f per million messages these add up to (storage included), the table's writes are %.0f%% and the table with its storage %.0f%%",
		total, 100*writes/total, 100*(writes+storage)/total)
	t.Logf("writes %.2f, SQS %.2f, Lambda %.2f, storage %.2f: %s", writes, sqsRequests, consumer, storage, want)
	if !strings.Contains(text, want) {
		t.Errorf("docs/capacity.md does not say %q", want)
	}
}

// capacity.md's per-million table is the last make bench's measured cost (docs/benchmarks.md,
// section 2: the standard queue's new and duplicate columns, blended at its duplicate share)
// and the model's storage: the table's writes, SQS's three requests, the consumer's
// invocations and GB-s, and a month of a record's storage, over the reference stack's
// record TTL.
func TestCapacityPerMillionRows(t *testing.T) {
	bench := docText(t, "docs/benchmarks.md")
	m := regexp.MustCompile(`Blended \(([0-9]+)% duplicates\)`).FindStringSubmatch(bench)
	if m == nil {
		t.Fatal(`docs/benchmarks.md has no "Blended (N% duplicates)" line: make bench writes it`)
	}
	var dupPercent float64
	fmt.Sscan(m[1], &dupPercent)
	f := dupPercent / 100
	// blended is a row of benchmarks.md's cost table: its standard new and duplicate columns.
	blended := func(row string) float64 {
		m := regexp.MustCompile(`\| ` + regexp.QuoteMeta(row) + ` \| [^|]+ \| [^|]+ \| \$([0-9.]+) \| \$([0-9.]+) \|`).FindStringSubmatch(bench)
		if m == nil {
			t.Fatalf("docs/benchmarks.md's cost table has no row %q", row)
		}
		var fresh, dup float64
		fmt.Sscan(m[1], &fresh)
		fmt.Sscan(m[2], &dup)
		return (1-f)*fresh + f*dup
	}
	writes := blended("DynamoDB write request units")
	sqsRequests := blended("SQS SendMessageBatch (dispatcher)") + blended("SQS ReceiveMessage (event source)") + blended("SQS DeleteMessageBatch (event source)")
	consumer := blended("Lambda requests, consumer") + blended("Lambda GB-s, consumer")
	r := regexp.MustCompile(`Records of ([0-9]+) bytes`).FindStringSubmatch(bench)
	if r == nil {
		t.Fatal("docs/benchmarks.md names no record size (\"Records of N bytes\")")
	}
	var size float64
	fmt.Sscan(r[1], &size)
	text := docText(t, "docs/capacity.md")
	h := regexp.MustCompile(`to redrive \(([0-9]+) h in the reference stack\)`).FindStringSubmatch(text)
	if h == nil {
		t.Fatal("docs/capacity.md does not say the reference stack's record TTL (\"to redrive (N h in the reference stack)\")")
	}
	var ttlHours float64
	fmt.Sscan(h[1], &ttlHours)
	storage := storagePerMillionRecords(size)
	kept := storage * ttlHours / (secondsPerMonth / 3600)
	t.Logf("per million messages, %v%% duplicates: writes $%.4f, SQS $%.4f, consumer $%.4f; storage $%.4f a month, $%.4f over %v h",
		dupPercent, writes, sqsRequests, consumer, storage, kept, ttlHours)
	// "another 10% of consumer CPU moves the total by well under 1%": the GB-s are the CPU.
	cpu := 0.10 * blended("Lambda GB-s, consumer") / (writes + sqsRequests + consumer + kept)
	if !strings.Contains(text, "another 10% of consumer CPU moves the total by well under 1%") || cpu >= 0.005 {
		t.Errorf("another 10%% of consumer CPU moves the total by %.2f%%: docs/capacity.md says well under 1%%", 100*cpu)
	}
	for _, want := range []string{
		fmt.Sprintf("| DynamoDB writes, on-demand | %.2f |", writes),
		fmt.Sprintf("| SQS requests | %.2f |", sqsRequests),
		fmt.Sprintf("| Lambda (consumer) | %.2f |", consumer),
		fmt.Sprintf("| DynamoDB storage | %.2f per month kept |", storage),
		fmt.Sprintf("so about %.2f per million messages", kept),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("docs/capacity.md does not say %q", want)
		}
	}
}
