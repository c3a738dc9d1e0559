package mcpserve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpserve"
)

// smallSendBuffers gives every accepted connection a small socket send
// buffer, so that a host that stops reading fills it after a few KB
// rather than megabytes (on loopback Linux grows it to MBs on its own).
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// openSession opens a 2025-11-25 MCP session with plain HTTP and returns
// its id.
func openSession(t *testing.T, url string) string {
	t.Helper()
	resp := post(t, url, initialize, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	headers := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	if resp := post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, headers); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", resp.StatusCode)
	}
	return sid
}

// openStuckStream opens the GET stream of MCP session sid over a raw TCP
// connection with a tiny receive buffer, and never reads from it; base is
// the server's URL.
func openStuckStream(t *testing.T, base, sid string) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", host, agentKey, sid)
	return conn
}

// streamFree reports whether MCP session sid's GET stream is free: a new
// GET is taken (200) rather than refused or held up behind the old one.
func streamFree(url, sid string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// A host that never reads its GET stream is cut off once a write to it
// has waited StreamWriteTimeout, and the other hosts keep getting
// list_changed: without the write timeout the stuck write would hold the
// SDK's notification loop, which tells hosts one after another.
func TestStuckHostIsCutOthersStillNotified(t *testing.T) {
	f := newFakeEngine()
	f.setSession(sessionA, tool("a"))
	_, base := serveOn(t, f, mcpserve.Options{Heartbeat: time.Millisecond, StreamWriteTimeout: 300 * time.Millisecond},
		func(l net.Listener) net.Listener { return smallSendBuffers{l} })
	url := base + "/mcp"

	stuckSID := openSession(t, url)
	stuck := openStuckStream(t, base, stuckSID)

	var notified atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "reader", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notified.Add(1) },
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// The tab flips its tool until the test ends.
	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			f.setSession(sessionA, tool(fmt.Sprintf("t%d", i%2)))
		}
	}()
	defer func() { close(stop); <-flipped }()

	testwait.Until(t, 30*time.Second, "the stuck host's GET stream cut", func() bool { return streamFree(url, stuckSID) })
	after := notified.Load()
	testwait.Until(t, 15*time.Second, "list_changed on the reading host after the cut", func() bool { return notified.Load() >= after+2 })

	// The stuck host's connection was closed: what was written to it, then
	// its end.
	_ = stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, bufio.NewReader(stuck)); err != nil {
		t.Errorf("the stuck host's connection was not closed: %v", err)
	}
}
