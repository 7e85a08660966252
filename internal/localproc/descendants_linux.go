package localproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Descendants lists the live processes whose parent chain leads to pid (zombies, exited but
// not yet reaped, are left out), from /proc: what a command started and may have left
// behind.
func Descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := stat(p)
		if ok && state != "Z" {
			parent[p] = ppid
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Alive reports whether pid runs (and is not a zombie).
func Alive(pid int) bool {
	state, _, ok := stat(pid)
	return ok && state != "Z"
}

// stat reads a process's state and parent from /proc/PID/stat.
func stat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid, true
}
