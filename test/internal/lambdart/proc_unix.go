//go:build unix && !linux

package lambdart

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the function in its own process group, so that a kill reaches every
// process it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
