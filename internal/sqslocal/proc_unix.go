//go:build unix && !linux

package sqslocal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in its own process group, so Stop can end it with everything
// it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
