package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// The credentials every test server knows (see keys).
const (
	agentKey  = "agent-key"
	clientKey = "client-key"
)

// asAgent and asSession are the Authorization headers of the agent key and
// of session sid's token.
var asAgent = map[string]string{"Authorization": "Bearer " + agentKey}

func asSession(sid string) map[string]string {
	return map[string]string{"Authorization": "Bearer token-" + sid}
}

// with returns the headers of base and more, more's winning.
func with(base, more map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{base, more} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// fakeEngine is the engine's parts a test sets, as handlers.Options takes
// them. A part left nil panics when a route uses it, which the router's
// Recoverer answers with a 500: a test that drives a route it did not
// fake fails. Auth defaults to keys{}, and SessionAuth to Auth when it
// checks tokens too (as keys does).
type fakeEngine struct {
	Auth        handlers.Auth
	SessionAuth handlers.SessionAuth
	Sessions    handlers.Sessions
	Tools       handlers.Tools
	Delivery    handlers.Delivery
	Answers     handlers.Answers
	Calls       handlers.Calls
}

// options returns the Options of the router over eng's parts.
func (eng fakeEngine) options() handlers.Options {
	if eng.Auth == nil {
		eng.Auth = keys{}
	}
	if sa, ok := eng.Auth.(handlers.SessionAuth); ok && eng.SessionAuth == nil {
		eng.SessionAuth = sa
	}
	return handlers.Options{Auth: eng.Auth, SessionAuth: eng.SessionAuth, Sessions: eng.Sessions, Tools: eng.Tools,
		Delivery: eng.Delivery, Answers: eng.Answers, Calls: eng.Calls}
}

// keys is the Auth of the tests: the agent key, the client key (the agent
// key also creates sessions), and for session s the token "token-s".
type keys struct{ unhealthy error }

func (keys) IsAgentKey(secret string) bool  { return secret == agentKey }
func (keys) IsClientKey(secret string) bool { return secret == clientKey || secret == agentKey }
func (keys) AuthorizeSession(_ context.Context, sid, token string) error {
	switch token {
	case "":
		return toolgate.Errorf(toolgate.EUnauthenticated, "a session token is required")
	case "token-" + sid:
		return nil
	}
	return toolgate.Errorf(toolgate.EUnauthenticated, "invalid session token")
}
func (k keys) Healthy(context.Context) error { return k.unhealthy }

// received records what a fake was called with; the test reads it once
// the reply has come.
type received[T any] struct {
	mu   sync.Mutex
	vals []T
}

func (r *received[T]) put(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vals = append(r.vals, v)
}

// only returns the one value received, failing the test unless there was
// exactly one.
func (r *received[T]) only(t *testing.T) T {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.vals) != 1 {
		t.Fatalf("the fake was called %d times, want once: %+v", len(r.vals), r.vals)
	}
	return r.vals[0]
}

// testServer is a real HTTP server over handlers.New.
type testServer struct {
	*httptest.Server
	api *handlers.API
}

// newTestServer serves handlers.New over eng on :0 (over TLS with HTTP/2
// when http2), with the options tune sets. It is closed when the test ends.
func newTestServer(t *testing.T, eng fakeEngine, tune func(*handlers.Options), http2 bool) *testServer {
	t.Helper()
	opts := eng.options()
	opts.MaxBodyBytes, opts.PollWait, opts.MaxPollWait = 1<<20, 0, time.Minute
	if tune != nil {
		tune(&opts)
	}
	api := handlers.New(opts)
	api.Start() // the stream hub's workers serve the HTTP/1.1 streams
	ts := httptest.NewUnstartedServer(api)
	if http2 {
		ts.EnableHTTP2 = true
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		api.Close() // streams taken over from net/http end here
		ts.Close()
	})
	return &testServer{Server: ts, api: api}
}

// request is one request of a test.
type request struct {
	method, path string
	headers      map[string]string
	body         string
	// chunked sends the body without a declared length.
	chunked bool
}

// do sends req and returns the response, whose body the test reads. The
// client gives up after a few seconds, so a reply that never comes fails
// the test rather than hanging it.
func (ts *testServer) do(t *testing.T, req request) *http.Response {
	t.Helper()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
		if req.chunked {
			body = io.MultiReader(body) // hides the length
		}
	}
	r, err := http.NewRequest(req.method, ts.URL+req.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.method == "POST" {
		// Every client sends it (browser.go); a scenario that tests its
		// absence sets "Content-Type" to "" or to another type.
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.headers {
		r.Header.Set(k, v)
	}
	if ct, set := req.headers["Content-Type"]; set && ct == "" {
		r.Header.Del("Content-Type")
	}
	if host, set := req.headers["Host"]; set {
		r.Host = host // net/http sends r.Host, not a Host header
	}
	client := ts.Client()
	client.Timeout = 5 * time.Second
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// call sends req and returns the status, headers and whole body.
func (ts *testServer) call(t *testing.T, req request) (int, http.Header, string) {
	t.Helper()
	resp := ts.do(t, req)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// scenario is one row of a table test: a request to a server over engine,
// and what its reply must be.
type scenario struct {
	name   string
	engine fakeEngine
	tune   func(*handlers.Options)
	request
	status int
	// body, when set, is the whole reply body.
	body string
	// emptyBody: the reply has no body at all.
	emptyBody bool
	// contains are pieces the reply body must hold.
	contains []string
	// header are reply headers that must have these values ("" for absent).
	header map[string]string
}

// runScenarios runs each scenario against a server of its own.
func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, sc.engine, sc.tune, false)
			status, header, body := ts.call(t, sc.request)
			if status != sc.status {
				t.Errorf("status %d, want %d; body %s", status, sc.status, body)
			}
			if sc.body != "" && body != sc.body {
				t.Errorf("body\n%s\nwant\n%s", body, sc.body)
			}
			if sc.emptyBody && body != "" {
				t.Errorf("body %q, want none", body)
			}
			for _, piece := range sc.contains {
				if !strings.Contains(body, piece) {
					t.Errorf("body %q does not hold %q", body, piece)
				}
			}
			for name, want := range sc.header {
				if got := header.Get(name); got != want {
					t.Errorf("header %s is %q, want %q", name, got, want)
				}
			}
		})
	}
}

// errorBody is the protocol's error reply for code and message (which
// goes out JSON-escaped, "<" as \u003c).
func errorBody(code, message string) string {
	m, _ := json.Marshal(message)
	return `{"error":{"code":"` + code + `","message":` + string(m) + `}}` + "\n"
}

// The ids of the sessions and calls these tests name in paths, shaped as
// the gateway makes them: the routes answer 404 to any other shape.
const (
	sid1  = "01a20b24-c8e2-79cb-b053-000000000001"
	sid2  = "01a20b24-c8e2-79cb-b053-000000000002"
	sid3  = "01a20b24-c8e2-79cb-b053-000000000003"
	sid4  = "01a20b24-c8e2-79cb-b053-000000000004"
	sid7  = "01a20b24-c8e2-79cb-b053-000000000007"
	sid8  = "01a20b24-c8e2-79cb-b053-000000000008"
	sid9  = "01a20b24-c8e2-79cb-b053-000000000009"
	call1 = "01a20b24-c8e2-79cb-b053-0000000000c1"
	call3 = "01a20b24-c8e2-79cb-b053-0000000000c3"
	call7 = "01a20b24-c8e2-79cb-b053-0000000000c7"
	call9 = "01a20b24-c8e2-79cb-b053-0000000000c9"
)
