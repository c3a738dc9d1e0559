package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs tracks every process the harness starts, so that all of them are
// killed when it exits, on success and on failure alike. Children also get
// SIGKILL from the kernel if the harness dies (Pdeathsig), and the
// harness's own subcommands exit when their standard input closes.
type procs struct {
	mu   sync.Mutex
	live map[*exec.Cmd]struct{}
}

var children = &procs{live: map[*exec.Cmd]struct{}{}}

func (p *procs) add(c *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live[c] = struct{}{}
}

func (p *procs) remove(c *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, c)
}

// killAll sends SIGKILL to every process still tracked.
func (p *procs) killAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.live {
		if c.Process != nil {
			c.Process.Kill()
		}
	}
}

// lockedBuffer collects a child's standard error for error messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// child is a running process with its stdout read line by line.
type child struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	exited chan struct{}
}

// startChild runs path with args, keeping its stdin open (closing it asks
// the harness's subcommands to exit) and its stdout lines on a channel.
func startChild(name, path string, args ...string) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ch := &child{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 64), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = ch.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	children.add(cmd)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
		close(ch.lines)
	}()
	go func() {
		cmd.Wait()
		children.remove(cmd)
		close(ch.exited)
	}()
	return ch, nil
}

// expect waits for a stdout line starting with prefix and returns the rest.
func (c *child) expect(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				<-c.exited
				return "", fmt.Errorf("%s exited before printing %q: %v\n%s", c.name, prefix, c.cmd.ProcessState, c.stderr.tail())
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return strings.TrimSpace(rest), nil
			}
		case <-timer.C:
			return "", fmt.Errorf("%s did not print %q within %s\n%s", c.name, prefix, timeout, c.stderr.tail())
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// pid returns the process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop closes stdin, waits briefly for a clean exit, then kills.
func (c *child) stop() {
	c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		c.kill()
	}
}

// kill sends SIGKILL and waits for the process to end.
func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// selfChild re-executes this program with a subcommand.
func selfChild(name string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startChild(name, exe, args...)
}

// buildGateway builds ./cmd/toolgate into dir and returns the binary's path.
func buildGateway(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run toolgate-bench inside the toolgate module (it builds ./cmd/toolgate)")
	}
	bin := filepath.Join(dir, "toolgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/toolgate: %v\n%s", err, out)
	}
	return bin, nil
}

// gatewayProc is the real toolgate binary running as its own process.
type gatewayProc struct {
	bin, db, agentKey string
	extra             []string // more serve flags, e.g. --tls-cert and --tls-key
	url               string
	proc              *child
}

// startGatewayProc runs "toolgate serve" on a loopback address (":0" for a
// free port), with extra flags, and waits until it prints where it serves.
func startGatewayProc(ctx context.Context, bin, db, agentKey, addr string, extra ...string) (*gatewayProc, error) {
	g := &gatewayProc{bin: bin, db: db, agentKey: agentKey, extra: extra}
	return g, g.start(ctx, addr)
}

func (g *gatewayProc) start(ctx context.Context, addr string) error {
	// Thousands of sessions come from this one address at once: the
	// limit of sessions per client address is off for the measurement.
	args := append([]string{"serve", "--addr", addr, "--db", g.db,
		"--agent-key", g.agentKey, "--log-level", "warn", "--max-timeout", "15m", "--address-session-rate", "off"}, g.extra...)
	c, err := startChild("toolgate serve", g.bin, args...)
	if err != nil {
		return err
	}
	url, err := c.expect(ctx, "toolgate serving on ", 60*time.Second)
	if err != nil {
		c.kill()
		return err
	}
	g.proc, g.url = c, url
	return nil
}

// kill sends SIGKILL, as a crash would, and waits for the process to end.
func (g *gatewayProc) kill() {
	if g.proc != nil {
		g.proc.kill()
		g.proc = nil
	}
}

// addr is the host:port the gateway listens on.
func (g *gatewayProc) addr() string {
	return strings.TrimPrefix(strings.TrimPrefix(g.url, "http://"), "https://")
}

// vmRSS reads a process's resident set size in bytes from /proc.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// metricValue reads one unlabelled counter or gauge from a Prometheus
// text exposition at url, which the agent key opens.
func metricValue(ctx context.Context, client *http.Client, url, agentKey, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+agentKey)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("%s has no %s", url, name)
}

// waitHealthy polls url+"/healthz" every interval until it answers 200 and
// returns when it did.
func waitHealthy(ctx context.Context, client *http.Client, url string, interval, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/healthz", nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s/healthz not 200 within %s (last error: %v)", url, timeout, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(interval):
		}
	}
}
