package mcpimport_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpimport"
)

// wantOffline checks that err is the TOOL_OFFLINE error of the server
// saying why.
func wantOffline(t *testing.T, err error, why string) {
	t.Helper()
	if toolgate.ErrorCode(err) != toolgate.EToolOffline || !strings.Contains(toolgate.ErrorMessage(err), why) {
		t.Fatalf("AwaitListing = %v, want TOOL_OFFLINE (%s)", err, why)
	}
}

// TestAwaitListing: AwaitListing waits for the server's first listing
// and no longer than its context; a first attempt that fails (the server
// down) or Close ends the wait at once, with TOOL_OFFLINE; once listed it
// returns nil, also while the server is offline again.
func TestAwaitListing(t *testing.T) {
	idle := mcpimport.New(mcpimport.Config{Name: "idle", Target: "http://127.0.0.1:1/mcp"}, fastOptions(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	wantOffline(t, idle.AwaitListing(ctx, "idle__x"), "not connected yet") // not started: until ctx ends
	cancel()
	idle.Close()
	wantOffline(t, idle.AwaitListing(context.Background(), "idle__x"), "shutting down") // closed: at once

	h := startHTTPMCPServer(t, newTestMCPServer(nil, newServerEvents()), &mcp.StreamableHTTPOptions{Stateless: true})
	h.stop() // the first attempt fails
	s := mcpimport.New(mcpimport.Config{Name: "late", Target: h.URL()}, fastOptions(nil))
	s.Start()
	t.Cleanup(func() { s.Close() })
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wantOffline(t, s.AwaitListing(ctx, "late__echo"), "MCP server late is offline")
	if ctx.Err() != nil {
		t.Fatal("AwaitListing waited for its context, not for the first attempt")
	}

	h.start()
	testwait.Until(t, 15*time.Second, "late online", s.Online)
	if err := s.AwaitListing(ctx, "late__echo"); err != nil {
		t.Fatalf("AwaitListing once listed = %v", err)
	}
	h.stop()
	testwait.Until(t, 15*time.Second, "late offline", func() bool { return !s.Online() })
	if err := s.AwaitListing(ctx, "late__echo"); err != nil {
		t.Fatalf("AwaitListing once listed, the server offline again = %v (its tools are known: the call is refused TOOL_OFFLINE by the tool)", err)
	}
}
