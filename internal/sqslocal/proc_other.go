//go:build !unix

package sqslocal

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the server; without process groups there is no gentler portable signal.
func signalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }
