package mcpimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServerEnv, set to "1", makes the test binary an MCP server over
// stdio (TestMain), so that the stdio tests start a real child process.
const stdioServerEnv = "MCPIMPORT_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "1" {
		fmt.Fprintln(os.Stderr, "test MCP server ready on stdio")
		srv := newTestMCPServer(nil, newServerEvents())
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test MCP server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverEvents is what the test server's tools tell the test.
type serverEvents struct {
	cancelled chan string   // the slow tool's context ended: why
	release   chan struct{} // lets the slow tool return
}

func newServerEvents() *serverEvents {
	return &serverEvents{cancelled: make(chan string, 4), release: make(chan struct{})}
}

// objectSchema is an input schema with the string properties named.
func objectSchema(props ...string) map[string]any {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": p}
}

// text is a tool result of one text item.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// newTestMCPServer is a Go SDK server with a tool for each behaviour the
// tests look at.
func newTestMCPServer(opts *mcp.ServerOptions, ev *serverEvents) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, opts)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: objectSchema("text"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return text("echo: " + args.Text), nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("the disk is full")
			res.IsError = true
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Answers with structured content.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text(`{"answer":42}`)
			res.StructuredContent = map[string]any{"answer": 42}
			return res, nil
		})
	s.AddTool(&mcp.Tool{Name: "image", Description: "Answers with text and an image.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a dot"},
				&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png"},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "dotted.name", Title: "Dotted", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("dotted"), nil
		})
	s.AddTool(&mcp.Tool{Name: "pid", Description: "The server's process id.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"pid": os.Getpid()}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Reports progress, then waits to be released or cancelled.", InputSchema: objectSchema()},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: 1, Total: 3, Message: "step 1",
				})
				if err != nil {
					return nil, err
				}
			}
			select {
			case <-ctx.Done():
				ev.cancelled <- context.Cause(ctx).Error()
				return nil, ctx.Err()
			case <-ev.release:
				return text("released"), nil
			}
		})
	s.AddTool(&mcp.Tool{Name: "big", Description: "Answers with as many bytes of text as asked.", InputSchema: objectSchema("bytes")},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ Bytes string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			n, err := strconv.Atoi(args.Bytes)
			if err != nil {
				return nil, err
			}
			return text(strings.Repeat("A", n)), nil
		})
	// A name too long for NAME__tool (the gateway cuts it), and a schema
	// nested past the gateway's depth limit (left out).
	s.AddTool(&mcp.Tool{Name: strings.Repeat("x", 60), Description: "Too long a name.", InputSchema: objectSchema()},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("x"), nil })
	deep := map[string]any{"type": "object"}
	for range 70 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	s.AddTool(&mcp.Tool{Name: "deep", Description: "Too deep a schema.", InputSchema: deep},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("deep"), nil })
	return s
}

// httpMCPServer serves a test MCP server over Streamable HTTP on a fixed
// address, and can stop and start again there (with a handler of its
// own each time, as a restarted server has: no sessions kept).
type httpMCPServer struct {
	t      *testing.T
	server *mcp.Server
	opts   *mcp.StreamableHTTPOptions
	addr   string

	mu sync.Mutex
	hs *http.Server
}

func startHTTPMCPServer(t *testing.T, server *mcp.Server, opts *mcp.StreamableHTTPOptions) *httpMCPServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &httpMCPServer{t: t, server: server, opts: opts, addr: ln.Addr().String()}
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *httpMCPServer) URL() string { return "http://" + h.addr + "/mcp" }

func (h *httpMCPServer) serve(ln net.Listener) {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, h.opts)
	hs := &http.Server{Handler: handler}
	h.mu.Lock()
	h.hs = hs
	h.mu.Unlock()
	go hs.Serve(ln)
}

// stop closes the listener and every connection at once.
func (h *httpMCPServer) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hs != nil {
		h.hs.Close()
		h.hs = nil
	}
}

// start serves again on the same address.
func (h *httpMCPServer) start() {
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		h.t.Fatalf("listen again on %s: %v", h.addr, err)
	}
	h.serve(ln)
}

// waitFor fails the test unless ch delivers within the timeout.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
