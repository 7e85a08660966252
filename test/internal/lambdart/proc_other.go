//go:build !unix

package lambdart

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

// killGroup kills the function; without process groups its children may outlive it.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
