package mcpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
)

// MCP tasks (the tasks utility of MCP 2025-11-25). A task is a toolgate
// call: tools/call with params.task stores the call as any tools/call
// does (the same checks, hooks, approval and limits) and answers at once
// with the task, whose id is the call's id; tasks/get and tasks/result
// read the call from the store, so they work after a restart and on any
// node. The SDK knows no tasks: the task methods are served before it
// (taskrpc.go), and the two things it must say (the capability and each
// tool's execution.taskSupport) are added to its results by a receiving
// middleware (taskMiddleware).

// TaskStore keeps the records of MCP tasks (store.MCPTasks implements it).
type TaskStore interface {
	// CreateMCPTask records a task (a second record of the same id keeps
	// the first).
	CreateMCPTask(ctx context.Context, t toolgate.MCPTask) error
	// MCPTask returns the task id unless it has expired by now; nil when
	// there is none.
	MCPTask(ctx context.Context, id string, now time.Time) (*toolgate.MCPTask, error)
	// ListMCPTasks returns up to limit unexpired tasks of route and owner,
	// newest first, made before the task before ("" from the newest).
	ListMCPTasks(ctx context.Context, route, owner, before string, now time.Time, limit int) ([]*toolgate.MCPTask, error)
}

// Defaults of the task options.
const (
	// DefaultMaxTaskTTL bounds how long a task is kept, whatever ttl the
	// host asks for; a host that asks for none gets it.
	DefaultMaxTaskTTL = 24 * time.Hour
	// minTaskTTL is the shortest ttl granted.
	minTaskTTL = time.Second
	// taskPollInterval is the pollInterval suggested to hosts.
	taskPollInterval = time.Second
	// taskListPage is the most tasks one tasks/list answers.
	taskListPage = 50
)

// metaTaskRequest is the key, in a tools/call's _meta, under which the
// request's task (its ttl, route and owner) reaches the call handler; the
// hook in front of the SDK (taskrpc.go) sets it from params.task and
// removes any value a host sent, so that only the gateway writes it.
const metaTaskRequest = metaKey + "task_request"

// metaTaskCreated is the key, on the call handler's result, of the task
// it created; taskMiddleware turns that result into a CreateTaskResult.
const metaTaskCreated = metaKey + "task_created"

// metaRelatedTask is MCP's key of the task a message belongs to.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// taskServer serves MCP tasks for the endpoint ep: the task methods in
// front of the SDK (serveTasks), the rewriting of the SDK's results that
// declare them (taskMiddleware) and the start of a task-augmented
// tools/call (startTask).
type taskServer struct {
	ep *Endpoint
	// seal marks the task requests the hook wrote: a secret of this
	// process, never sent.
	seal string
}

// taskRequest is what the hook passes to the call handler.
type taskRequest struct {
	// Form is "" for the 2025-11-25 utility, formExtension for the
	// 2026-07-28 extension.
	Form  string `json:"form,omitempty"`
	TTLMS int64  `json:"ttl"`
	Route string `json:"route"`
	Owner string `json:"owner"`
	// Seal is the taskServer's seal: only the hook knows it, so a
	// task request a host wrote into _meta itself (in a batch, which the
	// hook does not read) is not taken for one.
	Seal string `json:"seal"`
}

// taskRequestOf reads the task the hook put in a tools/call's _meta; nil
// when the call is not a task, or the request is not the hook's (its seal
// is not the endpoint's). Its ttl is bounded again here.
func (t *taskServer) taskRequestOf(meta mcp.Meta) *taskRequest {
	tr := readTaskRequest(meta)
	if tr == nil || !sealed(tr.Seal, t.seal) {
		return nil
	}
	tr.TTLMS = t.taskTTL(&tr.TTLMS).Milliseconds()
	return tr
}

// sealed reports whether seal is the endpoint's (never when it has none).
func sealed(seal, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(seal), []byte(want)) == 1
}

// readTaskRequest decodes _meta[metaTaskRequest] (nil: none, or not one).
func readTaskRequest(meta mcp.Meta) *taskRequest {
	v, ok := meta[metaTaskRequest]
	if !ok || v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var tr taskRequest
	if json.Unmarshal(raw, &tr) != nil {
		return nil
	}
	return &tr
}

// ownerOf identifies a credential without keeping it.
func ownerOf(secret string) string {
	sum := sha256.Sum256([]byte("toolgate mcp task owner\x00" + secret))
	return hex.EncodeToString(sum[:16])
}

// taskTTL is the ttl granted for the one asked (nil: none asked).
func (t *taskServer) taskTTL(asked *int64) time.Duration {
	limit := t.ep.opts.MaxTaskTTL
	if asked == nil || *asked >= limit.Milliseconds() {
		return limit
	}
	if *asked <= 0 {
		return minTaskTTL
	}
	return max(time.Duration(*asked)*time.Millisecond, minTaskTTL)
}

// startTask stores the call of a task-augmented tools/call and records
// its task; it does not wait for the call. A call the gateway refuses is
// answered as a plain tools/call's refusal is.
func (t *taskServer) startTask(ctx context.Context, call toolgate.CallRequest, idempotencyKey string, tr *taskRequest) (*mcp.CallToolResult, error) {
	created, err := t.ep.dispatch.CreateCall(context.WithoutCancel(ctx), call, idempotencyKey)
	if err != nil {
		return refusal(err)
	}
	task := toolgate.MCPTask{
		ID: created.ID, Route: tr.Route, Owner: tr.Owner,
		CreatedAt: created.CreatedAt.Time, TTL: time.Duration(tr.TTLMS) * time.Millisecond,
	}
	if err := t.ep.opts.Tasks.CreateMCPTask(context.WithoutCancel(ctx), task); toolgate.ErrorCode(err) == toolgate.EConflict {
		return refusal(err) // the call is that other task's: left running
	} else if err != nil {
		// The call is stored but the host will never know its task:
		// cancel it rather than leave it running for no one.
		if _, cerr := t.ep.dispatch.CancelCall(context.WithoutCancel(ctx), created.ID); cerr != nil && toolgate.ErrorCode(cerr) != toolgate.ECallClosed {
			t.ep.log.Warn("MCP: cancel the call of a task not recorded", "call", created.ID, "err", cerr)
		}
		return nil, err
	}
	return &mcp.CallToolResult{Meta: mcp.Meta{metaTaskCreated: createdTask{taskObjectOf(&task, created), tr.Form}}}, nil
}

// taskObject is MCP's Task.
type taskObject struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// MCP's task statuses.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// taskObjectOf is the task of call c: working while the call is open,
// completed when it completed, cancelled when it was cancelled, failed
// for any other end (failed, timed_out, denied).
func taskObjectOf(t *toolgate.MCPTask, c *toolgate.Call) taskObject {
	updated := c.CreatedAt.Time
	if c.DeliveredAt != nil {
		updated = c.DeliveredAt.Time
	}
	if c.CompletedAt != nil {
		updated = c.CompletedAt.Time
	}
	o := taskObject{
		TaskID:        t.ID,
		Status:        taskWorking,
		CreatedAt:     t.CreatedAt.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt: updated.UTC().Format(time.RFC3339Nano),
		TTL:           t.TTL.Milliseconds(),
		PollInterval:  taskPollInterval.Milliseconds(),
	}
	switch c.Status {
	case toolgate.StatusCompleted:
		o.Status = taskCompleted
	case toolgate.StatusCancelled:
		o.Status = taskCancelled
	case toolgate.StatusFailed, toolgate.StatusTimedOut, toolgate.StatusDenied:
		// Not the client's message, which only the safety step's
		// result (tasks/result) may carry.
		o.Status = taskFailed
		o.StatusMessage = "the call ended " + string(c.Status) + "; the result has its error"
	case toolgate.StatusAwaitingApproval:
		o.StatusMessage = "awaiting the operator's approval"
	}
	if o.Status != taskWorking {
		o.PollInterval = 0
	}
	return o
}

// createdTask is what startTask leaves for taskMiddleware.
type createdTask struct {
	task taskObject
	form string
}

// createTaskResult is MCP's CreateTaskResult.
type createTaskResult struct {
	mcp.ResultBase
	Task taskObject `json:"task"`
}

// initializeWithTasks is the SDK's initialize result with the tasks
// capability added (the SDK's ServerCapabilities has no field for it).
type initializeWithTasks struct{ *mcp.InitializeResult }

// tasksCapability is what the gateway declares of tasks: tools/call may
// be a task, and tasks may be listed and cancelled.
var tasksCapability = map[string]any{
	"list":     map[string]any{},
	"cancel":   map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
}

// MarshalJSON implements json.Marshaler.
func (r *initializeWithTasks) MarshalJSON() ([]byte, error) {
	return withField(r.InitializeResult, func(m map[string]json.RawMessage) error {
		return setIn(m, "capabilities", "tasks", tasksCapability)
	})
}

// toolsWithTasks is the SDK's tools/list result with every tool declaring
// execution.taskSupport "optional" (the SDK's Tool has no field for it).
type toolsWithTasks struct{ *mcp.ListToolsResult }

// MarshalJSON implements json.Marshaler.
func (r *toolsWithTasks) MarshalJSON() ([]byte, error) {
	return withField(r.ListToolsResult, func(m map[string]json.RawMessage) error {
		var tools []map[string]json.RawMessage
		if err := json.Unmarshal(m["tools"], &tools); err != nil {
			return err
		}
		for _, tool := range tools {
			tool["execution"] = json.RawMessage(`{"taskSupport":"optional"}`)
		}
		raw, err := json.Marshal(tools)
		m["tools"] = raw
		return err
	})
}

// withField marshals v as an object changed by change.
func withField(v any, change func(map[string]json.RawMessage) error) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if err := change(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// setIn sets m[outer][inner] to v (outer an object, made if absent).
func setIn(m map[string]json.RawMessage, outer, inner string, v any) error {
	obj := map[string]json.RawMessage{}
	if raw, ok := m[outer]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
	}
	val, err := json.Marshal(v)
	if err != nil {
		return err
	}
	obj[inner] = val
	m[outer], err = json.Marshal(obj)
	return err
}

// taskMiddleware adds tasks to what the SDK answers of a route: the
// capability on initialize, execution.taskSupport on tools/list (revisions
// before 2026-07-28, which has no such field), and the CreateTaskResult of
// a task-augmented tools/call.
func (t *taskServer) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || t.ep.opts.Tasks == nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			return &initializeWithTasks{r}, nil
		case *mcp.ListToolsResult:
			if legacyRevision(req) {
				return &toolsWithTasks{r}, nil
			}
		case *mcp.CallToolResult:
			if t, ok := r.Meta[metaTaskCreated].(createdTask); ok {
				if t.form == formExtension {
					return &createTaskResultExt{taskObjectExt: extOf(t.task), ResultType: resultTypeTask}, nil
				}
				return &createTaskResult{Task: t.task}, nil
			}
		case *mcp.DiscoverResult:
			return &discoverWithTasks{r}, nil
		}
		return res, nil
	}
}

// legacyRevision reports whether req's session speaks a revision before
// 2026-07-28.
func legacyRevision(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion < statelessRevision
}
