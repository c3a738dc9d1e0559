// Package gatewaytest starts the real toolgate binary for tests: built once
// per test process from ./cmd/toolgate, run as "toolgate serve" on a
// loopback port with a SQLite file in the test's temp dir, killable with
// SIGKILL and restartable on the same database and address.
package gatewaytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds the toolgate binary once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "toolgate-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "toolgate")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/toolgate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/toolgate: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the toolgate module")
	}
	return filepath.Dir(mod), nil
}

// Gateway is a running toolgate process.
type Gateway struct {
	URL      string // e.g. http://127.0.0.1:41234
	AgentKey string
	DBPath   string

	t      testing.TB
	args   []string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

// Start runs "toolgate serve" on 127.0.0.1:0 with a fresh database in
// t.TempDir(), a known agent key and debug logs, plus extraArgs. The process
// is killed when the test ends; its log is printed if the test failed.
func Start(t testing.TB, extraArgs ...string) *Gateway {
	t.Helper()
	g := &Gateway{
		t:        t,
		AgentKey: "tga_test_agent_key",
		DBPath:   filepath.Join(t.TempDir(), "toolgate.db"),
		args:     extraArgs,
	}
	g.start("127.0.0.1:0")
	t.Cleanup(func() {
		g.Kill()
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.stderr.String())
		}
	})
	return g
}

func (g *Gateway) start(addr string) {
	g.t.Helper()
	args := append([]string{"serve", "--addr", addr, "--db", g.DBPath, "--agent-key", g.AgentKey, "--log-level", "debug"}, g.args...)
	cmd := exec.Command(Binary(g.t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		g.t.Fatal(err)
	}
	if g.stderr == nil {
		g.stderr = &lockedBuffer{}
	}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		g.t.Fatalf("start toolgate: %v", err)
	}
	g.cmd = cmd
	g.exited = make(chan struct{})
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "toolgate serving on "); ok {
				urlc <- url
			}
		}
	}()
	go func() { cmd.Wait(); close(g.exited) }()
	select {
	case g.URL = <-urlc:
	case <-g.exited:
		g.t.Fatalf("toolgate exited at start:\n%s", g.stderr.String())
	case <-time.After(30 * time.Second):
		g.t.Fatalf("toolgate did not start in 30s:\n%s", g.stderr.String())
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (g *Gateway) Kill() {
	if g.cmd == nil {
		return
	}
	g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
	g.cmd = nil
}

// Stop ends the process with SIGTERM and waits for its graceful exit.
func (g *Gateway) Stop() {
	if g.cmd == nil {
		return
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(30 * time.Second):
		g.t.Errorf("toolgate did not stop within 30s of SIGTERM")
		g.Kill()
	}
	g.cmd = nil
}

// Restart starts the gateway again on the same database and address,
// killing it first if it still runs.
func (g *Gateway) Restart(t testing.TB) {
	t.Helper()
	g.Kill()
	g.t = t
	// Go's listeners set SO_REUSEADDR, so the address is free again at once.
	g.start(strings.TrimPrefix(g.URL, "http://"))
}

// Log returns what the process has written to standard error so far.
func (g *Gateway) Log() string { return g.stderr.String() }

// lockedBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
