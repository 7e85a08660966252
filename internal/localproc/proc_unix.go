//go:build unix && !linux

package localproc

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts cmd in its own process group, so SignalGroup reaches everything it
// started. It replaces cmd.SysProcAttr; call it before cmd.Start.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
