package mcpserve_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcpserve"
)

const agentKey = "tga_unit"

// fakeEngine is the engine's parts as mcpserve uses them (Auth, Sessions,
// Tools, Calls), whose tools the test sets; calls end at
// once, completed with their arguments as output, unless the test sets
// the func fields (before serving).
type fakeEngine struct {
	mu       sync.Mutex
	gateway  []toolgate.ToolInfo
	sessions map[string]*toolgate.SessionView
	watch    func(string)
	// viewHeld, when set, holds every SessionView until it is closed.
	viewHeld chan struct{}

	createCall func(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error)
	waitCall   func(ctx context.Context, id string) (*toolgate.Call, error)
	cancelCall func(ctx context.Context, id string) (*toolgate.Call, error)
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{sessions: map[string]*toolgate.SessionView{}}
}

func (f *fakeEngine) IsAgentKey(secret string) bool { return secret == agentKey }

func (f *fakeEngine) GatewayTools() []toolgate.ToolInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolgate.ToolInfo(nil), f.gateway...)
}

func (f *fakeEngine) SessionIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.sessions {
		ids = append(ids, id)
	}
	return ids
}

func (f *fakeEngine) SessionView(ctx context.Context, sid string) (*toolgate.SessionView, error) {
	f.mu.Lock()
	held := f.viewHeld
	f.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.sessions[sid]
	if !ok {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
	}
	copied := *v
	return &copied, nil
}

func (f *fakeEngine) WatchTools(fn func(string)) func() {
	f.mu.Lock()
	f.watch = fn
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.watch = nil
		f.mu.Unlock()
	}
}

// changed tells the endpoint that source's tools changed.
func (f *fakeEngine) changed(source string) {
	f.mu.Lock()
	fn := f.watch
	f.mu.Unlock()
	if fn != nil {
		fn(source)
	}
}

// setGateway sets the tools called without a session.
func (f *fakeEngine) setGateway(tools ...toolgate.ToolInfo) {
	f.mu.Lock()
	f.gateway = tools
	f.mu.Unlock()
	f.changed("")
}

// setSession opens (or updates) a session with tools.
func (f *fakeEngine) setSession(sid string, tools ...toolgate.ToolInfo) {
	f.mu.Lock()
	for i := range tools {
		tools[i].Source = toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: sid}
	}
	f.sessions[sid] = &toolgate.SessionView{Session: toolgate.Session{ID: sid, Client: toolgate.ClientInfo{Name: "unit"}}, Online: true, Tools: tools}
	f.mu.Unlock()
	f.changed(sid)
}

func (f *fakeEngine) CreateCall(ctx context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error) {
	if f.createCall != nil {
		return f.createCall(ctx, req, idempotencyKey)
	}
	return &toolgate.Call{ID: "call-1", Tool: req.Tool, Args: req.Args, Status: toolgate.StatusCompleted, Output: req.Args}, nil
}

func (f *fakeEngine) WaitCallProgress(ctx context.Context, id string, _ func(json.RawMessage)) (*toolgate.Call, error) {
	if f.waitCall != nil {
		return f.waitCall(ctx, id)
	}
	return &toolgate.Call{ID: id, Status: toolgate.StatusCompleted, Output: json.RawMessage(`{"ok":true}`)}, nil
}

func (f *fakeEngine) CancelCall(ctx context.Context, id string) (*toolgate.Call, error) {
	if f.cancelCall != nil {
		return f.cancelCall(ctx, id)
	}
	return nil, toolgate.Errorf(toolgate.ECallClosed, "ended")
}

// GetCall is not used by these tests: the fake keeps no calls.
func (f *fakeEngine) GetCall(ctx context.Context, id string) (*toolgate.Call, error) {
	return nil, toolgate.Errorf(toolgate.ENotFound, "no call %s", id)
}

// tool is a ToolInfo that can be called now.
func tool(name string) toolgate.ToolInfo {
	return toolgate.ToolInfo{ToolSpec: toolgate.ToolSpec{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)}, Online: true}
}

// serve starts an endpoint over f on a test HTTP server.
func serve(t *testing.T, f *fakeEngine, opts mcpserve.Options) (*mcpserve.Endpoint, string) {
	t.Helper()
	return serveOn(t, f, opts, nil)
}

// serveOn is serve with the test server's listener wrapped by wrap (nil:
// as it is).
func serveOn(t *testing.T, f *fakeEngine, opts mcpserve.Options, wrap func(net.Listener) net.Listener) (*mcpserve.Endpoint, string) {
	t.Helper()
	opts.Auth, opts.Sessions, opts.Tools, opts.Calls = f, f, f, f
	ep := mcpserve.New(opts)
	r := chi.NewRouter()
	ep.Mount(r)
	ts := httptest.NewUnstartedServer(r)
	if wrap != nil {
		ts.Listener = wrap(ts.Listener)
	}
	ts.Start()
	ep.Start()
	t.Cleanup(func() {
		ep.Close()
		ts.Close()
	})
	return ep, ts.URL
}

// bearer adds the agent key to each request.
type bearer struct{}

func (bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+agentKey)
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects the SDK client to url speaking revision.
func connect(t *testing.T, url, revision string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "unit", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// names lists the tools' names.
func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}
