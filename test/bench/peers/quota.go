package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Lambda-shaped runs (-memory): Lambda allocates CPU in proportion to the memory size, one
// vCPU at 1,769 MB (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html),
// so an execution environment of 256 MB gets about 0.145 of a core. Each contender's timed
// part runs in a cgroup (v1, cpu controller) whose CFS quota is that share of every period;
// DynamoDB Local and the orchestrator (with its Runtime API) stay outside it.

// cgroupRoot is where the cgroup v1 cpu controller is mounted.
var cgroupRoot = "/sys/fs/cgroup/cpu"

const (
	cfsPeriodUS = 100_000 // the kernel's default CFS period, 100 ms
	mbPerVCPU   = 1769    // Lambda: 1,769 MB = one vCPU
)

// quotaUS is the CFS quota, per cfsPeriodUS, of a Lambda execution environment of mb MB.
func quotaUS(mb int) int {
	return int(math.Round(float64(cfsPeriodUS) * float64(mb) / mbPerVCPU))
}

// cgroup is one CPU-quota cgroup; a process joins it by writing its pid to Procs.
type cgroup struct {
	dir   string
	mb    int
	quota int // µs per cfsPeriodUS
}

// newCgroup makes a child cgroup of cgroupRoot with the CPU quota of an mb MB environment.
func newCgroup(mb int) (*cgroup, error) {
	if mb < 128 || mb > 10240 {
		return nil, fmt.Errorf("memory %d MB: Lambda's range is 128 to 10240", mb)
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("no cgroup v1 cpu controller at %s (%v)", cgroupRoot, err)
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("peers-%d-%dmb", os.Getpid(), mb))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make cgroup: %w", err)
	}
	g := &cgroup{dir: dir, mb: mb, quota: quotaUS(mb)}
	for _, w := range []struct {
		file string
		v    int
	}{{"cpu.cfs_period_us", cfsPeriodUS}, {"cpu.cfs_quota_us", g.quota}} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(strconv.Itoa(w.v)), 0o644); err != nil {
			g.remove()
			return nil, fmt.Errorf("cgroup %s: write %s=%d: %w", dir, w.file, w.v, err)
		}
	}
	return g, nil
}

// Procs is the file a process writes its pid to in order to join (all its threads move).
func (g *cgroup) Procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// join moves the process pid (every thread of it) into the cgroup.
func (g *cgroup) join(pid int) error {
	if err := os.WriteFile(g.Procs(), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("move pid %d into cgroup %s: %w", pid, g.dir, err)
	}
	return nil
}

// throttled returns the periods in which the cgroup ran out of quota, from cpu.stat.
func (g *cgroup) throttled() (periods, throttled int64) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled
}

// remove deletes the cgroup; its processes must have exited (a process that outlived its run
// is moved back to the root first).
func (g *cgroup) remove() error {
	if b, err := os.ReadFile(g.Procs()); err == nil {
		for _, pid := range strings.Fields(string(b)) {
			_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.procs"), []byte(pid), 0o644)
		}
	}
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", g.dir, err)
	}
	return nil
}

// quotaSet is the cgroups of one run of the command, one per memory size; fallback is set
// (with the reason) when they could not be made and the runs are unconfined.
type quotaSet struct {
	groups   map[int]*cgroup
	fallback string
}

// newQuotaSet makes a cgroup per memory size. When that fails it says so loudly on stderr and
// returns a set whose runs are unconfined, labelled as such in the report.
func newQuotaSet(mbs []int) *quotaSet {
	q := &quotaSet{groups: map[int]*cgroup{}}
	for _, mb := range mbs {
		g, err := newCgroup(mb)
		if err != nil {
			q.close()
			q.groups = map[int]*cgroup{}
			q.fallback = err.Error()
			fmt.Fprintf(os.Stderr, "\n!!! peers: NO CPU QUOTA: %v\n!!! peers: the Lambda-shaped runs FALL BACK TO UNCONFINED runs (every core of this machine); the report labels them so.\n\n", err)
			return q
		}
		q.groups[mb] = g
	}
	return q
}

func (q *quotaSet) close() {
	for _, g := range q.groups {
		if err := g.remove(); err != nil {
			fmt.Fprintln(os.Stderr, "peers:", err)
		}
	}
}
