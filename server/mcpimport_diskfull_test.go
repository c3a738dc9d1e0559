//go:build linux

package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/smalldisk"
	"github.com/toolgate/toolgate/mcpimport"
)

// TestFullDiskDuringMCPImportCalls fills the disk of a gateway whose
// calls of an imported MCP server's tool are in flight: every call the
// gateway acknowledged ends in a final state (the answers that came back
// while the disk was full could not be stored: those calls end timed_out,
// never stuck open nor completed without a stored output), a new call is
// refused with 503 STORAGE_FULL and reaches no server, the imported tools
// stay listed, and once space returns the same call completes.
func TestFullDiskDuringMCPImportCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := smalldisk.Mount(t, "8m")
	mcpServer := startGoMCPServer(t)
	g := startGateway(t, func(c *serverConfig) {
		c.DBPath = filepath.Join(dir, "toolgate.db")
		c.MCPServers, c.MCPOptions = []mcpimport.Config{{Name: "gosdk", Target: mcpServer.URL}}, fastMCPOptions
	})
	g.waitToolOnline(t, "gosdk__echo", true)
	// Calls in flight at the server when the disk fills: they wait until
	// their deadline, which passes while it is full.
	var inFlight []string
	started := time.Now()
	for range 2 {
		var rec callRecord
		g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__slow", "args": map[string]any{}, "wait": false, "timeout_ms": 2000}, 202, &rec)
		inFlight = append(inFlight, rec.ID)
		select {
		case <-mcpServer.slowStarted:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow call did not reach the server")
		}
	}

	filler := smalldisk.Fill(t, dir)
	pad := strings.Repeat("x", 2000)
	var acked []string
	refused := false
	for range 2000 {
		status, body := g.do("POST", "/v1/calls", testAgentKey,
			map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": pad}, "wait": false, "timeout_ms": 3000})
		if status == 202 {
			var rec callRecord
			if err := json.Unmarshal(body, &rec); err != nil || rec.ID == "" {
				t.Fatalf("a created call without an id: %s", body)
			}
			acked = append(acked, rec.ID)
			continue
		}
		wantStorageFull(t, "an imported tool's call that found the disk full", status, body)
		refused = true
		break
	}
	if !refused {
		t.Fatalf("%d calls were created on a full disk", len(acked))
	}
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "refused"}})
	wantStorageFull(t, "a waited call of an imported tool", status, body)
	if tool := g.apiTools()["gosdk__echo"]; !tool.Online {
		t.Fatalf("gosdk__echo on a full disk: %+v, want listed online", tool)
	}

	// The in-flight calls' deadline passes on the full disk; their end
	// cannot be stored until space returns.
	time.Sleep(time.Until(started.Add(2500 * time.Millisecond)))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Every acknowledged call ends: completed with its output, or timed
	// out when its answer could not be stored.
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range acked {
		for {
			rec := g.waitCallNow(id)
			if rec.Status == "completed" && strings.HasPrefix(string(rec.Output), `"echo: x`) || rec.Status == "timed_out" {
				break
			}
			if rec.Status == "completed" || rec.Status == "failed" || time.Now().After(deadline) {
				t.Fatalf("call %s after the disk was freed: %+v", id, rec)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, id := range inFlight {
		if rec := g.waitCall(id); rec.Status != "timed_out" {
			t.Fatalf("a call in flight when the disk filled, its deadline passed meanwhile: %+v, want timed_out", rec)
		}
	}
	for range inFlight { // and the server is told
		select {
		case <-mcpServer.slowCancelled:
		case <-time.After(20 * time.Second):
			t.Fatal("the timed-out calls were not cancelled at the server")
		}
	}
	t.Logf("%d calls acknowledged on the filling disk, %d in flight", len(acked), len(inFlight))
	var rec callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "gosdk__echo", "args": map[string]any{"text": "after"}}, 200, &rec)
	if rec.Status != "completed" || string(rec.Output) != `"echo: after"` {
		t.Fatalf("a call after the disk was freed: %+v", rec)
	}
}
