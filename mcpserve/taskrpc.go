package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// The task methods of MCP 2025-11-25, served before the SDK, which knows
// none of them. They need no MCP session: a task outlives the session
// that made it (a restart ends every session), so only the route and the
// credential are checked.
const (
	methodTasksGet    = "tasks/get"
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
	methodTasksCancel = "tasks/cancel"
	methodTasksUpdate = "tasks/update" // 2026-07-28's extension only
	methodToolsCall   = "tools/call"
)

// rpcRequest is a JSON-RPC request as the hook reads it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// serveTasks is the hook in front of the SDK (serveRoute calls it for
// every POST): it serves the task methods itself and reports true, and
// readies a task-augmented tools/call for the call handler (params.task
// moved into _meta[metaTaskRequest]); any other request passes unchanged.
// body is the POST's body as strictBody read it (nil when it was not JSON
// within the limit: the SDK refuses it).
func (t *taskServer) serveTasks(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if t.ep.opts.Tasks == nil || r.Method != http.MethodPost || body == nil {
		return false
	}
	modern := r.Header.Get(headerProtocolVersion) >= statelessRevision
	var req rpcRequest
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return false // not one request: the SDK answers it
	}
	switch {
	case modern && (req.Method == methodTasksGet || req.Method == methodTasksCancel || req.Method == methodTasksUpdate):
		result, rerr := t.taskMethodExt(r, req) // taskext.go
		writeRPC(w, req.ID, result, rerr)
		return true
	case modern:
		// tasks/result and tasks/list are not in the extension: the SDK
		// answers them as unknown methods.
	case req.Method == methodTasksGet || req.Method == methodTasksResult || req.Method == methodTasksList || req.Method == methodTasksCancel:
		result, rerr := t.taskMethod(r, req)
		writeRPC(w, req.ID, result, rerr)
		return true
	}
	if req.Method == methodToolsCall {
		changed, rerr := t.readyTaskCall(r, req.Params, modern)
		if rerr != nil {
			writeRPC(w, req.ID, nil, rerr)
			return true
		}
		if changed != nil {
			req.Params = changed
			newBody, err := json.Marshal(req)
			if err != nil {
				writeRPC(w, req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
				return true
			}
			r.Body = io.NopCloser(bytes.NewReader(newBody))
			r.ContentLength = int64(len(newBody))
		}
	}
	return false
}

// readyTaskCall returns a tools/call's params with params.task moved into
// _meta[metaTaskRequest] (with the granted ttl, the route and the owner),
// and any _meta[metaTaskRequest] a host sent removed; nil when they stay
// as they are. A params.task that is not an object, or whose ttl is not a
// whole number of milliseconds from 0, is invalid params.
//
// On 2026-07-28 (modern), the call is a task when the request declares the
// tasks extension among its client capabilities (the server decides, as
// the extension says); the ttl is then the maximum.
func (t *taskServer) readyTaskCall(r *http.Request, params json.RawMessage, modern bool) (json.RawMessage, *jsonrpc.Error) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil, nil // the SDK refuses it
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, nil
	}
	rawTask, isTask := p["task"]
	if isTask && string(rawTask) == "null" {
		isTask = false
	}
	if modern {
		rawTask, isTask = []byte("{}"), declaresTasksExtension(meta)
	}
	if _, sent := meta[metaTaskRequest]; !isTask && !sent {
		return nil, nil
	}
	if !modern {
		delete(p, "task")
	}
	delete(meta, metaTaskRequest)
	if isTask {
		var spec struct {
			TTL json.RawMessage `json:"ttl"`
		}
		if err := json.Unmarshal(rawTask, &spec); err != nil || rawTask[0] != '{' {
			return nil, invalidParams("params.task must be an object: {\"ttl\": <milliseconds>} or {}")
		}
		asked, ok := askedTTL(spec.TTL)
		if !ok {
			return nil, invalidParams("params.task.ttl must be a whole number of milliseconds, 0 or more")
		}
		tr := taskRequest{
			TTLMS: t.taskTTL(asked).Milliseconds(),
			Route: chi.URLParam(r, "sid"),
			Owner: ownerOf(jsonhttp.Bearer(r, false)),
			Seal:  t.seal,
		}
		if modern {
			tr.Form = formExtension
		}
		raw, _ := json.Marshal(tr)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[metaTaskRequest] = raw
	}
	if meta != nil {
		raw, _ := json.Marshal(meta)
		p["_meta"] = raw
	}
	out, err := json.Marshal(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return out, nil
}

// askedTTL reads params.task.ttl: nil when absent or null; false when it
// is not a whole number from 0 (a number too big for int64 is
// math.MaxInt64, capped later).
func askedTTL(raw json.RawMessage) (*int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var num json.Number
	if raw[0] == '"' || json.Unmarshal(raw, &num) != nil {
		return nil, false
	}
	n, ok := wholeNumber(num)
	if f, err := num.Float64(); !ok && err == nil && f == math.Trunc(f) && f >= 0 {
		n, ok = math.MaxInt64, true
		if f < math.MaxInt64 {
			n = int64(f) // written with an exponent
		}
	}
	if !ok || n < 0 {
		return nil, false
	}
	return &n, true
}

// entered counts a task method as running on the endpoint (Close waits
// for it) and returns its context, ended with the request or the
// endpoint; done ends both. ok is false when the endpoint is closing.
func (t *taskServer) entered(r *http.Request) (ctx context.Context, done func(), ok bool) {
	if !t.ep.enter() {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(t.ep.life, cancel)
	return ctx, func() { stop(); cancel(); t.ep.calls.Done() }, true
}

// taskMethod serves one task method.
func (t *taskServer) taskMethod(r *http.Request, req rpcRequest) (any, *jsonrpc.Error) {
	ctx, done, ok := t.entered(r)
	if !ok {
		return nil, errShuttingDown
	}
	defer done()
	route, owner := chi.URLParam(r, "sid"), ownerOf(jsonhttp.Bearer(r, false))
	if req.Method == methodTasksList {
		return t.listTasks(ctx, req.Params, route, owner)
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if len(req.Params) == 0 || json.Unmarshal(req.Params, &p) != nil || p.TaskID == "" {
		return nil, invalidParams("params.taskId (a string) is required")
	}
	task, call, rerr := t.findTask(ctx, p.TaskID, route, owner)
	if rerr != nil {
		return nil, rerr
	}
	switch req.Method {
	case methodTasksGet:
		return taskObjectOf(task, call), nil
	case methodTasksCancel:
		if call.Status.Final() {
			return nil, invalidParams("cannot cancel task " + task.ID + ": it has ended (" + string(call.Status) + ")")
		}
		cancelled, err := t.ep.dispatch.CancelCall(context.WithoutCancel(ctx), task.ID)
		if err != nil && toolgate.ErrorCode(err) != toolgate.ECallClosed {
			return nil, internalError(err)
		}
		if cancelled == nil || toolgate.ErrorCode(err) == toolgate.ECallClosed {
			if cancelled, err = t.ep.dispatch.GetCall(ctx, task.ID); err != nil {
				return nil, internalError(err)
			}
		}
		return taskObjectOf(task, cancelled), nil
	default: // tasks/result: once the call has ended (bounded by its deadline)
		ended, err := t.ep.dispatch.WaitCallProgress(ctx, task.ID, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil, errRequestCancelled
			}
			return nil, internalError(err)
		}
		res := t.checkedTaskResult(ctx, ended)
		if res.Meta == nil {
			res.Meta = map[string]any{}
		}
		res.Meta[metaRelatedTask] = map[string]string{"taskId": task.ID}
		return res, nil
	}
}

// findTask returns the task id of route and owner with its call; a task
// that is not there, has expired or is another route's or credential's is
// the same invalid params.
func (t *taskServer) findTask(ctx context.Context, id, route, owner string) (*toolgate.MCPTask, *toolgate.Call, *jsonrpc.Error) {
	notFound := invalidParams("no task " + quoteID(id))
	if !toolgate.WellFormedID(id) {
		return nil, nil, notFound
	}
	task, err := t.ep.opts.Tasks.MCPTask(ctx, id, time.Now())
	if err != nil {
		return nil, nil, internalError(err)
	}
	if task == nil || task.Route != route || task.Owner != owner {
		return nil, nil, notFound
	}
	call, err := t.ep.dispatch.GetCall(ctx, id)
	if toolgate.ErrorCode(err) == toolgate.ENotFound {
		return nil, nil, notFound // its call is gone from the history
	}
	if err != nil {
		return nil, nil, internalError(err)
	}
	return task, call, nil
}

// listTasks serves tasks/list: a page of the route's and owner's tasks,
// newest first; the cursor is the last task of the page before.
func (t *taskServer) listTasks(ctx context.Context, params json.RawMessage, route, owner string) (any, *jsonrpc.Error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) > 0 && string(params) != "null" && json.Unmarshal(params, &p) != nil {
		return nil, invalidParams("params.cursor must be a string")
	}
	before := ""
	if p.Cursor != nil {
		if !toolgate.WellFormedID(*p.Cursor) {
			return nil, invalidParams("params.cursor is not a cursor this gateway gave")
		}
		before = *p.Cursor
	}
	tasks, err := t.ep.opts.Tasks.ListMCPTasks(ctx, route, owner, before, time.Now(), taskListPage)
	if err != nil {
		return nil, internalError(err)
	}
	out := struct {
		Tasks      []taskObject `json:"tasks"`
		NextCursor string       `json:"nextCursor,omitempty"`
	}{Tasks: []taskObject{}}
	for _, task := range tasks {
		call, err := t.ep.dispatch.GetCall(ctx, task.ID)
		if toolgate.ErrorCode(err) == toolgate.ENotFound {
			continue
		}
		if err != nil {
			return nil, internalError(err)
		}
		out.Tasks = append(out.Tasks, taskObjectOf(task, call))
	}
	if len(tasks) == taskListPage {
		out.NextCursor = tasks[len(tasks)-1].ID
	}
	return out, nil
}

func invalidParams(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

func internalError(err error) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: toolgate.ErrorMessage(err)}
}

// quoteID is an id for an error message: quoted, and cut when long.
func quoteID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	b, _ := json.Marshal(id)
	return string(b)
}

// writeRPC writes a JSON-RPC response as application/json.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, rerr *jsonrpc.Error) {
	resp := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		resp["error"] = map[string]any{"code": rerr.Code, "message": rerr.Message}
	} else {
		resp["result"] = result
	}
	jsonhttp.WriteJSON(w, http.StatusOK, resp)
}
