package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/mcpserve"
)

// listenBody is a 2026-07-28 subscriptions/listen request for tool list
// changes.
const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// listen opens a subscriptions/listen stream on url; it stays open until
// ctx ends. The response's body is left to the caller to close.
func listen(ctx context.Context, t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(listenBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// subscriptions/listen streams are bounded over every route: past
// MaxListens a new one is 503 TOO_MANY_MCP_SESSIONS with Retry-After,
// until one ends; other requests are served all along.
func TestListenStreamsBounded(t *testing.T) {
	f := newFakeEngine()
	f.setSession(sessionA, tool("echo"))
	_, url := serve(t, f, mcpserve.Options{MaxListens: 2})
	first, cancelFirst := context.WithCancel(context.Background())
	defer cancelFirst()
	if resp := listen(first, t, url+"/mcp"); resp.StatusCode != 200 {
		t.Fatalf("first listen: %d", resp.StatusCode)
	}
	if resp := listen(context.Background(), t, url+"/mcp/sessions/"+sessionA); resp.StatusCode != 200 {
		t.Fatalf("second listen: %d", resp.StatusCode)
	}
	third := listen(context.Background(), t, url+"/mcp")
	if third.StatusCode == 200 {
		t.Fatal("a third listen was taken past MaxListens 2")
	}
	body, _ := io.ReadAll(third.Body)
	var refusal struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(body, &refusal)
	if third.StatusCode != 503 || third.Header.Get("Retry-After") == "" || refusal.Error.Code != "TOO_MANY_MCP_SESSIONS" {
		t.Errorf("a third listen: %d, Retry-After %q, %s; want 503 TOO_MANY_MCP_SESSIONS with Retry-After", third.StatusCode, third.Header.Get("Retry-After"), body)
	}
	cs := connect(t, url+"/mcp", "2026-07-28")
	if got := names(t, cs); len(got) != 1 {
		t.Errorf("tools/list at the bound: %v", got)
	}
	// One ends: a new one is taken.
	cancelFirst()
	testwait.Until(t, 10*time.Second, "a listen taken after one ended", func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		resp := listen(ctx, t, url+"/mcp")
		ok := resp.StatusCode == 200
		cancel()
		return ok
	})
}

// A client flipping its tools fast drives list_changed to a host at most
// once per ListInterval (after a burst of a few), and the host's list
// ends as the last change left it.
func TestListChangesCoalesced(t *testing.T) {
	f := newFakeEngine()
	f.setSession(sessionA, tool("t0"))
	const interval = 200 * time.Millisecond
	_, url := serve(t, f, mcpserve.Options{ListInterval: interval})
	var notified atomic.Int64
	client := mcp.NewClient(&mcp.Implementation{Name: "unit", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notified.Add(1) },
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp/sessions/" + sessionA, HTTPClient: &http.Client{Transport: bearer{}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	start := time.Now()
	// Each change more than the SDK's 10 ms debounce after the last.
	tick := time.NewTicker(20 * time.Millisecond)
	i := 0
	for time.Since(start) < time.Second {
		<-tick.C
		i++
		f.setSession(sessionA, tool(fmt.Sprintf("t%d", i)))
	}
	tick.Stop()
	last := fmt.Sprintf("t%d", i)
	testwait.Until(t, 10*time.Second, "the last change listed", func() bool {
		got := names(t, cs)
		return len(got) == 1 && got[0] == last
	})
	elapsed := time.Since(start)
	if max := int64(elapsed/interval) + 5 + 2; notified.Load() > max { // 5: the pacer's burst
		t.Errorf("%d changes in %s gave %d list_changed; want at most %d (one per %s)", i, elapsed, notified.Load(), max, interval)
	}
	testwait.Until(t, 10*time.Second, "list_changed", func() bool { return notified.Load() >= 2 })
}
