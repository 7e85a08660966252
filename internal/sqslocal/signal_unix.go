//go:build unix

package sqslocal

import (
	"os/exec"
	"syscall"
)

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to the server's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// The negative pid addresses the group Setpgid created; it is the server's own pid, so this
	// never reaches a process the test did not start.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
