package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU accounting: on a 2-core machine the contender and DynamoDB Local share the cores, so the
// CPU each spends per record explains the throughput better than wall time alone.

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times (100 on Linux on every arch Go
// supports here).
const clockTick = 100

// procCPU is the user+system CPU time of a process so far, from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: fields start after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// findJVM returns the pid of the java process listening on port (DynamoDB Local's -port flag).
func findJVM(port string) (int, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-port" && args[i+1] == port && strings.HasSuffix(args[0], "java") {
				return strconv.Atoi(filepath.Base(d))
			}
		}
	}
	return 0, fmt.Errorf("no java process with -port %s in /proc", port)
}

// cpuMeter samples DynamoDB Local's CPU time; the zero value (no JVM found) reports 0.
type cpuMeter struct{ jvm int }

func (m cpuMeter) server() time.Duration {
	if m.jvm == 0 {
		return 0
	}
	d, _ := procCPU(m.jvm)
	return d
}
