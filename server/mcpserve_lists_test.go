package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
)

// listChanges returns client options that count the host's
// notifications/tools/list_changed.
func listChanges() (*mcp.ClientOptions, chan struct{}) {
	changed := make(chan struct{}, 64)
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}, changed
}

// drain empties a channel of what came so far.
func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// A tab going away (its session closed) takes its tools off /mcp, and
// the host is told list_changed: on the GET stream of a 2025-11-25
// session, on the subscriptions/listen stream of 2026-07-28.
func TestMCPSessionGoneListChanged(t *testing.T) {
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			g := startGateway(t, nil)
			opts, changed := listChanges()
			cs := mcpConnect(t, g, "/mcp", revision, opts)
			c := connectClient(t, g, "Chrome", echoHandler, mcpEchoTool)
			name := "echo__" + shortID(c.SessionID())
			select {
			case <-changed: // the tab's tools came
			case <-time.After(10 * time.Second):
				t.Fatal("no list_changed when the session's tools came")
			}
			testwait.Until(t, 10*time.Second, "the tool listed", func() bool { return slices.Contains(mcpToolNames(t, cs), name) })
			drain(changed)

			if err := c.EndSession(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no list_changed when the session closed")
			}
			testwait.Until(t, 10*time.Second, "the tool gone", func() bool { return !slices.Contains(mcpToolNames(t, cs), name) })
		})
	}
}

// Each session's tools are listed under names unique on /mcp, sorted,
// with a description that says whose they are; the built-in tools keep
// their own names.
func TestMCPNamesAndDescriptions(t *testing.T) {
	g := startGateway(t, nil)
	a := connectClient(t, g, "Chrome", echoHandler, mcpEchoTool)
	b := connectClient(t, g, "Pixel", echoHandler, mcpEchoTool)
	cs := mcpConnect(t, g, "/mcp", mcpStateless, nil)
	nameA, nameB := "echo__"+shortID(a.SessionID()), "echo__"+shortID(b.SessionID())
	var tools []*mcp.Tool
	testwait.Until(t, 10*time.Second, "both sessions' tools listed", func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools = res.Tools
		names := mcpToolNames(t, cs)
		return slices.Contains(names, nameA) && slices.Contains(names, nameB)
	})
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
		if tool.Name == nameA && !strings.Contains(tool.Description, "Chrome 1.0 (desktop), session "+a.SessionID()) {
			t.Errorf("description of %s: %q", tool.Name, tool.Description)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("names not sorted: %v", names)
	}
	if !slices.Contains(names, "call_history") {
		t.Errorf("the built-in call_history is not listed: %v", names)
	}
}

// /mcp/sessions/{sid} lists one session's tools under their own names
// and calls them; an unknown session is 404, and the MCP session ids of
// one route are not valid on another.
func TestMCPSessionRoute(t *testing.T) {
	g := startGateway(t, nil)
	c := connectClient(t, g, "Chrome", echoHandler, mcpEchoTool)
	path := "/mcp/sessions/" + c.SessionID()
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			cs := mcpConnect(t, g, path, revision, nil)
			if names := mcpToolNames(t, cs); !slices.Equal(names, []string{"echo"}) {
				t.Errorf("tools of %s: %v", path, names)
			}
			res, err := mcpCall(t, cs, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "one"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != `{"text":"one"}` {
				t.Errorf("call: %v %+v", err, res)
			}
		})
	}

	unknown := newRawMCP(t, g.URL+"/mcp/sessions/019a0000-0000-7000-8000-000000000000")
	if resp := unknown.mustSend("POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != 404 {
		t.Errorf("unknown session: %d, want 404", resp.StatusCode)
	}

	onGateway := newRawMCP(t, g.URL+"/mcp")
	onGateway.initialize()
	elsewhere := newRawMCP(t, g.URL+path)
	elsewhere.session, elsewhere.revision = onGateway.session, onGateway.revision
	if resp := elsewhere.mustSend("POST", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != 404 {
		t.Errorf("/mcp's session id on %s: %d, want 404", path, resp.StatusCode)
	}

	// The session closes: its route goes, its MCP sessions with it.
	onSession := newRawMCP(t, g.URL+path)
	onSession.initialize()
	if err := c.EndSession(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, "the closed session's route gone", func() bool {
		resp, err := onSession.send(context.Background(), "POST", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 404
	})
	fresh := newRawMCP(t, g.URL+path)
	if resp := fresh.mustSend("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); resp.StatusCode != 404 {
		t.Errorf("initialize on a closed session's route: %d, want 404", resp.StatusCode)
	}
}
