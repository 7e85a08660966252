package localproc

import (
	"os/exec"
	"syscall"
)

// SetProcessGroup puts cmd in its own process group, so SignalGroup reaches everything it
// started, and has the kernel kill it if the test binary dies without stopping it. It
// replaces cmd.SysProcAttr; call it before cmd.Start.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
