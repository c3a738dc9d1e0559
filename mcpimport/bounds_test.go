package mcpimport_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testlog"
	"github.com/toolgate/toolgate/mcpimport"
)

// countingTransport counts the bytes read of the response bodies it
// returns.
type countingTransport struct {
	base http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, read: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// TestHTTPResultBounded: a Streamable HTTP server's result far over the
// bound (4 × MaxResultBytes) fails the call PAYLOAD_TOO_LARGE after the
// gateway read little more than the bound of it, as an event stream and
// as an application/json body; the session carries on (no reconnection)
// and the next call works.
func TestHTTPResultBounded(t *testing.T) {
	const maxResult = 16 << 10 // read bound: 64 KiB
	const sent = 8 << 20
	for _, mode := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"event stream", nil},
		{"application/json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			h := startHTTPMCPServer(t, newTestMCPServer(nil, newServerEvents()), mode.opts)
			var log testlog.LockedBuffer
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(log.String())
				}
			})
			counter := &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
			opts := fastOptions(log.Logger(slog.LevelDebug))
			opts.MaxResultBytes = maxResult
			opts.CheckInterval = time.Hour // no listing read during the call
			opts.HTTPClient = &http.Client{Transport: counter}
			s := startImport(t, mcpimport.Config{Name: "files", Target: h.URL()}, opts)

			before := counter.read.Load()
			_, err := call(t, s, "files__big", `{"bytes":"8388608"}`)
			te := wantCode(t, err, toolgate.EPayloadTooLarge)
			if !strings.Contains(te.Message, "over 65536 bytes") {
				t.Errorf("message %q does not name the read bound", te.Message)
			}
			if read := counter.read.Load() - before; read > 4*maxResult+64<<10 {
				t.Errorf("the gateway read %d bytes of a %d-byte result; the bound is %d", read, sent, 4*maxResult)
			}
			if !s.Online() || strings.Contains(log.String(), "MCP server unreachable") {
				t.Errorf("the connection did not carry on (online %v)", s.Online())
			}
			wantOutput(t, s, "files__echo", `{"text":"after"}`, `"echo: after"`)
			// A result under MaxResultBytes still comes whole.
			wantOutput(t, s, "files__big", `{"bytes":"5"}`, `"AAAAA"`)
		})
	}
}
