package mcpserve_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpserve"
)

// 200 stateful MCP sessions without a GET stream (MCP lets a host open
// none) and a client changing its tools again and again: the SDK cannot
// deliver list_changed to any of them, and the log gets one line for it,
// with the count, not one per session per change.
func TestUndeliveredListChangedLoggedOnce(t *testing.T) {
	logs := &testlog.LockedBuffer{}
	f := newFakeEngine()
	f.setSession(sessionA, tool("t0"))
	_, url := serve(t, f, mcpserve.Options{Log: slog.New(slog.NewTextHandler(logs, nil)), ListInterval: time.Millisecond, MaxSessions: 300})
	const sessions = 200
	for i := range sessions {
		resp := post(t, url+"/mcp", initialize, nil)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("session %d: %d", i, resp.StatusCode)
		}
		post(t, url+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
	}
	host := connect(t, url+"/mcp", "2026-07-28")
	const changes = 20
	for i := 1; i <= changes; i++ {
		name := fmt.Sprintf("t%d", i)
		f.setSession(sessionA, tool(name))
		want := name + "__" + sessionA[len(sessionA)-12:]
		testwait.Until(t, 10*time.Second, "change "+name+" listed", func() bool { return slices.Contains(names(t, host), want) })
	}
	testwait.Until(t, 10*time.Second, "the undelivered notifications logged", func() bool { return len(logs.Lines("list_changed")) > 0 })
	got := logs.Lines("list_changed")
	if len(got) > 1 {
		t.Fatalf("%d log lines about list_changed for %d sessions and %d changes; want 1, counting them:\n%s",
			len(got), sessions, changes, strings.Join(got[:min(len(got), 5)], "\n"))
	}
	if !strings.Contains(got[0], "count=") || !strings.Contains(got[0], "level=INFO") {
		t.Errorf("the line: %s; want an INFO line with the count", got[0])
	}
}
