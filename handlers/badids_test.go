package handlers_test

import (
	"testing"

	"github.com/toolgate/toolgate"
)

// TestIDsAndTextAtTheBoundary: an id in a path or a query that is not
// shaped as the gateway's ids (a lowercase UUID) names nothing, and a
// name, a filter or an Idempotency-Key that is not printable UTF-8 text
// cannot be stored: each is refused before the engine is asked (the fake
// engine has no parts, so reaching it would be a 500), with the same
// reply on SQLite and PostgreSQL, where such text once reached the
// database and came back as a 500.
func TestIDsAndTextAtTheBoundary(t *testing.T) {
	asS1 := asSession(sid1)
	noSession := func(id string) string {
		return `"message":"no session \"` + id + `\" (a session id is a lowercase UUID, as the gateway gives it)"`
	}
	noCall := func(id string) string {
		return `"message":"no call \"` + id + `\" (a call id is a lowercase UUID, as the gateway gives it)"`
	}
	upper := "01A20B24-C8E2-79CB-B053-000000000001" // another spelling of sid1
	runScenarios(t, []scenario{
		// Session ids in paths: 404 once the credentials are checked.
		{name: "read a session whose id holds a NUL", request: request{method: "GET", path: "/v1/sessions/a%00b", headers: asAgent},
			status: 404, contains: []string{`"code":"NOT_FOUND"`, noSession(`a\\x00b`)}},
		{name: "read a session by an uppercase id", request: request{method: "GET", path: "/v1/sessions/" + upper, headers: asAgent},
			status: 404, contains: []string{noSession(upper)}},
		{name: "close a session whose id is not UTF-8", request: request{method: "POST", path: "/v1/sessions/a%FFb/close", headers: asAgent},
			status: 404, contains: []string{noSession(`a\\xffb`)}},
		{name: "a session route checks the token first", request: request{method: "POST", path: "/v1/sessions/a%00b/results", body: "{}"},
			status: 401, contains: []string{`"code":"UNAUTHENTICATED"`}},
		{name: "a stream of a session whose id cannot exist", request: request{method: "GET", path: "/v1/sessions/s1/events?access_token=token-s1"},
			status: 404, contains: []string{noSession("s1")}},
		// Call ids in paths.
		{name: "read a call whose id holds a NUL", request: request{method: "GET", path: "/v1/calls/a%00b", headers: asAgent},
			status: 404, contains: []string{noCall(`a\\x00b`)}},
		{name: "cancel a call whose id is not a UUID", request: request{method: "POST", path: "/v1/calls/a%00b/cancel", headers: asAgent},
			status: 404, contains: []string{noCall(`a\\x00b`)}},
		{name: "a call route checks the agent key first", request: request{method: "GET", path: "/v1/calls/nope"},
			status: 401, contains: []string{`"code":"UNAUTHENTICATED"`}},
		// A tool's name in a path: no registration can hold it.
		{name: "remove a tool whose name holds a NUL", request: request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/a%00b", headers: asS1},
			status: 404, body: errorBody(toolgate.EToolNotFound, `session `+sid1+` has no tool "a\x00b"`)},
		{name: "remove a tool whose name is not UTF-8", request: request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/a%FF", headers: asS1},
			status: 404, body: errorBody(toolgate.EToolNotFound, `session `+sid1+` has no tool "a\xff"`)},
		// Query filters.
		{name: "history filtered by a session id that cannot exist", request: request{method: "GET", path: "/v1/calls?session_id=a%00b", headers: asAgent},
			status: 400, body: errorBody(toolgate.EBadRequest, `session_id must be a session id as the gateway gives it (a lowercase UUID), not "a\x00b"`)},
		{name: "history filtered by a tool name holding a NUL", request: request{method: "GET", path: "/v1/calls?tool=a%00b", headers: asAgent},
			status: 400, body: errorBody(toolgate.EBadRequest, "tool holds a NUL character (U+0000) at byte 1")},
		{name: "history filtered by a tool name that is not UTF-8", request: request{method: "GET", path: "/v1/calls?tool=%ff", headers: asAgent},
			status: 400, body: errorBody(toolgate.EBadRequest, "tool is not valid UTF-8 (at byte 0)")},
		{name: "the tools of a session whose id cannot exist", request: request{method: "GET", path: "/api/tools?session_id=a%00b", headers: asAgent},
			status: 404, contains: []string{noSession(`a\\x00b`)}},
		{name: "a tool page after a cursor holding a NUL", request: request{method: "GET", path: "/api/tools?after=%2Fa%00b", headers: asAgent},
			status: 400, body: errorBody(toolgate.EBadRequest, "after holds a NUL character (U+0000) at byte 2")},
		// POST /v1/calls: the session in the body, the Idempotency-Key header.
		{name: "a call of a session whose id holds a NUL", request: request{method: "POST", path: "/v1/calls", headers: asAgent,
			body: `{"session_id":"a\u0000b","tool":"echo"}`},
			status: 404, contains: []string{noSession(`a\\x00b`)}},
		{name: "an Idempotency-Key that is not UTF-8", request: request{method: "POST", path: "/v1/calls",
			headers: with(asAgent, map[string]string{"Idempotency-Key": "k\xff"}), body: `{"tool":"echo"}`},
			status: 400, body: errorBody(toolgate.EBadRequest, "Idempotency-Key is not valid UTF-8 (at byte 1)")},
		{name: "an Idempotency-Key holding a control character", request: request{method: "POST", path: "/v1/calls",
			headers: with(asAgent, map[string]string{"Idempotency-Key": "k\u0085"}), body: `{"tool":"echo"}`},
			status: 400, body: errorBody(toolgate.EBadRequest, "Idempotency-Key holds the control character U+0085 at byte 1")},
	})
}
