package main

import (
	"fmt"
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

// The storage a million records take a month, as the CHANGELOG quotes it: the record size
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
	if text := docText(t, "CHANGELOG.md"); !strings.Contains(text, quoted) {
		t.Errorf("CHANGELOG.md does not say %q (records of %v bytes + 100 of overhead)", quoted, size)
	}
}
