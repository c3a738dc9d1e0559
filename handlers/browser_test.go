package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// noClientKey is the Auth of a gateway with no client key: anyone may
// create a session, as a page on any site could.
type noClientKey struct{ keys }

func (noClientKey) IsClientKey(string) bool { return true }

// createRecorded is an engine of a gateway with no client key whose
// CreateSession records each request, so a test can check that a refused
// one created nothing.
func createRecorded(created *received[toolgate.CreateSessionRequest]) fakeEngine {
	return fakeEngine{Auth: noClientKey{}, Sessions: &fakeSessions{create: func(req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
		created.put(req)
		return &toolgate.SessionCreated{SessionID: "s1", Token: "token-s1"}, nil
	}}}
}

// TestPostBodiesMustBeJSON: a page on another site can send a "simple"
// POST (text/plain, a form, or no Content-Type) without a CORS preflight;
// the gateway refuses every such POST with 415, and the state-creating
// ones even with an empty body, before anything is created.
func TestPostBodiesMustBeJSON(t *testing.T) {
	unsupported := func(path string) string {
		return errorBody(toolgate.EUnsupportedMediaType, "a POST to "+path+" must be sent with Content-Type: application/json")
	}
	for _, tc := range []struct {
		name        string
		contentType string
		body        string
		created     bool
	}{
		{"text/plain", "text/plain", `{"client":{"name":"x"}}`, false},
		{"a form", "application/x-www-form-urlencoded", `{"client":{"name":"x"}}`, false},
		{"no Content-Type", "", `{"client":{"name":"x"}}`, false},
		{"no Content-Type and no body", "", "", false},
		{"text/plain and no body", "text/plain", "", false},
		{"JSON with a charset", "application/json; charset=utf-8", `{"client":{"name":"x"}}`, true},
		{"JSON in capitals, no body", "Application/JSON", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			created := &received[toolgate.CreateSessionRequest]{}
			ts := newTestServer(t, createRecorded(created), nil, false)
			status, _, body := ts.call(t, request{method: "POST", path: "/v1/sessions", body: tc.body,
				headers: map[string]string{"Content-Type": tc.contentType}})
			if !tc.created {
				if status != 415 || body != unsupported("/v1/sessions") {
					t.Errorf("%d %s, want 415 %s", status, body, unsupported("/v1/sessions"))
				}
				if len(created.vals) != 0 {
					t.Errorf("a session was created: %+v", created.vals)
				}
				return
			}
			if status != 201 {
				t.Errorf("status %d, want 201; body %s", status, body)
			}
			created.only(t)
		})
	}
	noType := map[string]string{"Content-Type": ""}
	runScenarios(t, []scenario{
		{name: "a stream without a type", request: request{method: "POST", path: "/v1/streams", headers: noType},
			status: 415, body: unsupported("/v1/streams")},
		{name: "a poll as text", request: request{method: "POST", path: "/v1/poll", body: `{"sessions":[]}`, headers: map[string]string{"Content-Type": "text/plain"}},
			status: 415, body: unsupported("/v1/poll")},
		{name: "a session's POST with a body as text", request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", body: "{}",
			headers: with(asSession(sid1), map[string]string{"Content-Type": "text/plain;charset=UTF-8"})},
			status: 415, body: unsupported("/v1/sessions/" + sid1 + "/progress")},
		{name: "a caller's POST with a chunked body and no type", request: request{method: "POST", path: "/v1/calls", body: `{"tool":"t"}`, chunked: true,
			headers: with(asAgent, noType)},
			status: 415, body: unsupported("/v1/calls")},
		{name: "a session's POST with no body needs no type",
			engine:  fakeEngine{Sessions: &fakeSessions{close: func(string) error { return nil }}},
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/close", headers: with(asSession(sid1), noType)},
			status:  200},
		{name: "a malformed type", request: request{method: "POST", path: "/v1/sessions", headers: map[string]string{"Content-Type": "application/json; charset"}},
			status: 415, body: unsupported("/v1/sessions")},
	})
}

// TestHostChecked: against DNS rebinding, a request whose Host names a host
// the gateway does not serve is refused with 421; addresses and localhost
// names pass, and so do the allowed hosts.
func TestHostChecked(t *testing.T) {
	misdirected := func(host string) string {
		return errorBody(toolgate.EMisdirectedRequest, `this gateway does not answer for the host "`+host+`"; its operator can add it to --allowed-hosts (TOOLGATE_ALLOWED_HOSTS)`)
	}
	onLoopback := func(o *handlers.Options) { o.ListenAddr = "127.0.0.1:8080" }
	allowing := func(hosts ...string) func(*handlers.Options) {
		return func(o *handlers.Options) { o.ListenAddr = "0.0.0.0:8080"; o.AllowedHosts = hosts }
	}
	health := func(host string) request {
		return request{method: "GET", path: "/healthz", headers: map[string]string{"Host": host}}
	}
	ok := `{"status":"ok"}` + "\n"
	runScenarios(t, []scenario{
		{name: "a rebound name", tune: onLoopback, request: health("evil.example:8080"), status: 421, body: misdirected("evil.example")},
		{name: "a rebound name without a port", tune: onLoopback, request: health("EVIL.example."), status: 421, body: misdirected("evil.example")},
		{name: "a name that ends like localhost", tune: onLoopback, request: health("evil-localhost:8080"), status: 421, body: misdirected("evil-localhost")},
		{name: "a name under an allowed name's parent", tune: allowing("gw.example.com"), request: health("example.com"), status: 421, body: misdirected("example.com")},
		{name: "a name on all interfaces with no allowed host", tune: func(o *handlers.Options) { o.ListenAddr = ":8080" },
			request: health("gw.example.com"), status: 421, body: misdirected("gw.example.com")},
		{name: "the API refuses it too", tune: onLoopback,
			request: request{method: "POST", path: "/v1/sessions", body: "{}", headers: map[string]string{"Host": "evil.example"}},
			status:  421, body: misdirected("evil.example"), header: map[string]string{"X-Content-Type-Options": "nosniff"}},

		{name: "127.0.0.1 with its port", tune: onLoopback, request: health("127.0.0.1:8080"), status: 200, body: ok},
		{name: "localhost with its port", tune: onLoopback, request: health("localhost:8080"), status: 200, body: ok},
		{name: "a name under localhost", tune: onLoopback, request: health("app.localhost:8080"), status: 200, body: ok},
		{name: "IPv6 loopback", tune: onLoopback, request: health("[::1]:8080"), status: 200, body: ok},
		{name: "another address", tune: onLoopback, request: health("192.0.2.7"), status: 200, body: ok},
		{name: "the listen address's name", tune: func(o *handlers.Options) { o.ListenAddr = "gw.internal:8080" },
			request: health("gw.internal:8080"), status: 200, body: ok},
		{name: "an allowed host", tune: allowing("gw.example.com"), request: health("GW.example.com"), status: 200, body: ok},
		{name: "an allowed host given with a port", tune: allowing("gw.example.com:443"), request: health("gw.example.com"), status: 200, body: ok},
		{name: "an allowed subdomain", tune: allowing("*.example.com"), request: health("a.b.example.com"), status: 200, body: ok},
		{name: "any host", tune: allowing("*"), request: health("anything.example"), status: 200, body: ok},
	})
}

// TestBrowserHeaders: the page, the SDK and the API's replies carry a
// strict policy, no sniffing, no framing by another site and no Referer.
func TestBrowserHeaders(t *testing.T) {
	ts := newTestServer(t, openSessions, nil, false)
	for _, req := range []request{
		{method: "GET", path: "/"},
		{method: "GET", path: "/toolgate.js"},
		{method: "GET", path: "/toolgate-http.js"},
		{method: "GET", path: "/style.css"},
		{method: "GET", path: "/v1/sessions", headers: asAgent},
		{method: "GET", path: "/no-such-file"},
	} {
		status, header, _ := ts.call(t, req)
		if status != 200 && req.path != "/no-such-file" {
			t.Errorf("GET %s: status %d", req.path, status)
		}
		for name, want := range map[string]string{
			"Content-Security-Policy": handlers.ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := header.Get(name); got != want {
				t.Errorf("GET %s: %s is %q, want %q", req.path, name, got, want)
			}
		}
	}
	for _, directive := range []string{"default-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(handlers.ContentSecurityPolicy, directive) {
			t.Errorf("the policy %q lacks %q", handlers.ContentSecurityPolicy, directive)
		}
	}
	if strings.Contains(handlers.ContentSecurityPolicy, "unsafe-") {
		t.Errorf("the policy %q allows unsafe sources", handlers.ContentSecurityPolicy)
	}
}

// TestQueryTokenOnlyOnStreams: ?access_token= is taken on GET .../events
// and GET .../poll alone. It once was taken on any path ending in /events
// or /poll, and deleted a tool named "events".
func TestQueryTokenOnlyOnStreams(t *testing.T) {
	removed := &received[string]{}
	eng := fakeEngine{Tools: &fakeTools{remove: func(sid, name string) error { removed.put(sid + "/" + name); return nil }}}
	for _, name := range []string{"events", "poll"} {
		ts := newTestServer(t, eng, nil, false)
		status, _, body := ts.call(t, request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/" + name + "?access_token=token-" + sid1})
		if status != http.StatusUnauthorized || body != errorBody(toolgate.EUnauthenticated, "a session token is required") {
			t.Errorf("DELETE tools/%s with ?access_token=: %d %s, want 401", name, status, body)
		}
	}
	if len(removed.vals) != 0 {
		t.Errorf("tools were removed: %v", removed.vals)
	}
	// The header still works there, so the refusal above is the query's.
	ts := newTestServer(t, eng, nil, false)
	if status, _, body := ts.call(t, request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/events", headers: asSession(sid1)}); status != 200 {
		t.Errorf("DELETE tools/events with the header: %d %s", status, body)
	}
}

// TestMetricsNeedTheAgentKey: /metrics tells how busy the gateway is and
// which sessions are online; only the agent key reads it.
func TestMetricsNeedTheAgentKey(t *testing.T) {
	metrics := func(o *handlers.Options) {
		o.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("toolgate_up 1\n")) })
	}
	runScenarios(t, []scenario{
		{name: "without a key", tune: metrics, request: request{method: "GET", path: "/metrics"},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "the agent key is required (Authorization: Bearer <agent key>)")},
		{name: "with a session token", tune: metrics, request: request{method: "GET", path: "/metrics", headers: asSession(sid1)},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},
		{name: "with the agent key", tune: metrics, request: request{method: "GET", path: "/metrics", headers: asAgent},
			status: 200, body: "toolgate_up 1\n"},
	})
}
