//go:build !unix

package mcpimport

import "os/exec"

// shellCommand runs target through the system's command interpreter
// (cmd /C TARGET). Without process groups, only the command itself is
// ended when the connection closes.
func shellCommand(target string) *exec.Cmd {
	return exec.Command("cmd", "/C", target)
}

// killProcessGroup does nothing here: mcp.CommandTransport has ended the
// command itself.
func killProcessGroup(int) {}

// terminateProcessGroup does nothing here: mcp.CommandTransport ends the
// command itself.
func terminateProcessGroup(int) {}
