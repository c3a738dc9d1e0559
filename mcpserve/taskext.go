package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// Tasks on revision 2026-07-28: the extension io.modelcontextprotocol/tasks
// (SEP-2663). The server declares it in server/discover's
// capabilities.extensions; a tools/call whose _meta declares it among the
// client's capabilities becomes a task (the server decides), answered
// with the task itself and resultType "task"; tasks/get gives the task
// with its result (or error) inline once it has ended; tasks/cancel
// cancels it; tasks/update gives input, which a toolgate call never asks
// for. There is no tasks/result and no tasks/list.

const (
	// extensionTasks is the extension's id.
	extensionTasks = "io.modelcontextprotocol/tasks"
	// metaClientCapabilities is the _meta key of a 2026-07-28 request's
	// client capabilities.
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// formExtension marks a task made through the extension.
	formExtension = "2026-07-28"
	// resultTypeTask and resultTypeComplete are the results' resultType.
	resultTypeTask     = "task"
	resultTypeComplete = "complete"
)

// declaresTasksExtension reports whether a request's _meta declares the
// tasks extension among the client's capabilities.
func declaresTasksExtension(meta map[string]json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[metaClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[extensionTasks]
	return ok
}

// taskObjectExt is the extension's Task (ttlMs and pollIntervalMs).
type taskObjectExt struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

func extOf(o taskObject) taskObjectExt {
	return taskObjectExt{o.TaskID, o.Status, o.StatusMessage, o.CreatedAt, o.LastUpdatedAt, o.TTL, o.PollInterval}
}

// createTaskResultExt is the extension's CreateTaskResult: the task,
// with resultType "task".
type createTaskResultExt struct {
	mcp.ResultBase
	taskObjectExt
	ResultType string `json:"resultType"`
}

// taskErrorExt is a failed task's error.
type taskErrorExt struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// detailedTaskExt is tasks/get's result: the task, with its result when
// completed and its error when failed.
type detailedTaskExt struct {
	taskObjectExt
	ResultType string              `json:"resultType"`
	Result     *mcp.CallToolResult `json:"result,omitempty"`
	Error      *taskErrorExt       `json:"error,omitempty"`
}

// discoverWithTasks is the SDK's server/discover result with the tasks
// extension declared.
type discoverWithTasks struct{ *mcp.DiscoverResult }

// MarshalJSON implements json.Marshaler.
func (r *discoverWithTasks) MarshalJSON() ([]byte, error) {
	return withField(r.DiscoverResult, func(m map[string]json.RawMessage) error {
		caps := map[string]json.RawMessage{}
		if raw, ok := m["capabilities"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &caps); err != nil {
				return err
			}
		}
		if err := setIn(caps, "extensions", extensionTasks, map[string]any{}); err != nil {
			return err
		}
		raw, err := json.Marshal(caps)
		m["capabilities"] = raw
		return err
	})
}

// taskMethodExt serves tasks/get, tasks/cancel and tasks/update of the
// extension.
func (t *taskServer) taskMethodExt(r *http.Request, req rpcRequest) (any, *jsonrpc.Error) {
	ctx, done, ok := t.entered(r)
	if !ok {
		return nil, errShuttingDown
	}
	defer done()
	var p struct {
		TaskID string `json:"taskId"`
	}
	if len(req.Params) == 0 || json.Unmarshal(req.Params, &p) != nil || p.TaskID == "" {
		return nil, invalidParams("params.taskId (a string) is required")
	}
	task, call, rerr := t.findTask(ctx, p.TaskID, chi.URLParam(r, "sid"), ownerOf(jsonhttp.Bearer(r, false)))
	if rerr != nil {
		return nil, rerr
	}
	switch req.Method {
	case methodTasksCancel:
		if call.Status.Final() {
			return nil, invalidParams("cannot cancel task " + task.ID + ": it has ended (" + string(call.Status) + ")")
		}
		if _, err := t.ep.dispatch.CancelCall(context.WithoutCancel(ctx), task.ID); err != nil && toolgate.ErrorCode(err) != toolgate.ECallClosed {
			return nil, internalError(err)
		}
		return map[string]string{"resultType": resultTypeComplete}, nil
	case methodTasksUpdate:
		return nil, invalidParams("task " + task.ID + " asks for no input")
	}
	out := detailedTaskExt{taskObjectExt: extOf(taskObjectOf(task, call)), ResultType: resultTypeComplete}
	switch out.Status {
	case taskCompleted:
		out.Result = t.checkedTaskResult(ctx, call)
		if out.Result.Meta == nil {
			out.Result.Meta = map[string]any{}
		}
		out.Result.Meta[metaRelatedTask] = map[string]string{"taskId": task.ID}
	case taskFailed:
		// The error as a plain tools/call gives it, past the safety step.
		res := t.ep.guardedResultOf(ctx, call)
		out.Error = &taskErrorExt{Code: jsonrpc.CodeInternalError, Message: out.StatusMessage, Data: res.StructuredContent}
	}
	return out, nil
}
