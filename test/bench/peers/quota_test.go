package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lambda's CPU share: 1,769 MB is one vCPU, and the quota scales with the memory size.
func TestQuotaUS(t *testing.T) {
	for mb, want := range map[int]int{128: 7236, 256: 14471, 1024: 57886, 1769: 100000, 3538: 200000} {
		if got := quotaUS(mb); got != want {
			t.Errorf("quotaUS(%d) = %d, want %d", mb, got, want)
		}
	}
}

// A machine without the cgroup v1 cpu controller falls back loudly: the set carries the
// reason, which the report prints, and no run is confined.
func TestQuotaSetFallsBackWithTheReason(t *testing.T) {
	old := cgroupRoot
	cgroupRoot = filepath.Join(t.TempDir(), "no-cpu-controller")
	defer func() { cgroupRoot = old }()
	q := newQuotaSet([]int{256})
	defer q.close()
	if len(q.groups) != 0 || !strings.Contains(q.fallback, "no cgroup v1 cpu controller at "+cgroupRoot) {
		t.Fatalf("groups %v, fallback %q; want none and the missing controller named", q.groups, q.fallback)
	}
	r := &report{opts: options{memory: []int{256}}, fallback: q.fallback}
	var sb strings.Builder
	r.writeQuota(&sb)
	if !strings.Contains(sb.String(), "**NO CPU QUOTA: these runs are UNCONFINED") {
		t.Errorf("report does not say the runs are unconfined:\n%s", sb.String())
	}
}

func TestNewCgroupRejectsMemoryOutsideLambdasRange(t *testing.T) {
	for _, mb := range []int{0, 127, 10241} {
		if _, err := newCgroup(mb); err == nil || !strings.Contains(err.Error(), "Lambda's range is 128 to 10240") {
			t.Errorf("newCgroup(%d): %v, want the range named", mb, err)
		}
	}
}

// Where the machine allows it (root, cgroup v1), the cgroup gets the quota and goes away.
func TestCgroupQuotaWritten(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu.cfs_quota_us")); err != nil {
		t.Skipf("no cgroup v1 cpu controller here (%v): TestQuotaSetFallsBackWithTheReason covers this machine", err)
	}
	g, err := newCgroup(256)
	if err != nil {
		t.Skipf("cgroup not writable here (%v): the benchmark falls back, as tested above", err)
	}
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.cfs_quota_us"))
	if err != nil || strings.TrimSpace(string(b)) != "14471" {
		t.Errorf("cpu.cfs_quota_us = %q (%v), want 14471", b, err)
	}
	if err := g.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after remove: %v", g.dir, err)
	}
}

// The cost of a million records from one run: 100 records/s in batches of 10 at 256 MB is
// 100 ms per batch, 100,000 batches per million records.
func TestQCost(t *testing.T) {
	set, err := newEventSet(10, 10, 100, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	k := qkey{"ours", 10, 256}
	r := &report{opts: options{memory: []int{256}}, sets: map[int]*eventSet{10: set},
		quota: map[qkey][]result{k: {{Records: 100, Seconds: 1}}},
		calls: map[key]callCounts{{"ours", 10}: {PerNew: map[string]int{"UpdateItem": 2}, PerDup: map[string]int{"UpdateItem (condition failed)": 1}}}}
	c, ok := r.qcost(k)
	if !ok {
		t.Fatal("no cost")
	}
	want := cost{billedMS: 100, lambda: 1e5 * 0.1 * 0.25 * priceGBSecond, requests: 1e5 * priceRequest,
		writesPerRecord: 1.9, ddb: 1.9 * 0.625, sqs: 0.2 * 0.40}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if c.billedMS != want.billedMS || !near(c.lambda, want.lambda) || !near(c.requests, want.requests) ||
		!near(c.writesPerRecord, want.writesPerRecord) || !near(c.ddb, want.ddb) || !near(c.sqs, want.sqs) || !c.writesMeasured {
		t.Errorf("cost %+v, want %+v (writes measured)", c, want)
	}
}
