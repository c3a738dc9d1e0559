package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/server"
)

// startHTTPTarget starts a real HTTP server on 127.0.0.1 that says hello
// at / and redirects /away to localhost on its own port; it counts the
// requests it served.
func startHTTPTarget(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	served := &atomic.Int64{}
	var port string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://localhost:"+port+"/", http.StatusFound)
			return
		}
		w.Header().Set("X-Target", "yes")
		io.WriteString(w, "hello from the target")
	}))
	t.Cleanup(target.Close)
	_, port, _ = net.SplitHostPort(target.Listener.Addr().String())
	return target, served
}

// httpOutput is http_request's output.
type httpOutput struct {
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Body      string            `json:"body"`
	Truncated bool              `json:"truncated"`
}

// TestHTTPRequestRefusedByDefault: http_request is a built-in listed by
// GET /api/tools (its output sanitized, not read-only); a call to a
// loopback server fails PERMISSION_DENIED saying why and how to allow it,
// is stored like every call, and the server is never reached; arguments
// outside the schema are 422 and store nothing.
func TestHTTPRequestRefusedByDefault(t *testing.T) {
	target, served := startHTTPTarget(t)
	g := startGateway(t, nil)

	var tools struct {
		Tools []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ReadOnly             bool            `json:"read_only"`
			RequiresSanitization *bool           `json:"requires_sanitization"`
			TimeoutMS            int64           `json:"timeout_ms"`
			Source               struct {
				Kind string `json:"kind"`
			} `json:"source"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &tools)
	found := false
	for _, tool := range tools.Tools {
		if tool.Name != "http_request" {
			continue
		}
		found = true
		if tool.Source.Kind != "builtin" || tool.ReadOnly || tool.RequiresSanitization == nil || !*tool.RequiresSanitization ||
			tool.TimeoutMS != 35000 || !strings.Contains(string(tool.Parameters), `"enum":["GET"`) {
			t.Fatalf("http_request listed as %+v %s", tool, tool.Parameters)
		}
	}
	if !found {
		t.Fatalf("http_request not listed: %+v", tools.Tools)
	}

	var refused callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": map[string]any{"method": "GET", "url": target.URL + "/"}}, 200, &refused)
	if refused.Status != "failed" || refused.Error == nil || refused.Error.Code != "PERMISSION_DENIED" ||
		!strings.Contains(refused.Error.Message, "http_request refuses 127.0.0.1: loopback addresses are not reachable unless the host is in --http-allow") ||
		!strings.Contains(string(refused.Error.Details), `"class":"loopback"`) {
		t.Fatalf("call to loopback = %+v", refused)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the target served %d requests", n)
	}
	var row struct {
		Status    string  `db:"status"`
		ErrorCode string  `db:"error_code"`
		Session   *string `db:"session_id"`
	}
	if err := g.db(t).Get(&row, `SELECT status, error_code, session_id FROM calls WHERE id = ?`, refused.ID); err != nil {
		t.Fatal(err)
	}
	if row.Status != "failed" || row.ErrorCode != "PERMISSION_DENIED" || row.Session != nil {
		t.Fatalf("stored call = %+v", row)
	}

	var meta callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": map[string]any{"method": "GET", "url": "http://169.254.169.254/latest/meta-data/"}}, 200, &meta)
	if meta.Status != "failed" || meta.Error == nil || meta.Error.Code != "PERMISSION_DENIED" || !strings.Contains(meta.Error.Message, "cloud metadata") {
		t.Fatalf("call to the metadata address = %+v", meta)
	}

	var before int
	if err := g.db(t).Get(&before, `SELECT COUNT(*) FROM calls`); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{"method": "TRACE", "url": target.URL},
		{"url": target.URL},
		{"method": "GET", "url": target.URL, "headers": map[string]any{"X-A": 1}},
	} {
		status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": args})
		if status != 422 || errorCode(body) != "INVALID_ARGS" {
			t.Fatalf("args %v: %d %s", args, status, body)
		}
	}
	var after int
	if err := g.db(t).Get(&after, `SELECT COUNT(*) FROM calls`); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("refused arguments stored %d calls", after-before)
	}
}

// TestHTTPRequestAllowed: with the target's host in Config.HTTPAllow
// (--http-allow) the call completes with the target's answer, directly
// and in a run; a redirect from the allowed host to a name that is not
// allowed (localhost) is refused.
func TestHTTPRequestAllowed(t *testing.T) {
	target, served := startHTTPTarget(t)
	m := startFakeModel(t, toolThenAnswer(callTool("h1", "http_request", fmt.Sprintf(`{"method":"GET","url":%q}`, target.URL+"/"))))
	g := modelGateway(t, m, func(c *serverConfig) { c.HTTPAllow = []string{"127.0.0.1"} })

	var ok callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": map[string]any{"method": "GET", "url": target.URL + "/"}}, 200, &ok)
	var out httpOutput
	if err := json.Unmarshal(ok.Output, &out); err != nil || ok.Status != "completed" || out.Status != 200 || out.Body != "hello from the target" || out.Headers["X-Target"] != "yes" || out.Truncated {
		t.Fatalf("allowed call = %+v %s", ok, ok.Output)
	}

	var away callRecord
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"tool": "http_request", "args": map[string]any{"method": "GET", "url": target.URL + "/away"}}, 200, &away)
	if away.Status != "failed" || away.Error == nil || away.Error.Code != "PERMISSION_DENIED" || !strings.Contains(away.Error.Message, "refuses localhost (") {
		t.Fatalf("redirect to localhost = %+v", away)
	}
	if n := served.Load(); n != 2 {
		t.Fatalf("the target served %d requests, want 2 (/ and /away, not the redirect's target)", n)
	}

	var run runRecord
	g.call("POST", "/v1/runs", testAgentKey, map[string]any{"input": "fetch the target"}, 200, &run)
	if run.Status != "finished" || len(run.Calls) != 1 || run.Calls[0].Tool != "http_request" || run.Calls[0].Status != "completed" ||
		!strings.Contains(run.Output, "hello from the target") {
		t.Fatalf("run = %+v", run)
	}
}

// TestHTTPRequestBadAllowList: an --http-allow entry that is not a host
// stops the gateway from opening, naming the flag and the entry.
func TestHTTPRequestBadAllowList(t *testing.T) {
	cfg := server.ConfigForTest(t)
	cfg.HTTPAllow = []string{"http://intranet.example/"}
	srv, err := server.Open(context.Background(), cfg, nil)
	if err == nil || srv != nil || !strings.Contains(err.Error(), `--http-allow "http://intranet.example/"`) {
		t.Fatalf("Open = %v, %v", srv, err)
	}
}

// TestHTTPRequestInSessionRuns: in a run a session's token started,
// http_request fails PERMISSION_DENIED, saying how to allow it, and the
// target is never reached; with --http-request-runs all it runs. A value
// other than agent or all stops the gateway from opening.
func TestHTTPRequestInSessionRuns(t *testing.T) {
	target, served := startHTTPTarget(t)
	fetch := func() *fakeModel {
		return startFakeModel(t, toolThenAnswer(callTool("h1", "http_request", fmt.Sprintf(`{"method":"GET","url":%q}`, target.URL+"/"))))
	}
	g := modelGateway(t, fetch(), func(c *serverConfig) { c.HTTPAllow = []string{"127.0.0.1"} })
	s := g.newSession("page")
	var run runRecord
	g.call("POST", "/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "fetch the target"}, 200, &run)
	if !strings.Contains(run.Output, `"code":"PERMISSION_DENIED"`) || !strings.Contains(run.Output, "--http-request-runs all") {
		t.Fatalf("session run output = %s", run.Output)
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the target served %d requests for a session's run", n)
	}

	g = modelGateway(t, fetch(), func(c *serverConfig) { c.HTTPAllow = []string{"127.0.0.1"}; c.HTTPRequestRuns = "all" })
	s = g.newSession("page")
	g.call("POST", "/v1/sessions/"+s.ID+"/runs", s.Token, map[string]any{"input": "fetch the target"}, 200, &run)
	if !strings.Contains(run.Output, "hello from the target") || served.Load() != 1 {
		t.Fatalf("session run output with --http-request-runs all = %s (served %d)", run.Output, served.Load())
	}

	cfg := server.ConfigForTest(t)
	cfg.HTTPRequestRuns = "everyone"
	if srv, err := server.Open(context.Background(), cfg, nil); err == nil || srv != nil || !strings.Contains(err.Error(), "--http-request-runs must be agent or all") {
		t.Fatalf("Open = %v, %v", srv, err)
	}
}
