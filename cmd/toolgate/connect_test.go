package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

func TestReadDeviceInfoFromProc(t *testing.T) {
	info := readDeviceInfo("testdata/connect/proc")
	if info.MemoryTotalBytes != 16318412*1024 || info.MemoryAvailBytes != 8159206*1024 {
		t.Errorf("memory %d / %d", info.MemoryTotalBytes, info.MemoryAvailBytes)
	}
	if info.UptimeSeconds != 12345.67 || info.Kernel != "6.1.0-test" {
		t.Errorf("uptime %v, kernel %q", info.UptimeSeconds, info.Kernel)
	}
	if info.OS != runtime.GOOS || info.Arch != runtime.GOARCH || info.CPUs < 1 {
		t.Errorf("os %s arch %s cpus %d", info.OS, info.Arch, info.CPUs)
	}
	// Without /proc the rest is still answered.
	if bare := readDeviceInfo(t.TempDir()); bare.MemoryTotalBytes != 0 || bare.CPUs < 1 {
		t.Errorf("without /proc: %+v", bare)
	}
}

func TestConnectFlags(t *testing.T) {
	t.Setenv("TOOLGATE_URL", "")
	if _, err := parseConnectFlags([]string{"--state", "x"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--url") {
		t.Errorf("no URL: %v", err)
	}
	if _, err := parseConnectFlags([]string{"--url", "ftp://x", "--state", "x"}, io.Discard); err == nil {
		t.Error("an ftp URL was accepted")
	}
	if _, err := parseConnectFlags([]string{"--url", "http://x", "--state", "x", "--tools-dir", filepath.Join(t.TempDir(), "missing")}, io.Discard); err == nil {
		t.Error("a missing tools folder was accepted")
	}
	t.Setenv("TOOLGATE_URL", "http://from-env:1")
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("ck_from_file\n"), 0o600)
	cfg, err := parseConnectFlags([]string{"--state", "x", "--client-key-file", keyFile}, io.Discard)
	if err != nil || cfg.URL != "http://from-env:1" || cfg.ClientKey != "ck_from_file" {
		t.Errorf("env and key file: %+v, %v", cfg, err)
	}
}

// writeTool puts an executable script and its NAME.json in dir.
func writeTool(t *testing.T, dir, file, script, spec string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(file, filepath.Ext(file))
	if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startConnect runs `toolgate connect` in-process until the test ends and
// returns the session id it stored.
func startConnect(t *testing.T, args ...string) (sessionID string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan error, 1)
	go func() { exited <- runConnect(ctx, args) }()
	stop = func() {
		cancel()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("runConnect: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("runConnect did not return within 15s of its context ending")
		}
	}
	t.Cleanup(cancel)
	statePath := args[len(args)-1]
	testwait.Until(t, 20*time.Second, "a session stored", func() bool {
		if state, err := mobile.NewFileSessionStore(statePath).Load(); err == nil && state != nil {
			sessionID = state.SessionID
			return true
		}
		select {
		case err := <-exited:
			t.Fatalf("runConnect ended before storing a session: %v", err)
		default:
		}
		return false
	})
	return sessionID, stop
}

func agentDo(t *testing.T, g *gatewaytest.Gateway, method, path string, body, out any) int {
	t.Helper()
	var reader io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		reader = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, reader)
	req.Header.Set("Authorization", "Bearer "+g.AgentKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode
}

func call(t *testing.T, g *gatewaytest.Gateway, sid, tool, args string) toolgate.Call {
	t.Helper()
	var rec toolgate.Call
	status := agentDo(t, g, http.MethodPost, "/v1/calls", map[string]any{"session_id": sid, "tool": tool, "args": json.RawMessage(args), "timeout_ms": 15000}, &rec)
	if status != http.StatusOK {
		t.Fatalf("calling %s: status %d %+v", tool, status, rec)
	}
	return rec
}

func onlineTools(t *testing.T, g *gatewaytest.Gateway, sid string) map[string]bool {
	t.Helper()
	var list struct {
		Tools []toolgate.ToolInfo `json:"tools"`
	}
	agentDo(t, g, http.MethodGet, "/api/tools?session_id="+sid, nil, &list)
	names := map[string]bool{}
	for _, tool := range list.Tools {
		if tool.Source.SessionID == sid {
			names[tool.Name] = tool.Online
		}
	}
	return names
}

func TestConnectAnswersWithTheFolderScripts(t *testing.T) {
	g := gatewaytest.Start(t)
	dir := t.TempDir()
	objectSpec := `{"description":"%s","parameters":{"type":"object","properties":{"text":{"type":"string"}}},"read_only":true}`
	writeTool(t, dir, "echo.sh", "cat", strings.Replace(objectSpec, "%s", "Echo the arguments", 1))
	writeTool(t, dir, "words", "echo 'plain words'", `{"description":"Print words"}`)
	writeTool(t, dir, "fail.sh", "echo 'no such file: notes.txt' >&2; exit 3", `{"description":"Always fails"}`)
	os.WriteFile(filepath.Join(dir, "orphan.json"), []byte(`{"description":"no executable"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a tool"), 0o644)
	statePath := filepath.Join(t.TempDir(), "state.json")
	args := []string{"--url", g.URL, "--tools-dir", dir, "--rescan", "50ms", "--state", statePath}

	sid, stop := startConnect(t, args...)
	testwait.Until(t, 15*time.Second, "the folder's tools", func() bool {
		tools := onlineTools(t, g, sid)
		return tools["device_info"] && tools["echo"] && tools["words"] && tools["fail"]
	})
	if tools := onlineTools(t, g, sid); len(tools) != 4 {
		t.Errorf("the session offers %v; orphan.json and notes.txt are not tools", tools)
	}

	if rec := call(t, g, sid, "echo", `{"text":"hi there"}`); rec.Status != toolgate.StatusCompleted || !bytes.Equal(rec.Output, []byte(`{"text":"hi there"}`)) {
		t.Errorf("echo: %s %s %+v", rec.Status, rec.Output, rec.Error)
	}
	if rec := call(t, g, sid, "words", `{}`); rec.Status != toolgate.StatusCompleted || string(rec.Output) != `"plain words"` {
		t.Errorf("words: %s %s", rec.Status, rec.Output)
	}
	rec := call(t, g, sid, "fail", `{}`)
	if rec.Status != toolgate.StatusFailed || rec.Error == nil || rec.Error.Message != "no such file: notes.txt" {
		t.Fatalf("fail: %s %+v", rec.Status, rec.Error)
	}
	var details struct {
		ExitCode int    `json:"exit_code"`
		Stderr   string `json:"stderr"`
	}
	if json.Unmarshal(rec.Error.Details, &details); details.ExitCode != 3 || !strings.Contains(details.Stderr, "no such file") {
		t.Errorf("fail details %s", rec.Error.Details)
	}
	info := call(t, g, sid, "device_info", `{}`)
	var device deviceInfo
	json.Unmarshal(info.Output, &device)
	host, _ := os.Hostname()
	if info.Status != toolgate.StatusCompleted || device.Hostname != host || device.OS != runtime.GOOS || device.CPUs < 1 {
		t.Errorf("device_info: %s %s", info.Status, info.Output)
	}
	if runtime.GOOS == "linux" && (device.MemoryTotalBytes == 0 || device.UptimeSeconds == 0) {
		t.Errorf("device_info on Linux without memory or uptime: %s", info.Output)
	}

	// A tool added to the folder is picked up, a removed one dropped,
	// without a restart.
	writeTool(t, dir, "later.sh", `echo '{"added":"later"}'`, `{"description":"Added while running"}`)
	os.Remove(filepath.Join(dir, "echo.sh"))
	testwait.Until(t, 15*time.Second, "later added and echo removed", func() bool {
		tools := onlineTools(t, g, sid)
		_, echo := tools["echo"]
		return tools["later"] && !echo
	})
	if rec := call(t, g, sid, "later", `{}`); rec.Status != toolgate.StatusCompleted || string(rec.Output) != `{"added":"later"}` {
		t.Errorf("later: %s %s", rec.Status, rec.Output)
	}

	// Stopped and started again, it resumes its session from the state file.
	stop()
	again, stopAgain := startConnect(t, args...)
	defer stopAgain()
	if again != sid {
		t.Fatalf("restarted connect is on session %s, want %s", again, sid)
	}
	testwait.Until(t, 15*time.Second, "the tools online again", func() bool { return onlineTools(t, g, sid)["later"] })
	if rec := call(t, g, sid, "words", `{}`); rec.Status != toolgate.StatusCompleted {
		t.Errorf("words after the restart: %s %+v", rec.Status, rec.Error)
	}
	if state, _ := mobile.NewFileSessionStore(statePath).Load(); state == nil || state.SessionID != sid {
		t.Errorf("after the restart the state file holds %+v, want session %s", state, sid)
	}
}

func TestConnectKillsTheScriptOfACancelledCall(t *testing.T) {
	g := gatewaytest.Start(t)
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	writeTool(t, dir, "hang.sh", "echo $$ > "+pidFile+"; exec sleep 60", `{"description":"Hangs","timeout_ms":400}`)
	sid, stop := startConnect(t, "--url", g.URL, "--tools-dir", dir, "--transport", "poll", "--state", filepath.Join(t.TempDir(), "state.json"))
	defer stop()
	testwait.Until(t, 15*time.Second, "hang offered", func() bool { return onlineTools(t, g, sid)["hang"] })
	var rec toolgate.Call
	agentDo(t, g, http.MethodPost, "/v1/calls", map[string]any{"session_id": sid, "tool": "hang", "args": map[string]any{}}, &rec)
	if rec.Status != toolgate.StatusTimedOut {
		t.Fatalf("hang: status %s, want timed_out", rec.Status)
	}
	var pid int
	testwait.Until(t, 15*time.Second, "the script's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil
	})
	testwait.Until(t, 15*time.Second, "the script killed", func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
}
