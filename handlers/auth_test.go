package handlers_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// openSessions lists one session, for the routes that need the agent key.
var openSessions = fakeEngine{Sessions: &fakeSessions{
	list: func(toolgate.SessionQuery) (*toolgate.SessionList, error) {
		return &toolgate.SessionList{Sessions: []toolgate.SessionView{{Online: true}}}, nil
	},
	view: func(sid string) (*toolgate.SessionView, error) { return &toolgate.SessionView{Online: true}, nil },
}}

func TestAuth(t *testing.T) {
	agentRequired := "the agent key is required (Authorization: Bearer \u003cagent key\u003e)"
	runScenarios(t, []scenario{
		{name: "health", request: request{method: "GET", path: "/healthz"},
			status: 200, body: `{"status":"ok"}` + "\n",
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{name: "health when the engine cannot serve", engine: fakeEngine{Auth: keys{unhealthy: errors.New("database is locked")}},
			request: request{method: "GET", path: "/healthz"},
			status:  503, body: `{"error":"the database cannot be reached","status":"unavailable"}` + "\n"},

		{name: "agent route without a key", request: request{method: "GET", path: "/v1/sessions"},
			status: 401, body: `{"error":{"code":"UNAUTHENTICATED","message":"the agent key is required (Authorization: Bearer \u003cagent key\u003e)"}}` + "\n"},
		{name: "agent route with a wrong key", request: request{method: "GET", path: "/v1/sessions", headers: map[string]string{"Authorization": "Bearer nope"}},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},
		{name: "agent route with another scheme", request: request{method: "GET", path: "/v1/sessions", headers: map[string]string{"Authorization": "Basic " + agentKey}},
			status: 401, body: errorBody(toolgate.EUnauthenticated, agentRequired)},
		{name: "agent route with a session token", request: request{method: "GET", path: "/v1/sessions", headers: asSession(sid1)},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},
		{name: "agent key in the query is not taken", request: request{method: "GET", path: "/v1/sessions?access_token=" + agentKey},
			status: 401, body: errorBody(toolgate.EUnauthenticated, agentRequired)},
		{name: "bearer is case-blind and trimmed", engine: openSessions,
			request: request{method: "GET", path: "/v1/sessions", headers: map[string]string{"Authorization": "bEARER   " + agentKey + " "}},
			status:  200, body: `{"sessions":[{"session_id":"","client":{},"auto_approve":false,"created_at":"0001-01-01T00:00:00.000Z","last_seen_at":"0001-01-01T00:00:00.000Z","online":true,"connection":{"state":"","transport":null,"heartbeat_ms":null,"connected_at":null,"cuts":0,"last_cut":null},"tools":null}],"next_before":null}` + "\n"},

		{name: "session route without a token", request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", body: "{}"},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "a session token is required")},
		{name: "session route with another session's token", request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress", headers: asSession(sid2), body: "{}"},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid session token")},
		{name: "session route refuses the agent key", request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: asAgent, body: `{"tools":[]}`},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid session token")},
		{name: "session token in the query only on streams", request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/progress?access_token=token-" + sid1, body: "{}"},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "a session token is required")},
		{name: "a wrong token in the query of a poll", request: request{method: "GET", path: "/v1/sessions/" + sid1 + "/poll?access_token=token-" + sid2},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid session token")},
		{name: "a header other than bearer hides the query token", request: request{method: "GET", path: "/v1/sessions/" + sid1 + "/events?access_token=token-" + sid1, headers: map[string]string{"Authorization": "Basic x"}},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "a session token is required")},
		{name: "session or agent route with the agent key", engine: openSessions,
			request: request{method: "GET", path: "/v1/sessions/" + sid1, headers: asAgent},
			status:  200, contains: []string{`"online":true`}},
		{name: "session or agent route with the token", engine: openSessions,
			request: request{method: "GET", path: "/v1/sessions/" + sid1 + "/", headers: asSession(sid1)},
			status:  200, contains: []string{`"online":true`}},
		{name: "session or agent route with neither", request: request{method: "GET", path: "/v1/sessions/" + sid1, headers: asSession(sid2)},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "invalid session token")},

		{name: "creating a session needs the client key", request: request{method: "POST", path: "/v1/sessions"},
			status: 401, body: errorBody(toolgate.EUnauthenticated, "this gateway requires its client key to create sessions (Authorization: Bearer <client key>)")},
		{name: "the client key is checked before the body", request: request{method: "POST", path: "/v1/sessions", body: "not json", headers: map[string]string{"Authorization": "Bearer nope"}},
			status: 401, contains: []string{"requires its client key"}},
	})
}

func TestBodyLimit(t *testing.T) {
	limit := func(o *handlers.Options) { o.MaxBodyBytes = 64 }
	tooLarge := errorBody(toolgate.EPayloadTooLarge, "the request body is larger than the limit of 64 bytes")
	big := `{"session_id":"s1","tool":"echo","args":{"text":"` + strings.Repeat("x", 64) + `"}}`
	runScenarios(t, []scenario{
		{name: "declared length over the limit", tune: limit,
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: big},
			status:  413, body: tooLarge},
		{name: "refused before the credentials are looked at", tune: limit,
			request: request{method: "POST", path: "/v1/calls", body: big},
			status:  413, body: tooLarge},
		{name: "undeclared length over the limit", tune: limit,
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: big, chunked: true},
			status:  413, body: tooLarge},
		{name: "an answer over the limit", tune: limit,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/results", headers: asSession(sid1), body: big, chunked: true},
			status:  413, body: tooLarge},
		{name: "exactly the limit is read", tune: func(o *handlers.Options) { o.MaxBodyBytes = int64(len(`{"tool":5}`)) },
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":5}`, chunked: true},
			status:  400, body: errorBody(toolgate.EBadRequest, `field "tool" must be a string, not number`)},
	})
}

func TestCORS(t *testing.T) {
	origins := func(o *handlers.Options) { o.AllowedOrigins = []string{"https://app.example"} }
	from := func(origin string, more map[string]string) map[string]string {
		return with(map[string]string{"Origin": origin}, more)
	}
	runScenarios(t, []scenario{
		{name: "preflight from an allowed origin", tune: origins,
			request: request{method: "OPTIONS", path: "/v1/calls", headers: from("https://app.example", map[string]string{
				"Access-Control-Request-Method":  "POST",
				"Access-Control-Request-Headers": "authorization,idempotency-key,last-event-id",
			})},
			status: 200, emptyBody: true,
			header: map[string]string{
				"Access-Control-Allow-Origin":  "https://app.example",
				"Access-Control-Allow-Methods": "POST",
				"Access-Control-Allow-Headers": "Authorization, Idempotency-Key, Last-Event-Id",
				"Access-Control-Max-Age":       "600",
			}},
		{name: "preflight asking for a header not allowed", tune: origins,
			request: request{method: "OPTIONS", path: "/v1/calls", headers: from("https://app.example", map[string]string{
				"Access-Control-Request-Method":  "POST",
				"Access-Control-Request-Headers": "x-custom",
			})},
			status: 200, header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "preflight of a method not allowed", tune: origins,
			request: request{method: "OPTIONS", path: "/v1/calls", headers: from("https://app.example", map[string]string{
				"Access-Control-Request-Method": "PUT",
			})},
			status: 200, header: map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": ""}},
		{name: "request from an allowed origin", tune: origins,
			request: request{method: "GET", path: "/healthz", headers: from("https://app.example", nil)},
			status:  200, body: `{"status":"ok"}` + "\n",
			header: map[string]string{
				"Access-Control-Allow-Origin":      "https://app.example",
				"Access-Control-Expose-Headers":    "Retry-After, Mcp-Session-Id",
				"Access-Control-Allow-Credentials": "",
			}},
		{name: "an error reply carries the headers too", tune: origins,
			request: request{method: "GET", path: "/v1/sessions", headers: from("https://app.example", nil)},
			status:  401, header: map[string]string{"Access-Control-Allow-Origin": "https://app.example"}},
		{name: "request from another origin", tune: origins,
			request: request{method: "GET", path: "/healthz", headers: from("https://evil.example", nil)},
			status:  200, header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "no origins configured, no CORS",
			request: request{method: "GET", path: "/healthz", headers: from("https://app.example", nil)},
			status:  200, header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "no origins configured, a preflight is an unknown route",
			request: request{method: "OPTIONS", path: "/v1/calls", headers: from("https://app.example", map[string]string{"Access-Control-Request-Method": "POST"})},
			status:  404, body: errorBody(toolgate.ENotFound, "no route OPTIONS /v1/calls")},
	})
}

// TestHealthStatusIsTheEnginesAnswer checks that /healthz answers 503
// when the engine is not healthy, without the engine's error text (which
// may name the database's host, user and name) to a caller nobody
// authenticated.
func TestHealthStatusIsTheEnginesAnswer(t *testing.T) {
	ts := newTestServer(t, fakeEngine{Auth: keys{unhealthy: errors.New("FATAL: password authentication failed for user \"secret-user\"")}}, nil, false)
	status, _, body := ts.call(t, request{method: "GET", path: "/healthz"})
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "the database cannot be reached") || strings.Contains(body, "secret-user") {
		t.Fatalf("status %d body %s, want 503 saying the database cannot be reached, without the database's error", status, body)
	}
}
