//go:build unix

package dynamolocal

import (
	"os/exec"
	"syscall"
)

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to the JVM's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	// The negative pid addresses the group Setpgid created; it is the JVM's own pid, so this
	// never reaches a process the test did not start.
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
