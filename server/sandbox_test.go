package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/sandbox/sandboxtest"
	"github.com/toolgate/toolgate/server"
)

// sandboxSpec is the NAME.json of the sandboxed tools of these tests.
const sandboxSpec = `{"description": "a sandboxed test tool", "parameters": {"type": "object"}}`

// sandboxGateway starts a gateway whose --sandbox-dir holds the test
// modules install puts there, looked at every 20 ms; it returns the
// directory too.
func sandboxGateway(t testing.TB, m *fakeModel, install func(dir string)) (*gateway, string) {
	t.Helper()
	dir := t.TempDir()
	install(dir)
	configure := func(c *serverConfig) {
		c.SandboxDir, c.SandboxCacheDir, c.SandboxPoll = dir, sandboxtest.CacheDir(), 20*time.Millisecond
	}
	if m != nil {
		return modelGateway(t, m, configure), dir
	}
	return startGateway(t, configure), dir
}

// callSandboxed calls a tool without a session through POST /v1/calls,
// waiting for its end.
func (g *gateway) callSandboxed(tool, args string) callRecord {
	g.t.Helper()
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": tool, "args": json.RawMessage(args)}, 200, &rec)
	return rec
}

// TestSandboxedToolsThroughTheGateway: the sandbox directory's modules
// are listed by GET /api/tools with source kind sandbox and called with
// POST /v1/calls (stored in the history); a module that loops ends
// timed_out while other calls go on; a failing one is a TOOL_ERROR with
// its standard error; a client may not take a sandboxed tool's name.
func TestSandboxedToolsThroughTheGateway(t *testing.T) {
	g, _ := sandboxGateway(t, nil, func(dir string) {
		sandboxtest.Install(t, dir, "echo", "shout", sandboxSpec)
		sandboxtest.Install(t, dir, "loop", "spin", sandboxSpec)
		sandboxtest.Install(t, dir, "fail", "fail", sandboxSpec)
	})
	tools := g.apiTools()
	for _, name := range []string{"shout", "spin", "fail"} {
		if tool, ok := tools[name]; !ok || tool.Source.Kind != "sandbox" || !tool.Online {
			t.Fatalf("GET /api/tools shows %s as %+v; want it online, of source sandbox", name, tool)
		}
	}

	var spin callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "spin", "args": map[string]any{}, "wait": false, "timeout_ms": 1500}, 202, &spin)
	rec := g.callSandboxed("shout", `{"text": "hello"}`)
	if rec.Status != "completed" || !strings.Contains(string(rec.Output), `"upper":"HELLO"`) {
		t.Fatalf("a sandboxed call while another spins: %+v %s", rec, rec.Output)
	}
	if spun := g.waitCall(spin.ID); spun.Status != "timed_out" {
		t.Fatalf("the spinning module's call ended %s; want timed_out", spun.Status)
	}
	if history := g.callsOf("shout"); len(history) != 1 || history[0].ID != rec.ID {
		t.Fatalf("history of shout = %+v", history)
	}

	failed := g.callSandboxed("fail", `{}`)
	if failed.Status != "failed" || failed.Error == nil || failed.Error.Code != "TOOL_ERROR" ||
		failed.Error.Message != "sandboxed tool fail exited with status 3: the printer is on fire" ||
		!strings.Contains(string(failed.Error.Details), `"stderr":"the printer is on fire\nsecond line\n"`) {
		t.Fatalf("a failing module's call: %+v", failed)
	}

	s := g.newSession("client")
	reply := g.register(s, map[string]any{"name": "shout", "description": "mine", "parameters": map[string]any{"type": "object"}})
	rejected, _ := reply["rejected"].([]any)
	if reply["registered"] != 0.0 || len(rejected) != 1 || rejected[0].(map[string]any)["code"] != "CONFLICT" ||
		rejected[0].(map[string]any)["message"] != "name is taken by a sandboxed tool" {
		t.Fatalf("a client registering a sandboxed tool's name: %v", reply)
	}
}

// TestSandboxedToolComesAndGoes: a module added while the gateway runs is
// listed and callable; removed, it is gone and a call of it is refused.
func TestSandboxedToolComesAndGoes(t *testing.T) {
	g, dir := sandboxGateway(t, nil, func(string) {})
	if _, ok := g.apiTools()["notes"]; ok {
		t.Fatal("notes listed before it was added")
	}
	sandboxtest.Install(t, dir, "scratch", "notes", sandboxSpec)
	g.waitToolOnline(t, "notes", true)
	if rec := g.callSandboxed("notes", `{"text": "kept a moment"}`); rec.Status != "completed" || !strings.Contains(string(rec.Output), `"read_back":"kept a moment"`) {
		t.Fatalf("the added module's call: %+v %s", rec, rec.Output)
	}
	for _, file := range []string{"notes.wasm", "notes.json"} {
		if err := os.Remove(filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 10*time.Second, "notes gone", func() bool {
		_, ok := g.apiTools()["notes"]
		return !ok
	})
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "notes", "args": map[string]any{}})
	if status != 404 || !strings.Contains(string(body), "TOOL_NOT_FOUND") {
		t.Fatalf("a call of a removed module: %d %s", status, body)
	}
}

// TestSandboxedToolInAgentRun: the agent loop shows the model a sandboxed
// tool with the built-in ones and runs the one it picks in the sandbox,
// the call stored with the run.
func TestSandboxedToolInAgentRun(t *testing.T) {
	m := startFakeModel(t, toolThenAnswer(callTool("c1", "shout", `{"text": "from the model"}`)))
	g, _ := sandboxGateway(t, m, func(dir string) { sandboxtest.Install(t, dir, "echo", "shout", sandboxSpec) })
	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "shout it"}, 200, &run)
	var shown []string
	for _, tool := range m.Requests()[0].Tools {
		shown = append(shown, tool.Function.Name)
	}
	if !slices.Contains(shown, "shout") || !slices.Contains(shown, "current_time") {
		t.Fatalf("tools shown to the model = %v", shown)
	}
	if run.Status != "finished" || !strings.Contains(run.Output, "FROM THE MODEL") {
		t.Fatalf("run = %+v", run)
	}
	stored := g.getRun(run.ID)
	if len(stored.Calls) != 1 || stored.Calls[0].Tool != "shout" || stored.Calls[0].Status != "completed" || stored.Calls[0].SessionID != "" {
		t.Fatalf("the run's calls = %+v", stored.Calls)
	}
}

// TestSandboxDirIsChecked: a --sandbox-dir that does not exist, or is a
// file, is refused with a message naming the flag.
func TestSandboxDirIsChecked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(t.TempDir(), "missing"), file} {
		cfg := server.DefaultConfig()
		cfg.SandboxDir = dir
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--sandbox-dir") {
			t.Errorf("sandbox dir %s: %v; want an error naming --sandbox-dir", dir, err)
		}
	}
}
