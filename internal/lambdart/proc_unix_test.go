//go:build unix

package lambdart_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-sqs/pipeline/internal/lambdart"
)

// alive reports whether pid runs; a zombie waiting for its reaper counts as dead.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// The state follows the parenthesized command name.
		i := bytes.LastIndexByte(stat, ')')
		return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
	}
	if runtime.GOOS == "linux" {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	out := newLines()
	children := make(chan int, 1)
	// The function must start its child and say so before the timeout: 5 s leaves a loaded
	// machine room for the fork and exec.
	env := newEnv(t, lambdart.Config{Timeout: 5 * time.Second, Output: func(line []byte) {
		if pid, ok := strings.CutPrefix(string(line), "child "); ok {
			n, _ := strconv.Atoi(pid)
			children <- n
		}
		out.output(line)
	}})
	_, err := invoke(t, env, map[string]any{"action": "spawn"})
	if !errors.Is(err, lambdart.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	// The line may trail the timeout through its pipe; a minute is a hang guard.
	var child int
	select {
	case child = <-children:
	case <-time.After(time.Minute):
		t.Fatalf("the function never reported its child; output %q", out.snapshot())
	}
	// SIGKILL is delivered asynchronously to the rest of the group: wait generously.
	killed := time.Now()
	for alive(child) {
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("child %d of the timed-out function is still running %s after the timeout", child, time.Since(killed).Round(time.Millisecond))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
