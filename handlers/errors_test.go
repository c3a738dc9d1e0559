package handlers_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate"
)

// cancelFails is an engine whose CancelCall fails with err: the errors
// below go out through POST /v1/calls/{id}/cancel.
func cancelFails(err error) fakeEngine {
	return fakeEngine{Calls: &fakeCalls{cancel: func(string) (*toolgate.Call, error) { return nil, err }}}
}

func cancelRequest() request {
	return request{method: "POST", path: "/v1/calls/" + call1 + "/cancel", headers: asAgent}
}

func TestEngineErrorsMapToStatuses(t *testing.T) {
	statuses := []struct {
		code   string
		status int
	}{
		{toolgate.EBadRequest, 400},
		{toolgate.EUnauthenticated, 401},
		{toolgate.EPermissionDenied, 403},
		{toolgate.ENotFound, 404},
		{toolgate.EToolNotFound, 404},
		{toolgate.EConflict, 409},
		{toolgate.ECallClosed, 409},
		{toolgate.EPayloadTooLarge, 413},
		{toolgate.EInvalidArgs, 422},
		{toolgate.ERateLimited, 429},
		{toolgate.ESessionOffline, 503},
		{toolgate.ETimeout, 504},
		{toolgate.EInternal, 500},
		{toolgate.EUnsupportedMediaType, 415},
		{toolgate.EMisdirectedRequest, 421},
		{"A_CODE_NOBODY_MAPPED", 500},
	}
	var scenarios []scenario
	for _, s := range statuses {
		scenarios = append(scenarios, scenario{
			name:    s.code,
			engine:  cancelFails(toolgate.Errorf(s.code, "it went %s", "wrong")),
			request: cancelRequest(),
			status:  s.status,
			body:    errorBody(s.code, "it went wrong"),
		})
	}
	scenarios = append(scenarios,
		scenario{name: "an error of no code is internal and hidden",
			engine:  cancelFails(errors.New("disk I/O error: /var/lib/toolgate.db")),
			request: cancelRequest(),
			status:  500, body: `{"error":{"code":"INTERNAL_ERROR","message":"Internal error."}}` + "\n"},
		scenario{name: "a wrapped error keeps its code",
			engine:  cancelFails(fmt.Errorf("cancel: %w", toolgate.Errorf(toolgate.ECallClosed, "the call has ended"))),
			request: cancelRequest(),
			status:  409, body: errorBody(toolgate.ECallClosed, "the call has ended")},
		scenario{name: "details go out",
			engine:  cancelFails(toolgate.Errorf(toolgate.EInvalidArgs, "bad args").WithDetails(map[string]any{"path": "/text", "want": "string"})),
			request: cancelRequest(),
			status:  422, body: `{"error":{"code":"INVALID_ARGS","details":{"path":"/text","want":"string"},"message":"bad args"}}` + "\n"},
		scenario{name: "retry after goes out as a header",
			engine:  cancelFails(&toolgate.Error{Code: toolgate.ERateLimited, Message: "slow down", RetryAfterSeconds: 7}),
			request: cancelRequest(),
			status:  429, body: errorBody(toolgate.ERateLimited, "slow down"),
			header: map[string]string{"Retry-After": "7", "Content-Type": "application/json; charset=utf-8"}},
		scenario{name: "no retry after unless set",
			engine:  cancelFails(toolgate.Errorf(toolgate.ERateLimited, "slow down")),
			request: cancelRequest(),
			status:  429, header: map[string]string{"Retry-After": ""}},
	)
	runScenarios(t, scenarios)
}

func TestUnknownRoutes(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "unknown API path", request: request{method: "GET", path: "/v1/nothing"},
			status: 404, body: `{"error":{"code":"NOT_FOUND","message":"no route GET /v1/nothing"}}` + "\n",
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{name: "unknown method on a known path", request: request{method: "PUT", path: "/v1/calls", headers: asAgent},
			status: 404, body: errorBody(toolgate.ENotFound, "no route PUT /v1/calls")},
		{name: "POST to a page", request: request{method: "POST", path: "/index.html"},
			status: 404, body: errorBody(toolgate.ENotFound, "no route POST /index.html")},
		{name: "unknown file", request: request{method: "GET", path: "/nothing.js"},
			status: 404, body: errorBody(toolgate.ENotFound, "no route GET /nothing.js")},
	})
}

func TestAssets(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "the page", request: request{method: "GET", path: "/"},
			status: 200, contains: []string{"<!doctype html>", "toolgate"},
			header: map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}},
		{name: "the SDK", request: request{method: "GET", path: "/toolgate.js"},
			status: 200, contains: []string{"export"},
			header: map[string]string{"Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-cache"}},
		{name: "the SDK's types", request: request{method: "GET", path: "/toolgate.d.ts"},
			status: 200, contains: []string{"export"},
			header: map[string]string{"Content-Type": "application/typescript; charset=utf-8"}},
		{name: "the style", request: request{method: "GET", path: "/style.css"},
			status: 200, header: map[string]string{"Content-Type": "text/css; charset=utf-8"}},
	})
}

// TestBadJSON pins what a body that is not the JSON a route wants is told,
// on a strict route (POST /v1/calls) and on a lenient one (tools).
func TestBadJSON(t *testing.T) {
	strict := func(name, body, message string) scenario {
		return scenario{name: name,
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: body},
			status:  400, body: errorBody(toolgate.EBadRequest, message)}
	}
	registered := fakeEngine{Tools: &fakeTools{register: func(string, toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
		return &toolgate.ToolsRegistered{Type: "tools_registered"}, nil
	}}}
	runScenarios(t, []scenario{
		strict("no body", "", "a JSON body is required"),
		strict("a blank body", " \n\t", "a JSON body is required"),
		strict("cut short", `{"tool":`, "the body is not valid JSON: it ends too early"),
		strict("a syntax error", `{"tool" "echo"}`, "the body is not valid JSON (at byte 9): invalid character '\"' after object key"),
		strict("not an object", `["echo"]`, "the body must be an object, not array"),
		strict("a field of the wrong type", `{"tool":["echo"]}`, `field "tool" must be a string, not array`),
		strict("a number of the wrong type", `{"timeout_ms":"soon"}`, `field "timeout_ms" must be a number, not string`),
		strict("a boolean of the wrong type", `{"wait":"no"}`, `field "wait" must be a boolean, not string`),
		strict("an unknown field", `{"tool":"echo","tools":[]}`, `unknown field "tools"`),
		strict("two values", `{} {}`, "the body must hold one JSON value"),
		{name: "a lenient route takes unknown fields", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: asSession(sid1), body: `{"tools":[],"extra":1}`},
			status:  200, body: `{"type":"tools_registered","count":0,"registered":0,"rejected":null}` + "\n"},
		{name: "a lenient route still wants one value", engine: registered,
			request: request{method: "POST", path: "/v1/sessions/" + sid1 + "/tools", headers: asSession(sid1), body: `{"tools":[]}x`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body must hold one JSON value")},
	})
}
