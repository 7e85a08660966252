package sqslocal

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in its own process group, so Stop can end it with everything
// it started, and has the kernel kill it if the test binary dies without calling Stop.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
