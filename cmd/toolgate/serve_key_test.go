package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
)

// startupLines starts `toolgate serve` with args and env and returns what
// it prints on stdout up to its console line.
func startupLines(t *testing.T, env []string, args ...string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "toolgate.db")
	cmd := exec.Command(gatewaytest.Binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "console: ") {
				break
			}
		}
		lines <- b.String()
		for sc.Scan() { // drain
		}
	}()
	select {
	case out := <-lines:
		return out
	case <-time.After(30 * time.Second):
		t.Fatal("no console line within 30 s")
	}
	return ""
}

// TestServePrintsOnlyAGeneratedAgentKey: the agent key and the console
// link holding it are printed at start when the gateway generated the
// key, never when the operator gave it (--agent-key, TOOLGATE_AGENT_KEY):
// printed, it would reach whatever collects the process's output.
func TestServePrintsOnlyAGeneratedAgentKey(t *testing.T) {
	const given = "tga_given0123456789abcdefABCDEF"
	for name, out := range map[string]string{
		"--agent-key":        startupLines(t, nil, "--agent-key", given),
		"TOOLGATE_AGENT_KEY": startupLines(t, []string{"TOOLGATE_AGENT_KEY=" + given}),
	} {
		if strings.Contains(out, given) || !strings.Contains(out, "not printed") || !strings.Contains(out, "/#agent_key=<agent key>") {
			t.Errorf("with the key given by %s, serve printed:\n%s", name, out)
		}
	}
	out := startupLines(t, nil)
	if !strings.Contains(out, "agent key: tga_") || !strings.Contains(out, "kept in ") || !strings.Contains(out, "/#agent_key=tga_") {
		t.Errorf("with a generated key, serve printed:\n%s", out)
	}
}
