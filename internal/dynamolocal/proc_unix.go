//go:build unix && !linux

package dynamolocal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the JVM in its own process group, so Stop can end it with everything
// it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
