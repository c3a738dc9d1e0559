package handlers_test

import (
	"testing"

	"github.com/toolgate/toolgate"
)

func TestTools(t *testing.T) {
	tools := func(f fakeTools) fakeEngine { return fakeEngine{Tools: &f} }
	registered := tools(fakeTools{register: func(sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
		return &toolgate.ToolsRegistered{Type: "tools_registered", Count: 2, Registered: 1,
			Rejected: []toolgate.ToolRejection{{Name: "bad name", Code: toolgate.EBadRequest, Message: "a tool name is letters, digits, _ and -"}}}, nil
	}})
	session := asSession(sid1)
	runScenarios(t, []scenario{
		{name: "register", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: session,
				body: `{"type":"register_tools","tools":[{"name":"echo","description":"says it back"},{"name":"bad name","description":""}]}`},
			status: 200, body: `{"type":"tools_registered","count":2,"registered":1,"rejected":[{"name":"bad name","code":"BAD_REQUEST","message":"a tool name is letters, digits, _ and -"}]}` + "\n"},
		{name: "register needs a tools array", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: session, body: `{"type":"register_tools"}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body must have a tools array")},
		{name: "register a null tools", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: session, body: `{"tools":null}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body must have a tools array")},
		{name: "register needs a body", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: session},
			status:  400, body: errorBody(toolgate.EBadRequest, "a JSON body is required")},
		{name: "register refused by the engine",
			engine: tools(fakeTools{register: func(string, toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
				return nil, toolgate.Errorf(toolgate.EConflict, "the session is closed")
			}}),
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: session, body: `{"tools":[]}`},
			status:  409, body: errorBody(toolgate.EConflict, "the session is closed")},

		{name: "remove", engine: tools(fakeTools{remove: func(sid, name string) error { return nil }}),
			request: request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/echo", headers: session},
			status:  200, body: `{"name":"echo","type":"tool_removed"}` + "\n"},
		{name: "remove a tool that is not there",
			engine:  tools(fakeTools{remove: func(sid, name string) error { return toolgate.Errorf(toolgate.EToolNotFound, "no tool %s", name) }}),
			request: request{method: "DELETE", path: "/v1/sessions/" + sid1 + "/tools/echo", headers: session},
			status:  404, body: errorBody(toolgate.EToolNotFound, "no tool echo")},

		{name: "list", engine: tools(fakeTools{list: func(toolgate.ToolQuery) (*toolgate.ToolList, error) {
			next := "s1/echo"
			return &toolgate.ToolList{Tools: aSession.Tools, NextAfter: &next}, nil
		}}),
			request: request{method: "GET", path: "/api/tools", headers: asAgent},
			status:  200, body: `{"tools":[{"name":"echo","description":"says it back","source":{"kind":"remote","session_id":"s1"},"online":true}],"next_after":"s1/echo"}` + "\n"},
		{name: "list with a limit that is not a whole number",
			request: request{method: "GET", path: "/api/tools?limit=ten", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "limit must be a positive whole number")},
		{name: "list needs the agent key",
			request: request{method: "GET", path: "/api/tools", headers: session},
			status:  401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},
		{name: "list of a session that is gone",
			engine: tools(fakeTools{list: func(q toolgate.ToolQuery) (*toolgate.ToolList, error) {
				return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", q.SessionID)
			}}),
			request: request{method: "GET", path: "/api/tools?session_id=" + sid9, headers: asAgent},
			status:  404, body: errorBody(toolgate.ENotFound, "no session "+sid9)},
	})
}

// TestToolsReceive checks what the engine is handed: the session of the
// path or query, the parsed specs, the tool's name.
func TestToolsReceive(t *testing.T) {
	type registration struct {
		sid string
		req toolgate.RegisterToolsRequest
	}
	var registrations received[registration]
	var removed received[[2]string]
	var listed received[toolgate.ToolQuery]
	ts := newTestServer(t, fakeEngine{Tools: &fakeTools{
		register: func(sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
			registrations.put(registration{sid, req})
			return &toolgate.ToolsRegistered{}, nil
		},
		remove: func(sid, name string) error { removed.put([2]string{sid, name}); return nil },
		list: func(q toolgate.ToolQuery) (*toolgate.ToolList, error) {
			listed.put(q)
			return &toolgate.ToolList{}, nil
		},
	}}, nil, false)

	ts.call(t, request{method: "POST", path: "/v1/sessions/" + sid2 + "/tools", headers: asSession(sid2),
		body: `{"type":"register_tools","replace":true,"tools":[{"name":"echo","description":"d","parameters":{"type":"object"},"timeout_ms":500,"requires_approval":"always"}]}`})
	got := registrations.only(t)
	if got.sid != sid2 || !got.req.Replace || len(got.req.Tools) != 1 {
		t.Fatalf("the engine got %+v", got)
	}
	spec := got.req.Tools[0]
	if spec.Name != "echo" || spec.TimeoutMS != 500 || spec.RequiresApproval != toolgate.ApprovalAlways || string(spec.Parameters) != `{"type":"object"}` {
		t.Errorf("the engine got the spec %+v", spec)
	}

	ts.call(t, request{method: "DELETE", path: "/v1/sessions/" + sid2 + "/tools/read_page", headers: asSession(sid2)})
	if got := removed.only(t); got != [2]string{sid2, "read_page"} {
		t.Errorf("removed %v, want s2's read_page", got)
	}

	_, _, body := ts.call(t, request{method: "GET", path: "/api/tools?session_id=" + sid3, headers: asAgent})
	if q := listed.only(t); q != (toolgate.ToolQuery{SessionID: sid3}) {
		t.Errorf("the tool query is %+v, want the tools of %s", q, sid3)
	}
	if body != `{"tools":null,"next_after":null}`+"\n" {
		t.Errorf("an empty list is %s", body)
	}
	listed = received[toolgate.ToolQuery]{}
	ts.call(t, request{method: "GET", path: "/api/tools?limit=20&after=s4%2Fecho", headers: asAgent})
	if q := listed.only(t); q != (toolgate.ToolQuery{After: "s4/echo", Limit: 20}) {
		t.Errorf("the tool query is %+v, want a page of 20 after s4/echo", q)
	}
}
