package mobile_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// nginxEnv names the nginx binary the proxy tests run; without it they are
// skipped (make e2e installs nginx and sets it).
const nginxEnv = "NGINX_BIN"

// idleCut is how long the proxy lets a connection stay silent.
const idleCut = 3 * time.Second

// idleProxy is nginx, run from web/e2e/nginx/idle-cutting.conf.template,
// cutting upstream connections silent for idleCut.
type idleProxy struct {
	URL string
	dir string
}

// startIdleCuttingProxy runs nginx in front of upstream ("127.0.0.1:PORT")
// on a free loopback port, until the test ends.
func startIdleCuttingProxy(t *testing.T, upstream string) *idleProxy {
	t.Helper()
	return startNginx(t, "idle-cutting.conf.template", upstream, idleCut, "")
}

// startNginx runs nginx from the template of web/e2e/nginx in front of
// upstream on a free loopback port, until the test ends, filling in
// {{READ_TIMEOUT}} and {{EXTRA}}.
func startNginx(t *testing.T, templateName, upstream string, readTimeout time.Duration, extra string) *idleProxy {
	t.Helper()
	bin := os.Getenv(nginxEnv)
	if bin == "" {
		t.Skipf("needs nginx: set %s to its binary (make e2e does)", nginxEnv)
	}
	template, err := os.ReadFile(filepath.Join("..", "web", "e2e", "nginx", templateName))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	config := strings.NewReplacer(
		"{{DIR}}", dir, "{{PORT}}", addr[strings.LastIndex(addr, ":")+1:],
		"{{UPSTREAM}}", upstream, "{{READ_TIMEOUT}}", fmt.Sprintf("%ds", int(readTimeout.Seconds())),
		"{{EXTRA}}", extra,
	).Replace(string(template))
	configPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", configPath, "-e", filepath.Join(dir, "error.log"))
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	testwait.Until(t, 10*time.Second, "nginx to listen on "+addr, func() bool {
		select {
		case <-exited:
			t.Fatalf("nginx exited at start: %s", output.String())
		default:
		}
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return &idleProxy{URL: "http://" + addr, dir: dir}
}

// finished returns the requests nginx has finished, as "status path" (the
// query left out), from its access log (either template's format: the
// request time, the status and the request are its last fields).
func (p *idleProxy) finished(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(p.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// $request_time $status "METHOD /path?query HTTP/1.1"; the
		// buffering template has $msec first and $connection after the
		// status.
		line := sc.Text()
		request := strings.Index(line, `"`)
		if request < 0 {
			continue
		}
		before, after := strings.Fields(line[:request]), strings.Fields(line[request+1:])
		if len(before) < 2 || len(after) < 2 {
			continue
		}
		status := before[1]
		if len(before) >= 4 {
			status = before[2]
		}
		path, _, _ := strings.Cut(after[1], "?")
		lines = append(lines, status+" "+path)
	}
	return lines
}

// count returns how many finished requests match status (or any, when
// empty) and end with pathSuffix.
func count(lines []string, status, pathSuffix string) int {
	n := 0
	for _, l := range lines {
		s, path, _ := strings.Cut(l, " ")
		if (status == "" || s == status) && strings.HasSuffix(path, pathSuffix) {
			n++
		}
	}
	return n
}

// executionCounter is a handler that answers every call with its id and
// counts the runs per call id.
type executionCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (e *executionCounter) HandleCall(call *mobile.Call) (string, error) {
	e.mu.Lock()
	e.runs[call.ID()]++
	e.mu.Unlock()
	return fmt.Sprintf(`{"answered":%q}`, call.ID()), nil
}

// callsThroughIdleProxy connects a client through p with the given
// transport, stays idle longer than the proxy's cut twice, and after each
// idle spell makes three calls at once (as a caller does, straight to the
// gateway): each must be answered, by exactly one run of the tool.
func callsThroughIdleProxy(t *testing.T, g *gatewaytest.Gateway, p *idleProxy, transport string, configure func(*mobile.Client)) {
	t.Helper()
	client := mobile.NewClient(p.URL)
	client.SetLogger(testLogger{t})
	if err := client.SetTransport(transport); err != nil {
		t.Fatal(err)
	}
	states := newStateRecorder()
	client.SetListener(states)
	t.Cleanup(client.Close)
	if configure != nil {
		configure(client)
	}
	exec := &executionCounter{runs: map[string]int{}}
	client.SetWorkers(4)
	client.SetCallHandler(exec)
	if err := client.RegisterTool("echo", "Echo", ""); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	connected := "connected " + transport
	if transport == mobile.TransportAuto {
		connected = "connected " + mobile.TransportSSE
	}
	states.waitFor(t, connected, 10*time.Second)
	var ids []string
	for round := range 2 {
		// Silence longer than the proxy allows: what a quiet app sees.
		time.Sleep(idleCut + time.Second)
		var wg sync.WaitGroup
		calls := make([]toolgate.Call, 3)
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				calls[i] = callTool(t, g, client.SessionID(), "echo", fmt.Sprintf(`{"round":%d,"i":%d}`, round, i))
			}()
		}
		wg.Wait()
		for _, call := range calls {
			if call.Status != toolgate.StatusCompleted || !jsonEqual(call.Output, fmt.Sprintf(`{"answered":%q}`, call.ID)) {
				t.Fatalf("round %d: call %s ended %s %s", round, call.ID, call.Status, call.Output)
			}
			ids = append(ids, call.ID)
		}
	}
	exec.mu.Lock()
	defer exec.mu.Unlock()
	for _, id := range ids {
		if exec.runs[id] != 1 {
			t.Errorf("call %s ran %d times", id, exec.runs[id])
		}
	}
}

// TestBehindIdleCuttingProxy runs the SDK behind nginx cutting connections
// silent for 3 s (proxy_read_timeout 3s, proxy_buffering off):
//   - with a gateway heartbeat of 1 s the stream stays up (nginx finishes
//     no stream request) and every call is answered;
//   - with a heartbeat of 10 s nginx cuts the idle stream, the SDK
//     reconnects on its own, and every call is answered once;
//   - long-polls held 10 s are answered 504 by nginx at 3 s; the SDK polls
//     again, without spinning, and every call is answered once.
func TestBehindIdleCuttingProxy(t *testing.T) {
	t.Run("heartbeat shorter than the cut", func(t *testing.T) {
		g := gatewaytest.Start(t, "--heartbeat", "1s")
		p := startIdleCuttingProxy(t, strings.TrimPrefix(g.URL, "http://"))
		callsThroughIdleProxy(t, g, p, mobile.TransportSSE, nil)
		if cut := count(p.finished(t), "", "/events"); cut != 0 {
			t.Errorf("nginx ended %d stream request(s); the heartbeat should have kept the stream: %q", cut, p.finished(t))
		}
	})
	t.Run("heartbeat longer than the cut", func(t *testing.T) {
		g := gatewaytest.Start(t, "--heartbeat", "10s")
		p := startIdleCuttingProxy(t, strings.TrimPrefix(g.URL, "http://"))
		callsThroughIdleProxy(t, g, p, mobile.TransportAuto, nil)
		if cut := count(p.finished(t), "", "/events"); cut < 2 {
			t.Errorf("nginx ended %d stream request(s); the test meant it to cut the idle stream at least twice: %q", cut, p.finished(t))
		}
	})
	t.Run("poll held longer than the cut", func(t *testing.T) {
		g := gatewaytest.Start(t)
		p := startIdleCuttingProxy(t, strings.TrimPrefix(g.URL, "http://"))
		started := time.Now()
		callsThroughIdleProxy(t, g, p, mobile.TransportPoll, func(c *mobile.Client) { c.SetPollWaitMS(10000) })
		lines := p.finished(t)
		if cut := count(lines, "504", "/poll"); cut < 2 {
			t.Errorf("nginx answered %d poll(s) 504; the test meant it to cut held polls: %q", cut, lines)
		}
		// Each cut costs one poll and one unheld poll after it; a client
		// that spun would send many more.
		if polls, limit := count(lines, "", "/poll"), 4*int(time.Since(started)/idleCut)+8; polls > limit {
			t.Errorf("%d polls in %s (more than %d): the client spins on the cut polls: %q", polls, time.Since(started).Round(time.Second), limit, lines)
		}
	})
}

// TestBehindIdleCuttingProxyTheClientAdapts leaves a client idle behind
// nginx cutting silent connections at 3 s, for several times the cut:
//   - on the stream, with a gateway heartbeat of 10 s, nginx cuts it twice;
//     the client then asks a heartbeat of about 1.2 s (0.4 × 3 s) and nginx cuts
//     no more;
//   - on long-polls held 10 s, nginx answers two of them 504; the client
//     halves its hold each time (10 s, 5 s, 2.5 s) and the 504s stop.
func TestBehindIdleCuttingProxyTheClientAdapts(t *testing.T) {
	idleFor := 6 * idleCut
	t.Run("stream", func(t *testing.T) {
		g := gatewaytest.Start(t, "--heartbeat", "10s")
		p := startIdleCuttingProxy(t, strings.TrimPrefix(g.URL, "http://"))
		client, _ := adaptingClient(t, p, mobile.TransportSSE, 0)
		time.Sleep(idleFor)
		if cut := count(p.finished(t), "", "/events"); cut < 2 || cut > 3 {
			t.Errorf("nginx ended %d stream request(s) in %s idle; want the two that teach the heartbeat: %q", cut, idleFor, p.finished(t))
		}
		if c := connectionOf(t, g, client.SessionID()); c.HeartbeatMS == nil || *c.HeartbeatMS < 1000 || *c.HeartbeatMS > 1300 {
			t.Errorf("the gateway's record of the stream: %+v, want a heartbeat of about 1200 ms", c)
		}
		if call := callTool(t, g, client.SessionID(), "echo", `{}`); call.Status != toolgate.StatusCompleted {
			t.Fatalf("call: %+v", call)
		}
	})
	t.Run("poll", func(t *testing.T) {
		g := gatewaytest.Start(t)
		p := startIdleCuttingProxy(t, strings.TrimPrefix(g.URL, "http://"))
		client, _ := adaptingClient(t, p, mobile.TransportPoll, 10000)
		time.Sleep(idleFor)
		if cut := count(p.finished(t), "504", "/poll"); cut < 2 || cut > 3 {
			t.Errorf("nginx answered %d poll(s) 504 in %s idle; want the two that halve the hold below the cut: %q", cut, idleFor, p.finished(t))
		}
		if call := callTool(t, g, client.SessionID(), "echo", `{}`); call.Status != toolgate.StatusCompleted {
			t.Fatalf("call: %+v", call)
		}
	})
}

// adaptingClient connects an echo client through p with the transport
// (and a poll wait, when not 0).
func adaptingClient(t *testing.T, p *idleProxy, transport string, pollWaitMS int64) (*mobile.Client, *stateRecorder) {
	t.Helper()
	return connectEcho(t, p.URL, func(c *mobile.Client) {
		setTransport(t, c, transport)
		if pollWaitMS > 0 {
			c.SetPollWaitMS(pollWaitMS)
		}
	}, "connected "+transport, 10*time.Second)
}
