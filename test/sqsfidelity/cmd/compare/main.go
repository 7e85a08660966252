// Command compare runs the sqsfidelity checks against every SQS-compatible server sqslocal
// can start, one server at a time, and prints a markdown table: one row per check plus start
// time, resident memory and install size, one column per server.
//
//	go run ./test/sqsfidelity/cmd/compare
//
// It exits 1 when a server cannot start (an install is missing), not when a check fails: the
// failures are what the table is for.
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/sqslocal"
	"github.com/idempotent-sqs/pipeline/test/sqsfidelity"
)

type column struct {
	kind    sqslocal.Kind
	cells   []string // one per check
	passed  int
	start   time.Duration
	rssMiB  float64
	install string
}

func main() {
	kinds := flag.String("kinds", joinKinds(sqslocal.Kinds), "comma-separated kinds to compare")
	flag.Parse()
	var cols []column
	for _, k := range strings.Split(*kinds, ",") {
		col, err := measure(sqslocal.Kind(k))
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			os.Exit(1)
		}
		cols = append(cols, col)
	}
	printTable(cols)
}

func measure(kind sqslocal.Kind) (column, error) {
	col := column{kind: kind}
	// The start (up to sqslocal.StartTimeout) and the checks (about 25 s, the Timed ones one
	// at a time), with room for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	srv, err := sqslocal.StartKind(ctx, kind)
	if err != nil {
		return col, err
	}
	defer srv.Stop()
	col.start = time.Since(t0)
	env := sqsfidelity.NewEnv(srv)
	col.cells = make([]string, len(sqsfidelity.Checks))
	var mu sync.Mutex
	sqsfidelity.RunChecks(ctx, env, func(i int, note string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			col.cells[i] = "**FAIL**: " + err.Error()
			return
		}
		col.passed++
		col.cells[i] = "pass: " + note
	})
	col.rssMiB = groupRSSMiB(srv.PID())
	if dir, err := sqslocal.InstallDir(kind); err == nil {
		col.install = fmt.Sprintf("%.0f MiB", float64(dirSize(dir))/(1<<20))
	}
	return col, nil
}

func printTable(cols []column) {
	row := func(name string, cell func(column) string) {
		fmt.Printf("| %s |", name)
		for _, c := range cols {
			fmt.Printf(" %s |", strings.ReplaceAll(cell(c), "|", "\\|"))
		}
		fmt.Println()
	}
	row("check", func(c column) string { return string(c.kind) })
	fmt.Print("| --- |", strings.Repeat(" --- |", len(cols)), "\n")
	for i, ch := range sqsfidelity.Checks {
		row(ch.Name, func(c column) string { return c.cells[i] })
	}
	row("**checks passed**", func(c column) string {
		return fmt.Sprintf("**%d / %d**", c.passed, len(sqsfidelity.Checks))
	})
	row("start (to first ListQueues answer)", func(c column) string { return fmt.Sprintf("%.2f s", c.start.Seconds()) })
	row("RSS after the checks (process group)", func(c column) string { return fmt.Sprintf("%.0f MiB", c.rssMiB) })
	row("install size (.cache dir)", func(c column) string { return c.install })
}

// groupRSSMiB adds up VmRSS of every process in the process group pgid (Linux /proc only; 0
// elsewhere).
func groupRSSMiB(pgid int) float64 {
	var kib int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				kib += n
			}
		}
	}
	return float64(kib) / 1024
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func joinKinds(ks []sqslocal.Kind) string {
	var s []string
	for _, k := range ks {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}
