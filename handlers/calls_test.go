package handlers_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// aCall returns call c1 of echo in status.
func aCall(status toolgate.CallStatus) *toolgate.Call {
	at := toolgate.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	return &toolgate.Call{ID: "c1", SessionID: "s1", Tool: "echo", Args: []byte(`{"text":"hi"}`),
		Status: status, CreatedAt: at, Deadline: toolgate.NewTime(at.Add(time.Minute))}
}

// callJSON is aCall(status) as the wire has it.
func callJSON(status string) string {
	return `{"id":"c1","session_id":"s1","tool":"echo","args":{"text":"hi"},"status":"` + status +
		`","created_at":"2025-01-02T03:04:05.000Z","delivered_at":null,"completed_at":null,"deadline":"2025-01-02T03:05:05.000Z","duration_ms":null,"attempts":0}` + "\n"
}

func TestCalls(t *testing.T) {
	calls := func(f fakeCalls) fakeEngine { return fakeEngine{Calls: &f} }
	created := func(toolgate.CallRequest, string) (*toolgate.Call, error) { return aCall(toolgate.StatusPending), nil }
	waited := func(_ context.Context, id string, _ time.Duration) (*toolgate.Call, error) {
		return aCall(toolgate.StatusCompleted), nil
	}
	// waitCut is a wait the caller's going away ended.
	waitCut := func(context.Context, string, time.Duration) (*toolgate.Call, error) { return nil, context.Canceled }
	runScenarios(t, []scenario{
		{name: "create and wait", engine: calls(fakeCalls{create: created, wait: waited}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"session_id":"` + sid1 + `","tool":"echo","args":{"text":"hi"}}`},
			status:  200, body: callJSON("completed")},
		{name: "create without waiting", engine: calls(fakeCalls{create: created}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":"echo","wait":false}`},
			status:  202, body: callJSON("pending")},
		{name: "create with wait true", engine: calls(fakeCalls{create: created, wait: waited}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":"echo","wait":true}`},
			status:  200, body: callJSON("completed")},
		{name: "a wait cut short answers with the record as it is",
			engine: calls(fakeCalls{create: created, wait: waitCut,
				get: func(context.Context, string) (*toolgate.Call, error) { return aCall(toolgate.StatusDelivered), nil }}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":"echo"}`},
			status:  202, body: callJSON("delivered")},
		{name: "a wait cut short with the record unreadable",
			engine: calls(fakeCalls{create: created,
				wait: func(context.Context, string, time.Duration) (*toolgate.Call, error) {
					return nil, toolgate.Errorf(toolgate.ETimeout, "gave up")
				},
				get: func(context.Context, string) (*toolgate.Call, error) { return nil, errors.New("store closed") }}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":"echo"}`},
			status:  504, body: errorBody(toolgate.ETimeout, "gave up")},
		{name: "create refused by the engine",
			engine: calls(fakeCalls{create: func(toolgate.CallRequest, string) (*toolgate.Call, error) {
				return nil, toolgate.Errorf(toolgate.ESessionOffline, "session s1 is offline")
			}}),
			request: request{method: "POST", path: "/v1/calls", headers: asAgent, body: `{"tool":"echo"}`},
			status:  503, body: errorBody(toolgate.ESessionOffline, "session s1 is offline")},
		{name: "create needs the agent key",
			request: request{method: "POST", path: "/v1/calls", headers: asSession(sid1), body: `{"tool":"echo"}`},
			status:  401, body: errorBody(toolgate.EUnauthenticated, "invalid agent key")},

		{name: "get", engine: calls(fakeCalls{wait: waited}),
			request: request{method: "GET", path: "/v1/calls/" + call1, headers: asAgent},
			status:  200, body: callJSON("completed")},
		{name: "get with a negative wait",
			request: request{method: "GET", path: "/v1/calls/" + call1 + "?wait_ms=-5", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, `wait_ms must be a whole number of milliseconds, not "-5"`)},
		{name: "get with a wait that is not a number",
			request: request{method: "GET", path: "/v1/calls/" + call1 + "?wait_ms=1s", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, `wait_ms must be a whole number of milliseconds, not "1s"`)},
		{name: "get a call that is not there",
			engine: calls(fakeCalls{wait: func(_ context.Context, id string, _ time.Duration) (*toolgate.Call, error) {
				return nil, toolgate.Errorf(toolgate.ENotFound, "no call %s", id)
			}}),
			request: request{method: "GET", path: "/v1/calls/" + call9, headers: asAgent},
			status:  404, body: errorBody(toolgate.ENotFound, "no call "+call9+"")},

		{name: "list", engine: calls(fakeCalls{list: func(toolgate.CallQuery) (*toolgate.CallList, error) {
			next := "c0"
			return &toolgate.CallList{Calls: []*toolgate.Call{aCall(toolgate.StatusFailed)}, NextBefore: &next}, nil
		}}),
			request: request{method: "GET", path: "/v1/calls", headers: asAgent},
			status:  200, body: `{"calls":[` + callJSON("failed")[:len(callJSON("failed"))-1] + `],"next_before":"c0"}` + "\n"},
		{name: "list with a limit of zero",
			request: request{method: "GET", path: "/v1/calls?limit=0", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "limit must be a positive whole number")},
		{name: "list with a limit that is not a number",
			request: request{method: "GET", path: "/v1/calls?limit=ten", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "limit must be a positive whole number")},
		{name: "list refused by the engine",
			engine: calls(fakeCalls{list: func(toolgate.CallQuery) (*toolgate.CallList, error) {
				return nil, toolgate.Errorf(toolgate.EBadRequest, "before is not a call id")
			}}),
			request: request{method: "GET", path: "/v1/calls?before=01a20b24-c8e2-79cb-b053-d813ec727e4e", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, "before is not a call id")},
		{name: "list with a cursor in braces",
			request: request{method: "GET", path: "/v1/calls?before=%7B01a20b24-c8e2-79cb-b053-d813ec727e4e%7D", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, cursorRefusal("call"))},
		{name: "list with a cursor that is no id",
			request: request{method: "GET", path: "/v1/calls?before=c9", headers: asAgent},
			status:  400, body: errorBody(toolgate.EBadRequest, cursorRefusal("call"))},

		{name: "cancel", engine: calls(fakeCalls{cancel: func(string) (*toolgate.Call, error) { return aCall(toolgate.StatusCancelled), nil }}),
			request: request{method: "POST", path: "/v1/calls/" + call1 + "/cancel", headers: asAgent},
			status:  200, body: callJSON("cancelled")},
		{name: "cancel a call that has ended",
			engine:  cancelFails(toolgate.Errorf(toolgate.ECallClosed, "the call has ended")),
			request: request{method: "POST", path: "/v1/calls/" + call1 + "/cancel", headers: asAgent},
			status:  409, body: errorBody(toolgate.ECallClosed, "the call has ended")},
	})
}

// TestCallsReceive checks what the engine is handed: the parsed request
// and idempotency key, how long to wait, the history query.
func TestCallsReceive(t *testing.T) {
	type creation struct {
		req toolgate.CallRequest
		key string
	}
	type wait struct {
		id   string
		wait time.Duration
	}
	var creations received[creation]
	var waits received[wait]
	var queries received[toolgate.CallQuery]
	var cancels received[string]
	ts := newTestServer(t, fakeEngine{Calls: &fakeCalls{
		create: func(req toolgate.CallRequest, key string) (*toolgate.Call, error) {
			creations.put(creation{req, key})
			return aCall(toolgate.StatusPending), nil
		},
		wait: func(_ context.Context, id string, d time.Duration) (*toolgate.Call, error) {
			waits.put(wait{id, d})
			return aCall(toolgate.StatusCompleted), nil
		},
		list: func(q toolgate.CallQuery) (*toolgate.CallList, error) {
			queries.put(q)
			return &toolgate.CallList{}, nil
		},
		cancel: func(id string) (*toolgate.Call, error) { cancels.put(id); return aCall(toolgate.StatusCancelled), nil },
	}}, func(o *handlers.Options) { o.MaxCallWait = 2 * time.Second }, false)

	ts.call(t, request{method: "POST", path: "/v1/calls", body: `{"session_id":"` + sid1 + `","tool":"echo","args":{"text":"hi"},"timeout_ms":1500}`,
		headers: map[string]string{"Authorization": "Bearer " + agentKey, "Idempotency-Key": "order-17"}})
	c := creations.only(t)
	if c.key != "order-17" || c.req.SessionID != sid1 || c.req.Tool != "echo" || string(c.req.Args) != `{"text":"hi"}` || c.req.TimeoutMS != 1500 || c.req.Wait != nil {
		t.Errorf("the engine got %+v", c)
	}
	if w := waits.only(t); w != (wait{"c1", -1}) {
		t.Errorf("POST /v1/calls waited %+v, want on c1 with no limit", w)
	}

	for _, tc := range []struct {
		query string
		want  time.Duration
	}{
		{"", 0},
		{"?wait_ms=250", 250 * time.Millisecond},
		{"?wait_ms=2000", 2 * time.Second},
		{"?wait_ms=2001", 2 * time.Second}, // capped at MaxCallWait
		{"?wait_ms=99999999999999", 2 * time.Second},
	} {
		waits = received[wait]{}
		ts.call(t, request{method: "GET", path: "/v1/calls/" + call7 + tc.query, headers: asAgent})
		if w := waits.only(t); w != (wait{call7, tc.want}) {
			t.Errorf("GET /v1/calls/"+call7+"%s waited %+v, want %v", tc.query, w, tc.want)
		}
	}

	ts.call(t, request{method: "GET", path: "/v1/calls?session_id=" + sid1 + "&tool=echo&status=failed&before=01a20b24-c8e2-79cb-b053-d813ec727e4e&limit=5", headers: asAgent})
	if q := queries.only(t); q != (toolgate.CallQuery{SessionID: sid1, Tool: "echo", Status: toolgate.StatusFailed, Before: "01a20b24-c8e2-79cb-b053-d813ec727e4e", Limit: 5}) {
		t.Errorf("the history query is %+v", q)
	}
	queries = received[toolgate.CallQuery]{}
	ts.call(t, request{method: "GET", path: "/v1/calls", headers: asAgent})
	if q := queries.only(t); q != (toolgate.CallQuery{}) {
		t.Errorf("the history query without parameters is %+v", q)
	}

	ts.call(t, request{method: "POST", path: "/v1/calls/" + call3 + "/cancel", headers: asAgent})
	if id := cancels.only(t); id != call3 {
		t.Errorf("cancelled %q, want %q", id, call3)
	}
}

// TestCallWaitDefaultCap checks that without MaxCallWait a wait is capped
// at 15 minutes.
func TestCallWaitDefaultCap(t *testing.T) {
	var waits received[time.Duration]
	ts := newTestServer(t, fakeEngine{Calls: &fakeCalls{wait: func(_ context.Context, _ string, d time.Duration) (*toolgate.Call, error) {
		waits.put(d)
		return aCall(toolgate.StatusPending), nil
	}}}, nil, false)
	ts.call(t, request{method: "GET", path: "/v1/calls/" + call1 + "?wait_ms=3600000", headers: asAgent})
	if d := waits.only(t); d != 15*time.Minute {
		t.Errorf("waited %v, want 15m", d)
	}
}

// TestCallCreateOutlivesItsCaller checks that when the caller goes away
// during the wait, the record is read on a context that has not ended.
func TestCallCreateOutlivesItsCaller(t *testing.T) {
	readOnLiveContext := make(chan bool, 1)
	ts := newTestServer(t, fakeEngine{Calls: &fakeCalls{
		create: func(toolgate.CallRequest, string) (*toolgate.Call, error) { return aCall(toolgate.StatusPending), nil },
		wait: func(ctx context.Context, _ string, _ time.Duration) (*toolgate.Call, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
		get: func(ctx context.Context, _ string) (*toolgate.Call, error) {
			readOnLiveContext <- ctx.Err() == nil
			return aCall(toolgate.StatusPending), nil
		},
	}}, nil, false)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/calls", strings.NewReader(`{"tool":"echo"}`))
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := ts.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the request outlived its context")
	}
	select {
	case live := <-readOnLiveContext:
		if !live {
			t.Error("the record was read on the ended request context")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the record was never read after the caller went away")
	}
}
