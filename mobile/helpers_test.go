package mobile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/mobile"
)

// agentRequest sends a caller request with the agent key and decodes the
// reply into out; it returns the status.
func agentRequest(t *testing.T, g *gatewaytest.Gateway, method, path string, body, out any) int {
	t.Helper()
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, g.URL+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+g.AgentKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// callTool makes a call through POST /v1/calls and waits for its end.
func callTool(t *testing.T, g *gatewaytest.Gateway, sessionID, tool, argsJSON string) toolgate.Call {
	t.Helper()
	var call toolgate.Call
	body := map[string]any{"session_id": sessionID, "tool": tool, "args": json.RawMessage(argsJSON), "timeout_ms": 15000}
	if status := agentRequest(t, g, http.MethodPost, "/v1/calls", body, &call); status != http.StatusOK {
		t.Fatalf("POST /v1/calls %s: status %d, record %+v", tool, status, call)
	}
	return call
}

// startCall makes a call without waiting for it.
func startCall(t *testing.T, g *gatewaytest.Gateway, sessionID, tool, argsJSON string, timeoutMS int) toolgate.Call {
	t.Helper()
	var call toolgate.Call
	body := map[string]any{"session_id": sessionID, "tool": tool, "args": json.RawMessage(argsJSON), "timeout_ms": timeoutMS, "wait": false}
	if status := agentRequest(t, g, http.MethodPost, "/v1/calls", body, &call); status != http.StatusAccepted {
		t.Fatalf("POST /v1/calls %s (wait false): status %d, record %+v", tool, status, call)
	}
	return call
}

// getCall reads a call record, held up to waitMS until it ends.
func getCall(t *testing.T, g *gatewaytest.Gateway, id string, waitMS int) toolgate.Call {
	t.Helper()
	var call toolgate.Call
	if status := agentRequest(t, g, http.MethodGet, fmt.Sprintf("/v1/calls/%s?wait_ms=%d", id, waitMS), nil, &call); status != http.StatusOK {
		t.Fatalf("GET /v1/calls/%s: status %d", id, status)
	}
	return call
}

// sessionTools lists the tools of a session as GET /api/tools shows them.
func sessionTools(t *testing.T, g *gatewaytest.Gateway, sessionID string) map[string]toolgate.ToolInfo {
	t.Helper()
	var list struct {
		Tools []toolgate.ToolInfo `json:"tools"`
	}
	if status := agentRequest(t, g, http.MethodGet, "/api/tools?session_id="+sessionID, nil, &list); status != http.StatusOK {
		t.Fatalf("GET /api/tools: status %d", status)
	}
	tools := map[string]toolgate.ToolInfo{}
	for _, tool := range list.Tools {
		if tool.Source.Kind == toolgate.SourceRemote && tool.Source.SessionID == sessionID {
			tools[tool.Name] = tool
		}
	}
	return tools
}

// stateRecorder is a ConnectionListener that keeps every state change and
// lets a test wait for one.
type stateRecorder struct {
	mu      sync.Mutex
	changes []string
	changed chan struct{}
}

func newStateRecorder() *stateRecorder { return &stateRecorder{changed: make(chan struct{}, 1)} }

func (r *stateRecorder) OnStateChange(state, detail string) {
	r.mu.Lock()
	r.changes = append(r.changes, strings.TrimSpace(state+" "+detail))
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *stateRecorder) has(change string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.changes {
		if c == change {
			return true
		}
	}
	return false
}

// waitFor blocks until the listener was told of change.
func (r *stateRecorder) waitFor(t *testing.T, change string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for !r.has(change) {
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("listener not told %q within %s; it heard %q", change, timeout, r.changes)
		}
	}
}

// handlerFunc is a CallHandler from a function.
type handlerFunc func(call *mobile.Call) (string, error)

func (f handlerFunc) HandleCall(call *mobile.Call) (string, error) { return f(call) }

// testLogger sends the client's log lines to the test log.
type testLogger struct{ t *testing.T }

func (l testLogger) Log(level, message string) { l.t.Logf("client %s: %s", level, message) }

// newTestClient returns a client for g that logs to the test and is closed
// when the test ends.
func newTestClient(t *testing.T, g *gatewaytest.Gateway, transport string) (*mobile.Client, *stateRecorder) {
	t.Helper()
	return newClient(t, g.URL, func(c *mobile.Client) { setTransport(t, c, transport) })
}

// newClient is a client of url logging to t, set up by configure (when not
// nil), with a state recorder as its listener, closed when t ends.
func newClient(t *testing.T, url string, configure func(*mobile.Client)) (*mobile.Client, *stateRecorder) {
	t.Helper()
	client := mobile.NewClient(url)
	client.SetLogger(testLogger{t})
	if configure != nil {
		configure(client)
	}
	states := newStateRecorder()
	client.SetListener(states)
	t.Cleanup(client.Close)
	return client, states
}

// setTransport sets the client's transport, failing t if it is refused.
func setTransport(t *testing.T, c *mobile.Client, transport string) {
	t.Helper()
	if err := c.SetTransport(transport); err != nil {
		t.Fatal(err)
	}
}

// connectEcho is newClient answering the tool echo with its arguments,
// connected: it returns once the listener was told connected (such as
// "connected poll"), failing t if that takes longer than within.
func connectEcho(t *testing.T, url string, configure func(*mobile.Client), connected string, within time.Duration) (*mobile.Client, *stateRecorder) {
	t.Helper()
	client, states := newClient(t, url, configure)
	client.SetCallHandler(handlerFunc(func(call *mobile.Call) (string, error) { return call.ArgsJSON(), nil }))
	if err := client.RegisterTool("echo", "Echo", ""); err != nil {
		t.Fatal(err)
	}
	if err := client.Connect(); err != nil {
		t.Fatal(err)
	}
	states.waitFor(t, connected, within)
	return client, states
}
