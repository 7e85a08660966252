//go:build unix

package localproc

import (
	"os/exec"
	"syscall"
)

// SignalGroup sends SIGTERM (or SIGKILL when kill is set) to the process group of cmd, which
// SetProcessGroup created and cmd.Start started.
func SignalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// The negative pid addresses the group Setpgid created; its id is the started process's
	// own pid, so this never reaches a process the caller did not start.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
