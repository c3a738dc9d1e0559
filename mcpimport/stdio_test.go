//go:build unix

package mcpimport_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpimport"
)

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// stdioServerCommand is the command line that starts this test binary as
// an MCP server over stdio, after the shell commands before.
func stdioServerCommand(t *testing.T, before string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return before + stdioServerEnv + "=1 exec " + shellQuote(exe) + " -test.run=^$"
}

// serverPID asks the server for its process id.
func serverPID(t *testing.T, s *mcpimport.Server) int {
	t.Helper()
	out, err := call(t, s, s.Name()+"__pid", `{}`)
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	var res struct{ PID int }
	if err := json.Unmarshal(out, &res); err != nil || res.PID == 0 {
		t.Fatalf("pid output %s: %v", out, err)
	}
	return res.PID
}

// processGone reports whether pid has ended (or is a zombie waiting for a
// parent that is not this process to reap it).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name in parentheses.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// TestStdioImport: the test binary as a stdio server: listed and called,
// its stderr in the log; killed with SIGKILL, its tools go offline (calls
// fail at once with TOOL_OFFLINE) and it is started again; at Close its
// whole process group ends.
func TestStdioImport(t *testing.T) {
	dir := t.TempDir()
	bgFile := filepath.Join(dir, "background.pid")
	// A process the command leaves in the background, which must end with
	// the server's process group.
	target := stdioServerCommand(t, "sleep 600 & echo $! > "+shellQuote(bgFile)+"; ")
	var log testlog.LockedBuffer
	opts := fastOptions(log.Logger(slog.LevelDebug))
	opts.MinBackoff = 500 * time.Millisecond // long enough to see it offline
	s := startImport(t, mcpimport.Config{Name: "local", Target: target}, opts)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(log.String())
		}
	})

	if got := toolNames(s); !slices.Contains(got, "local__echo") || !slices.Contains(got, "local__slow") {
		t.Fatalf("tools %v", got)
	}
	wantOutput(t, s, "local__echo", `{"text":"over stdio"}`, `"echo: over stdio"`)
	testwait.Until(t, 5*time.Second, "the server's stderr in the log", func() bool {
		return strings.Contains(log.String(), `msg="MCP server stderr" mcp_server=local line="test MCP server ready on stdio"`)
	})

	first := serverPID(t, s)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "local offline", func() bool { return !s.Online() })
	started := time.Now()
	_, err := call(t, s, "local__echo", `{"text":"x"}`)
	wantCode(t, err, toolgate.EToolOffline)
	if d := time.Since(started); d > 200*time.Millisecond {
		t.Errorf("an offline call took %s", d)
	}
	testwait.Until(t, 10*time.Second, "local started again", s.Online)
	second := serverPID(t, s)
	if second == first {
		t.Fatalf("the same process %d after a kill", first)
	}
	wantOutput(t, s, "local__echo", `{"text":"again"}`, `"echo: again"`)

	raw, err := os.ReadFile(bgFile)
	if err != nil {
		t.Fatal(err)
	}
	background, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s.Online() {
		t.Error("online after Close")
	}
	testwait.Until(t, 5*time.Second, "the server process ended", func() bool { return processGone(second) })
	testwait.Until(t, 5*time.Second, "the background process of its group ended", func() bool { return processGone(background) })
}

// TestStdioCommandFails: a command that exits at once (or is not there)
// stays offline, is tried again with backoff, and says why in the log.
func TestStdioCommandFails(t *testing.T) {
	var log testlog.LockedBuffer
	s := mcpimport.New(mcpimport.Config{Name: "broken", Target: "echo starting >&2; exit 3"}, fastOptions(log.Logger(slog.LevelDebug)))
	s.Start()
	testwait.Until(t, 5*time.Second, "two failed attempts", func() bool {
		return strings.Count(log.String(), "MCP server unreachable") >= 2
	})
	if s.Online() {
		t.Fatal("online")
	}
	s.Close()
	if !strings.Contains(log.String(), `line=starting`) {
		t.Errorf("the command's stderr is not in the log:\n%s", log.String())
	}
}

// TestStdioHandshakeTimeout: a command that never answers the handshake
// is given up on after ConnectTimeout, its process ended, and tried
// again later.
func TestStdioHandshakeTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	var log testlog.LockedBuffer
	opts := fastOptions(log.Logger(slog.LevelDebug))
	opts.ConnectTimeout, opts.MinBackoff = 200*time.Millisecond, time.Minute
	s := mcpimport.New(mcpimport.Config{Name: "mute", Target: "echo $$ > " + shellQuote(pidFile) + "; exec sleep 600"}, opts)
	s.Start()
	defer s.Close()
	testwait.Until(t, 5*time.Second, "the handshake given up on", func() bool {
		return strings.Contains(log.String(), "MCP server unreachable")
	})
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "the mute command ended", func() bool { return processGone(pid) })
	if s.Online() {
		t.Fatal("online")
	}
}

// TestStdioResultOverLineLimit: a stdio server's result over the SDK's
// line limit (16 MiB) fails the call PAYLOAD_TOO_LARGE, saying that the
// server is restarted; it is, and its tools work again.
func TestStdioResultOverLineLimit(t *testing.T) {
	var log testlog.LockedBuffer
	s := startImport(t, mcpimport.Config{Name: "local", Target: stdioServerCommand(t, "")}, fastOptions(log.Logger(slog.LevelDebug)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(log.String())
		}
	})
	first := serverPID(t, s)
	_, err := call(t, s, "local__big", `{"bytes":"`+strconv.Itoa(mcp.DefaultMaxLineLength+1)+`"}`)
	te := wantCode(t, err, toolgate.EPayloadTooLarge)
	if !strings.Contains(te.Message, "restarts the server") {
		t.Errorf("message %q does not say the server is restarted", te.Message)
	}
	testwait.Until(t, 30*time.Second, "local started again", func() bool {
		if !s.Online() {
			return false
		}
		out, err := call(t, s, "local__echo", `{"text":"again"}`)
		return err == nil && string(out) == `"echo: again"`
	})
	if serverPID(t, s) == first {
		t.Error("the same process after a line over the limit")
	}
}

// TestStdioStderrFlood: a command that writes 200,000 stderr lines is not
// held up (its pipe is drained) and comes online, and the log gets the
// burst and the rate (100, then 10 a second) of them, not all: the rest
// are counted in a summary entry, logged at the latest when it ends.
func TestStdioStderrFlood(t *testing.T) {
	const flood = 200000
	var log testlog.LockedBuffer
	started := time.Now()
	s := startImport(t, mcpimport.Config{Name: "chatty", Target: stdioServerCommand(t, "yes flood | head -n "+strconv.Itoa(flood)+" >&2; ")}, fastOptions(log.Logger(slog.LevelDebug)))
	wantOutput(t, s, "chatty__echo", `{"text":"hi"}`, `"echo: hi"`)
	s.Close()
	elapsed := time.Since(started)
	logged := strings.Count(log.String(), `msg="MCP server stderr" mcp_server=chatty line=flood`)
	if most := 100 + int(10*elapsed.Seconds()) + 1; logged > most || logged < 100 {
		t.Fatalf("%d stderr lines logged in %s; want the burst of 100 and at most %d", logged, elapsed, most)
	}
	dropped := 0
	for _, entry := range strings.Split(log.String(), "\n") {
		if _, n, ok := strings.Cut(entry, `msg="MCP server stderr lines dropped" mcp_server=chatty dropped=`); ok {
			count, err := strconv.Atoi(strings.Fields(n)[0])
			if err != nil {
				t.Fatalf("summary %q: %v", entry, err)
			}
			dropped += count
		}
	}
	// Every line is either logged or counted (the server's own "ready"
	// line included).
	ready := strings.Count(log.String(), "test MCP server ready on stdio")
	if logged+ready+dropped != flood+1 {
		t.Errorf("%d flood lines logged + %d ready + %d counted as dropped, want %d in all", logged, ready, dropped, flood+1)
	}
}
