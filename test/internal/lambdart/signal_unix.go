//go:build unix

package lambdart

import (
	"os/exec"
	"syscall"
)

// killGroup sends SIGKILL to the function's process group, as Lambda ends an environment
// without a grace period when no extension is registered.
func killGroup(cmd *exec.Cmd) {
	// The negative pid addresses the group Setpgid created, whose id is the function's own
	// pid, so this never reaches a process the Env did not start.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
