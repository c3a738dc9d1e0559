package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mobile"
)

// waitTool is a client tool whose calls wait to be cancelled: each call is
// handed to the test, which sees how it ends.
func waitTool(t *testing.T, g *gateway) (c *mobile.Client, calls chan *mobile.Call) {
	calls = make(chan *mobile.Call, 4)
	spec := toolSpec{name: "wait", description: "Waits until cancelled", parameters: `{"type":"object"}`}
	c = connectClient(t, g, "Chrome", func(call *mobile.Call) (string, error) {
		calls <- call
		call.WaitCancelled(20_000)
		return `"not cancelled"`, nil
	}, spec)
	return c, calls
}

// receivedCall returns the call the client received.
func receivedCall(t *testing.T, calls chan *mobile.Call) *mobile.Call {
	t.Helper()
	select {
	case call := <-calls:
		return call
	case <-time.After(10 * time.Second):
		t.Fatal("the client received no call")
		return nil
	}
}

// checkCancelled checks that a call ended cancelled and that its client
// was told so (call_cancelled, reason "cancelled").
func checkCancelled(t *testing.T, g *gateway, call *mobile.Call) {
	t.Helper()
	testwait.Until(t, 10*time.Second, "the call cancelled", func() bool {
		return mcpGetCall(t, g, call.ID()).Status == "cancelled"
	})
	if !call.WaitCancelled(10_000) || call.CancelReason() != "cancelled" {
		t.Errorf("the client's call: cancelled %v, reason %q; want call_cancelled with reason cancelled", call.Cancelled(), call.CancelReason())
	}
}

// A host that gives up on a tools/call (the SDK client's context ends:
// on 2026-07-28 the POST ends; on 2025-11-25 the client sends
// notifications/cancelled) cancels the toolgate call, and the client
// session gets call_cancelled.
func TestMCPCancelByHostContext(t *testing.T) {
	g := startGateway(t, nil)
	c, calls := waitTool(t, g)
	name := "wait__" + shortID(c.SessionID())
	for _, revision := range []string{mcpStateless, mcpLegacy} {
		t.Run(revision, func(t *testing.T) {
			cs := mcpConnect(t, g, "/mcp", revision, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				done <- err
			}()
			call := receivedCall(t, calls)
			cancel()
			if err := <-done; err == nil {
				t.Error("the cancelled request returned no error")
			}
			checkCancelled(t, g, call)
		})
	}
}

// On a 2025-11-25 session, notifications/cancelled alone (the POST's
// stream still open) cancels the call, and the request gets no response
// (MCP: a cancelled request is not answered): its stream ends without one.
func TestMCPCancelByNotification(t *testing.T) {
	g := startGateway(t, nil)
	c, calls := waitTool(t, g)
	raw := newRawMCP(t, g.URL+"/mcp")
	raw.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replies := make(chan []string, 1)
	go func() {
		resp, err := raw.send(ctx, "POST", callBody(7, "wait__"+shortID(c.SessionID()), `{}`), nil)
		if err != nil {
			replies <- []string{"error: " + err.Error()}
			return
		}
		defer resp.Body.Close()
		var messages []string
		for line := range sseLines(resp.Body) {
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "" { // not a priming event
				messages = append(messages, data)
			}
		}
		replies <- messages
	}()
	call := receivedCall(t, calls)
	resp := raw.mustSend("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user pressed stop"}}`)
	if resp.StatusCode != 202 {
		t.Fatalf("notifications/cancelled: %d", resp.StatusCode)
	}
	checkCancelled(t, g, call)
	select {
	case messages := <-replies:
		for _, m := range messages {
			if strings.Contains(m, `"id":7`) {
				t.Errorf("the cancelled request was answered: %s", m)
			}
		}
	case <-time.After(10 * time.Second):
		t.Error("the cancelled request's stream did not end")
	}
}
