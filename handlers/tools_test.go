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
	session := asSession("s1")
	runScenarios(t, []scenario{
		{name: "register", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/s1/tools", headers: session,
				body: `{"type":"register_tools","tools":[{"name":"echo","description":"says it back"},{"name":"bad name","description":""}]}`},
			status: 200, body: `{"type":"tools_registered","count":2,"registered":1,"rejected":[{"name":"bad name","code":"BAD_REQUEST","message":"a tool name is letters, digits, _ and -"}]}` + "\n"},
		{name: "register needs a tools array", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/s1/tools", headers: session, body: `{"type":"register_tools"}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body must have a tools array")},
		{name: "register a null tools", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/s1/tools", headers: session, body: `{"tools":null}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body must have a tools array")},
		{name: "register needs a body", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/s1/tools", headers: session},
			status:  400, body: errorBody(toolgate.EBadRequest, "a JSON body is required")},
		{name: "register refused by the engine",
			engine: tools(fakeTools{register: func(string, toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
				return nil, toolgate.Errorf(toolgate.EConflict, "the session is closed")
			}}),
			request: request{method: "POST", path: "/v1/sessions/s1/tools", headers: session, body: `{"tools":[]}`},
			status:  409, body: errorBody(toolgate.EConflict, "the session is closed")},

		{name: "remove", engine: tools(fakeTools{remove: func(sid, name string) error { return nil }}),
			request: request{method: "DELETE", path: "/v1/sessions/s1/tools/echo", headers: session},
			status:  200, body: `{"name":"echo","type":"tool_removed"}` + "\n"},
		{name: "remove a tool that is not there",
			engine:  tools(fakeTools{remove: func(sid, name string) error { return toolgate.Errorf(toolgate.EToolNotFound, "no tool %s", name) }}),
			request: request{method: "DELETE", path: "/v1/sessions/s1/tools/echo", headers: session},
			status:  404, body: errorBody(toolgate.EToolNotFound, "no tool echo")},

		{name: "list", engine: tools(fakeTools{list: func(sid string) ([]toolgate.ToolInfo, error) { return aSession.Tools, nil }}),
			request: request{method: "GET", path: "/api/tools", headers: asAgent},
			status:  200, body: `{"tools":[{"name":"echo","description":"says it back","source":{"kind":"remote","session_id":"s1"},"online":true}]}` + "\n"},
		{name: "list needs the agent key",
			request: request{method: "GET", path: "/api/tools", headers: session},
			status:  401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},
		{name: "list of a session that is gone",
			engine: tools(fakeTools{list: func(sid string) ([]toolgate.ToolInfo, error) {
				return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
			}}),
			request: request{method: "GET", path: "/api/tools?session_id=s9", headers: asAgent},
			status:  404, body: errorBody(toolgate.ENotFound, "no session s9")},
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
	var listed received[string]
	ts := newTestServer(t, fakeEngine{Tools: &fakeTools{
		register: func(sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
			registrations.put(registration{sid, req})
			return &toolgate.ToolsRegistered{}, nil
		},
		remove: func(sid, name string) error { removed.put([2]string{sid, name}); return nil },
		list:   func(sid string) ([]toolgate.ToolInfo, error) { listed.put(sid); return nil, nil },
	}}, nil, false)

	ts.call(t, request{method: "POST", path: "/v1/sessions/s2/tools", headers: asSession("s2"),
		body: `{"type":"register_tools","replace":true,"tools":[{"name":"echo","description":"d","parameters":{"type":"object"},"timeout_ms":500,"requires_approval":"always"}]}`})
	got := registrations.only(t)
	if got.sid != "s2" || !got.req.Replace || len(got.req.Tools) != 1 {
		t.Fatalf("the engine got %+v", got)
	}
	spec := got.req.Tools[0]
	if spec.Name != "echo" || spec.TimeoutMS != 500 || spec.RequiresApproval != toolgate.ApprovalAlways || string(spec.Parameters) != `{"type":"object"}` {
		t.Errorf("the engine got the spec %+v", spec)
	}

	ts.call(t, request{method: "DELETE", path: "/v1/sessions/s2/tools/read_page", headers: asSession("s2")})
	if got := removed.only(t); got != [2]string{"s2", "read_page"} {
		t.Errorf("removed %v, want s2's read_page", got)
	}

	_, _, body := ts.call(t, request{method: "GET", path: "/api/tools?session_id=s3", headers: asAgent})
	if sid := listed.only(t); sid != "s3" {
		t.Errorf("listed the tools of %q, want s3", sid)
	}
	if body != `{"tools":null}`+"\n" {
		t.Errorf("an empty list is %s", body)
	}
}
