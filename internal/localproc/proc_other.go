//go:build !unix

package localproc

import "os/exec"

// SetProcessGroup does nothing where there are no process groups.
func SetProcessGroup(*exec.Cmd) {}

// SignalGroup kills the started process; without process groups there is no gentler portable
// signal, and its children may outlive it.
func SignalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }
