package handlers_test

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate"
)

// aSession is the session the fakes below read: s1 of "tab", online with
// one tool.
var aSession = toolgate.SessionView{
	Session: toolgate.Session{ID: "s1", Client: toolgate.ClientInfo{Name: "tab"},
		CreatedAt:  toolgate.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)),
		LastSeenAt: toolgate.NewTime(time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC))},
	Online:     true,
	Connection: toolgate.Connection{State: toolgate.PresenceConnected},
	Tools:      []toolgate.ToolInfo{{ToolSpec: toolgate.ToolSpec{Name: "echo", Description: "says it back"}, Source: toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: "s1"}, Online: true}},
}

const aSessionJSON = `{"session_id":"s1","client":{"name":"tab"},"auto_approve":false,"created_at":"2025-01-02T03:04:05.006Z","last_seen_at":"2025-01-02T03:04:06.000Z","online":true,"connection":{"state":"connected","transport":null,"heartbeat_ms":null,"connected_at":null,"cuts":0,"last_cut":null},"tools":[{"name":"echo","description":"says it back","source":{"kind":"remote","session_id":"s1"},"online":true}]}`

var created = &toolgate.SessionCreated{SessionID: "s1", Token: "token-s1", HeartbeatMS: 15000, PollWaitMS: 25000, DefaultTimeoutMS: 60000}

const createdJSON = `{"session_id":"s1","token":"token-s1","heartbeat_ms":15000,"poll_wait_ms":25000,"default_timeout_ms":60000}` + "\n"

func TestSessions(t *testing.T) {
	sessions := func(f fakeSessions) fakeEngine { return fakeEngine{Sessions: &f} }
	createOK := sessions(fakeSessions{create: func(toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) { return created, nil }})
	viewOK := sessions(fakeSessions{view: func(sid string) (*toolgate.SessionView, error) { return &aSession, nil }})
	closeOK := sessions(fakeSessions{close: func(sid string) error { return nil }})
	client := map[string]string{"Authorization": "Bearer " + clientKey}
	runScenarios(t, []scenario{
		{name: "create", engine: createOK,
			request: request{method: "POST", path: "/v1/sessions", headers: client, body: `{"client":{"name":"tab"}}`},
			status:  201, body: createdJSON,
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{name: "create with no body", engine: createOK,
			request: request{method: "POST", path: "/v1/sessions", headers: client},
			status:  201, body: createdJSON},
		{name: "create with the agent key", engine: createOK,
			request: request{method: "POST", path: "/v1/sessions", headers: asAgent, body: "{}"},
			status:  201, body: createdJSON},
		{name: "create refuses unknown fields", engine: createOK,
			request: request{method: "POST", path: "/v1/sessions", headers: client, body: `{"clients":{}}`},
			status:  400, body: errorBody(toolgate.EBadRequest, `unknown field "clients"`)},
		{name: "create refused by the engine",
			engine: sessions(fakeSessions{create: func(toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
				return nil, toolgate.Errorf(toolgate.EBadRequest, "metadata is too large")
			}}),
			request: request{method: "POST", path: "/v1/sessions", headers: client, body: "{}"},
			status:  400, body: errorBody(toolgate.EBadRequest, "metadata is too large")},

		{name: "read", engine: viewOK,
			request: request{method: "GET", path: "/v1/sessions/" + sid1, headers: asSession(sid1)},
			status:  200, body: aSessionJSON + "\n"},
		{name: "read a session that is gone",
			engine: sessions(fakeSessions{view: func(sid string) (*toolgate.SessionView, error) {
				return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
			}}),
			request: request{method: "GET", path: "/v1/sessions/" + sid9, headers: asAgent},
			status:  404, body: errorBody(toolgate.ENotFound, "no session "+sid9)},

		{name: "list", engine: sessions(fakeSessions{list: func(toolgate.SessionQuery) (*toolgate.SessionList, error) {
			return &toolgate.SessionList{Sessions: []toolgate.SessionView{aSession}}, nil
		}}),
			request: request{method: "GET", path: "/v1/sessions", headers: asAgent},
			status:  200, body: `{"sessions":[` + aSessionJSON + `],"next_before":null}` + "\n"},
		{name: "list with a next page", engine: sessions(fakeSessions{list: func(toolgate.SessionQuery) (*toolgate.SessionList, error) {
			next := "s1"
			return &toolgate.SessionList{Sessions: []toolgate.SessionView{aSession}, NextBefore: &next}, nil
		}}),
			request: request{method: "GET", path: "/v1/sessions?limit=1", headers: asAgent},
			status:  200, body: `{"sessions":[` + aSessionJSON + `],"next_before":"s1"}` + "\n"},
		{name: "list none", engine: sessions(fakeSessions{list: func(toolgate.SessionQuery) (*toolgate.SessionList, error) {
			return &toolgate.SessionList{Sessions: []toolgate.SessionView{}}, nil
		}}),
			request: request{method: "GET", path: "/v1/sessions", headers: asAgent},
			status:  200, body: `{"sessions":[],"next_before":null}` + "\n"},
		{name: "list with a limit that is not a positive whole number",
			request: request{method: "GET", path: "/v1/sessions?limit=0", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "limit must be a positive whole number")},
		{name: "list with a cursor the engine refuses",
			engine: sessions(fakeSessions{list: func(toolgate.SessionQuery) (*toolgate.SessionList, error) {
				return nil, toolgate.Errorf(toolgate.EBadRequest, "before must be a session id from next_before")
			}}),
			request: request{method: "GET", path: "/v1/sessions?before=01a20b24-c8e2-79cb-b053-d813ec727e4e", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "before must be a session id from next_before")},
		// Ids are compared as text: another spelling of a UUID would give a wrong page.
		{name: "list with a cursor that is not an id as the gateway prints it",
			request: request{method: "GET", path: "/v1/sessions?before=01A20B24-C8E2-79CB-B053-D813EC727E4E", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, cursorRefusal("session"))},
		{name: "list with a cursor that is no id",
			request: request{method: "GET", path: "/v1/sessions?before=zz", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, cursorRefusal("session"))},

		{name: "close", engine: closeOK,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/close", headers: asSession(sid1)},
			status:  200, body: `{"session_id":"` + sid1 + `","type":"session_closed"}` + "\n"},
		{name: "close by DELETE with the agent key", engine: closeOK,
			request: request{method: "DELETE", path: "/v1/sessions/" + sid1, headers: asAgent},
			status:  200, body: `{"session_id":"` + sid1 + `","type":"session_closed"}` + "\n"},
		{name: "close refused by the engine",
			engine:  sessions(fakeSessions{close: func(string) error { return toolgate.Errorf(toolgate.ENotFound, "no session s1") }}),
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/close", headers: asSession(sid1)},
			status:  404, body: errorBody(toolgate.ENotFound, "no session s1")},
	})
}

// TestSessionsReceive checks what the engine is handed: the parsed request
// and the session named in the path.
func TestSessionsReceive(t *testing.T) {
	var requests received[toolgate.CreateSessionRequest]
	var viewed, closed received[string]
	var queries received[toolgate.SessionQuery]
	ts := newTestServer(t, fakeEngine{Sessions: &fakeSessions{
		create: func(req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
			requests.put(req)
			return created, nil
		},
		view: func(sid string) (*toolgate.SessionView, error) { viewed.put(sid); return &aSession, nil },
		list: func(q toolgate.SessionQuery) (*toolgate.SessionList, error) {
			queries.put(q)
			return &toolgate.SessionList{}, nil
		},
		close: func(sid string) error {
			closed.put(sid)
			return nil
		},
	}}, nil, false)

	ts.call(t, request{method: "POST", path: "/v1/sessions", headers: asAgent,
		body: `{"client":{"name":"tab","version":"1.2","platform":"web"},"metadata":{"user":"ann"}}`})
	req := requests.only(t)
	if req.Client != (toolgate.ClientInfo{Name: "tab", Version: "1.2", Platform: "web"}) || string(req.Metadata) != `{"user":"ann"}` {
		t.Errorf("the engine got %+v (metadata %s)", req, req.Metadata)
	}
	ts.call(t, request{method: "GET", path: "/v1/sessions/" + sid7, headers: asSession(sid7)})
	if sid := viewed.only(t); sid != sid7 {
		t.Errorf("read session %q, want %s", sid, sid7)
	}
	ts.call(t, request{method: "DELETE", path: "/v1/sessions/" + sid8, headers: asSession(sid8)})
	if sid := closed.only(t); sid != sid8 {
		t.Errorf("closed session %q, want %s", sid, sid8)
	}
	ts.call(t, request{method: "GET", path: "/v1/sessions?limit=7&before=01a20b24-c8e2-79cb-b053-d813ec727e4e", headers: asAgent})
	if q := queries.only(t); q != (toolgate.SessionQuery{Before: "01a20b24-c8e2-79cb-b053-d813ec727e4e", Limit: 7}) {
		t.Errorf("the list query is %+v", q)
	}
	queries = received[toolgate.SessionQuery]{}
	ts.call(t, request{method: "GET", path: "/v1/sessions", headers: asAgent})
	if q := queries.only(t); q != (toolgate.SessionQuery{}) {
		t.Errorf("the list query without parameters is %+v", q)
	}
}

// cursorRefusal is the message of a before= that is not an id of a what
// (session, call) as the gateway prints it.
func cursorRefusal(what string) string {
	return "before must be a " + what + " id from next_before, as the gateway gives it (a lowercase UUID such as 01a20b24-c8e2-79cb-b053-d813ec727e4e)"
}
