package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawMCP speaks MCP's Streamable HTTP by hand (JSON-RPC over net/http), for
// what the SDK client does not let a test do: hold a 2025-11-25 session's
// ids and streams, close a POST's stream, send any header.
type rawMCP struct {
	t        *testing.T
	url      string
	key      string
	revision string // Mcp-Protocol-Version after initialize
	session  string // Mcp-Session-Id
}

func newRawMCP(t *testing.T, url string) *rawMCP {
	return &rawMCP{t: t, url: url, key: testAgentKey}
}

// send sends one message with the session's headers (and any extra), and
// returns the response; ctx may end the request.
func (c *rawMCP) send(ctx context.Context, method, body string, extra http.Header) (*http.Response, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, r)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.revision != "" {
		req.Header.Set("Mcp-Protocol-Version", c.revision)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	return http.DefaultClient.Do(req)
}

// mustSend is send that fails the test on a transport error.
func (c *rawMCP) mustSend(method, body string) *http.Response {
	c.t.Helper()
	resp, err := c.send(context.Background(), method, body, nil)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// initialize opens a 2025-11-25 session: initialize, then
// notifications/initialized.
func (c *rawMCP) initialize() {
	c.t.Helper()
	resp := c.mustSend("POST", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	if c.session == "" {
		c.t.Fatal("initialize: no Mcp-Session-Id")
	}
	msg := nextMessage(c.t, sseLines(resp.Body), 10*time.Second)
	if !strings.Contains(string(msg), `"protocolVersion":"2025-11-25"`) {
		c.t.Fatalf("initialize: %s", msg)
	}
	c.revision = "2025-11-25"
	if resp := c.mustSend("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: %d", resp.StatusCode)
	}
}

// callBody is the JSON-RPC request of tools/call.
func callBody(id int, tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// sseLines reads an event stream's lines into a channel, closed at its end.
func sseLines(body io.Reader) <-chan string {
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// nextMessage returns the data of the stream's next event.
func nextMessage(t *testing.T, lines <-chan string, timeout time.Duration) json.RawMessage {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended")
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "" { // not a priming event (no data)
				return json.RawMessage(data)
			}
		case <-deadline:
			t.Fatalf("no event within %s", timeout)
		}
	}
}
