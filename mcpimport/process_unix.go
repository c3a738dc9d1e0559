//go:build unix

package mcpimport

import (
	"os/exec"
	"syscall"
)

// shellCommand runs target as /bin/sh -c TARGET, so that quoting,
// variables and pipelines mean what they mean in a shell, in a process
// group of its own, so that the whole tree it starts (npx and its node,
// say) ends with it.
func shellCommand(target string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", target)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// killProcessGroup sends SIGKILL to the process group the command led;
// none left is fine.
func killProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// terminateProcessGroup sends SIGTERM to the process group the command
// led: the shell and the server it started alike.
func terminateProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
}
