// Package gatewaytest is the test support that runs the real toolgate
// binary. It builds the binary once per test process from ./cmd/toolgate
// and runs it as "toolgate serve" on a loopback port, killable with
// SIGKILL and restartable on the same database and address: one gateway
// on a SQLite file in the test's temp dir (Start), or several nodes of one
// deployment started at once on a database the test names, such as one
// PostgreSQL database (StartTogether). Caller makes calls through such
// gateways as a caller that lives through their kills does: with an
// Idempotency-Key, re-attaching with GET /v1/calls/{id}?wait_ms= after a
// connection error, recording what it saw of each call for the checks.
package gatewaytest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testlog"
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

// Config says how to run one gateway. What is left empty gets a default.
type Config struct {
	// Name names the process in messages; "toolgate" when empty.
	Name string
	// DB is the --db value; empty: a fresh SQLite file in t.TempDir().
	DB string
	// AgentKey is the --agent-key value; "tga_test_agent_key" when empty.
	AgentKey string
	// Args are more flags, after "--log-level debug" (a later flag wins).
	Args []string
	// LogTail is how many lines of the process's log are printed when it
	// fails to start or the test failed; 0 prints all of it.
	LogTail int
}

// Gateway is a running toolgate process.
type Gateway struct {
	Name     string
	URL      string // e.g. http://127.0.0.1:41234
	AgentKey string
	DB       string // the --db value
	// DBPath is the SQLite file Start made; empty when Config.DB named
	// the database.
	DBPath string

	t       testing.TB
	bin     string
	args    []string
	logTail int
	cmd     *exec.Cmd
	stderr  *testlog.LockedBuffer
	exited  chan struct{}
}

// Start runs "toolgate serve" on 127.0.0.1:0 with a fresh database in
// t.TempDir(), a known agent key and debug logs, plus extraArgs. The process
// is killed when the test ends; its log is printed if the test failed.
func Start(t testing.TB, extraArgs ...string) *Gateway {
	t.Helper()
	return StartTogether(t, Config{Args: extraArgs})[0]
}

// StartTogether runs one "toolgate serve" per config on 127.0.0.1:0, all
// at the same time, as the nodes of one deployment start (their
// migrations must not race), and waits until every one serves. The
// processes are killed when the test ends; their logs are printed if the
// test failed.
func StartTogether(t testing.TB, configs ...Config) []*Gateway {
	t.Helper()
	bin := Binary(t)
	gateways := make([]*Gateway, len(configs))
	for i, cfg := range configs {
		g := &Gateway{Name: cfg.Name, AgentKey: cfg.AgentKey, DB: cfg.DB, t: t, bin: bin, args: cfg.Args, logTail: cfg.LogTail, stderr: &testlog.LockedBuffer{}}
		if g.Name == "" {
			g.Name = "toolgate"
		}
		if g.AgentKey == "" {
			g.AgentKey = "tga_test_agent_key"
		}
		if g.DB == "" {
			g.DBPath = filepath.Join(t.TempDir(), "toolgate.db")
			g.DB = g.DBPath
		}
		gateways[i] = g
	}
	errs := make([]error, len(gateways))
	var wg sync.WaitGroup
	for i, g := range gateways {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.launch("127.0.0.1:0") }()
	}
	wg.Wait()
	for _, g := range gateways {
		t.Cleanup(func() {
			g.Kill()
			if t.Failed() {
				t.Logf("%s log%s:\n%s", g.Name, g.tailNote(), g.LogTail(g.logTail))
			}
		})
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return gateways
}

// launch starts the process on addr and waits until it serves.
func (g *Gateway) launch(addr string) error {
	args := append([]string{"serve", "--addr", addr, "--db", g.DB, "--agent-key", g.AgentKey, "--log-level", "debug"}, g.args...)
	cmd := exec.Command(g.bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start toolgate: %v", g.Name, err)
	}
	g.cmd = cmd
	exited := make(chan struct{})
	g.exited = exited
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "toolgate serving on "); ok {
				urlc <- url
			}
		}
	}()
	go func() { cmd.Wait(); close(exited) }()
	select {
	case g.URL = <-urlc:
		return nil
	case <-exited:
		g.cmd = nil
		return fmt.Errorf("%s exited at start:\n%s", g.Name, g.LogTail(g.logTail))
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s did not start in 30s:\n%s", g.Name, g.LogTail(g.logTail))
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
		g.t.Errorf("%s did not stop within 30s of SIGTERM", g.Name)
		g.Kill()
	}
	g.cmd = nil
}

// Restart starts the gateway again on the same database and address,
// killing it first if it still runs. Its log marks the restart.
func (g *Gateway) Restart(t testing.TB) {
	t.Helper()
	g.Kill()
	g.t = t
	g.stderr.Write([]byte(fmt.Sprintf("\n----- %s restarted -----\n", g.Name)))
	// Go's listeners set SO_REUSEADDR, so the address is free again at once.
	if err := g.launch(g.Addr()); err != nil {
		t.Fatal(err)
	}
}

// Addr is the gateway's host:port.
func (g *Gateway) Addr() string { return strings.TrimPrefix(g.URL, "http://") }

// Log returns what the process has written to standard error so far.
func (g *Gateway) Log() string { return g.stderr.String() }

// LogTail returns the last n lines of Log; all of it when n is 0.
func (g *Gateway) LogTail(n int) string {
	lines := strings.Split(g.stderr.String(), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogLines returns the lines of Log that contain s.
func (g *Gateway) LogLines(s string) []string {
	var out []string
	for _, line := range strings.Split(g.stderr.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// tailNote says, after "log", how much of it a failed test is shown.
func (g *Gateway) tailNote() string {
	if g.logTail == 0 {
		return ""
	}
	return fmt.Sprintf(" (last %d lines)", g.logTail)
}
