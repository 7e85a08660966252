package lambdart

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the function in its own process group, so that a kill reaches every
// process it started, and has the kernel kill it if the test binary dies first.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
