package mcpserve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"iter"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionStore keeps the stateful MCP sessions (protocol revisions before
// 2026-07-28), their streams' events and their calls in flight, so that a
// session outlives the process and is valid on every node (the store's
// MCPSessions implements it). See store/mcp_sessions.go for each method.
type SessionStore interface {
	// Create stores a new session of credential unless maxAlive of its
	// sessions are alive (used within idle of now): then false.
	Create(ctx context.Context, id, route, credential string, state []byte, now time.Time, maxAlive int, idle time.Duration) (bool, error)
	// Lookup returns an alive session's route and state, and when it was
	// last marked used.
	Lookup(ctx context.Context, id string, now time.Time, idle time.Duration) (route string, state []byte, used time.Time, found bool, err error)
	// Touch marks a session used.
	Touch(ctx context.Context, id string, now time.Time) error
	// End deletes a session and all it kept.
	End(ctx context.Context, id string) (bool, error)
	// OpenStream starts a stream afresh.
	OpenStream(ctx context.Context, sid, stream string, now time.Time) error
	// AppendEvent stores a stream's next event; answers, when not "", is
	// the request the event answers (no longer in flight).
	AppendEvent(ctx context.Context, sid, stream string, data []byte, answers string) error
	// EventsAfter returns a stream's events after an index, or an error
	// when some are no longer kept.
	EventsAfter(ctx context.Context, sid, stream string, idx int) ([][]byte, error)
	// PutInflight records a request in flight and the call it waits for.
	PutInflight(ctx context.Context, sid, request, stream, callID string, now time.Time) error
	// Inflight returns the requests of a stream in flight and their calls.
	Inflight(ctx context.Context, sid, stream string) (requests, calls []string, err error)
	// Deliver appends a request's response to its stream if it is still
	// in flight, and ends that.
	Deliver(ctx context.Context, sid, request, stream string, data []byte) (bool, error)
}

// eventStore is the SDK's mcp.EventStore on the SessionStore: every event
// of a stateful session's streams is stored before it is sent, so a host
// resumes a stream (GET with Last-Event-ID) after a drop, a restart, or on
// another node.
type eventStore struct {
	e *Endpoint
}

var _ mcp.EventStore = eventStore{}

// Open implements mcp.EventStore. The GET stream ("") is started afresh:
// the SDK numbers a stream's events from 0 in each process, so the GET
// stream of a revived session starts again at 0 (what it held before is
// not replayed). A POST's stream has a new id each time: it is stored with
// its first event (one write less per call).
func (s eventStore) Open(ctx context.Context, sid, stream string) error {
	s.e.posts.opened(ctx, stream)
	if stream != "" {
		return nil
	}
	return s.e.opts.SessionStore.OpenStream(context.WithoutCancel(ctx), sid, stream, s.e.opts.Now())
}

// Append implements mcp.EventStore. A response ends its request's being
// in flight, in the same write; but not one written while the endpoint
// closes: that is a handler ended by the closing, whose call goes on, and
// the next process answers the request with its result
// (deliverInflight).
func (s eventStore) Append(ctx context.Context, sid, stream string, data []byte) error {
	answers := answeredRequest(data)
	if answers != "" && s.e.life.Err() != nil {
		return nil
	}
	return s.e.opts.SessionStore.AppendEvent(context.WithoutCancel(ctx), sid, stream, data, answers)
}

// After implements mcp.EventStore.
func (s eventStore) After(ctx context.Context, sid, stream string, idx int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		events, err := s.e.opts.SessionStore.EventsAfter(ctx, sid, stream, idx)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, data := range events {
			if !yield(data, nil) {
				return
			}
		}
	}
}

// SessionClosed implements mcp.EventStore: the SDK closes a session here
// when it idles in this process, when the endpoint closes, or after a
// DELETE; only a session no longer alive in the store (ended, expired, or
// never kept) loses what it kept.
func (s eventStore) SessionClosed(ctx context.Context, sid string) error {
	ctx = context.WithoutCancel(ctx)
	if _, _, _, alive, err := s.e.opts.SessionStore.Lookup(ctx, sid, s.e.opts.Now(), s.e.opts.SessionIdle); err != nil || alive {
		return err
	}
	_, err := s.e.opts.SessionStore.End(ctx, sid)
	return err
}

// answeredRequest returns the canonical id of the request a JSON-RPC
// message answers ("" when it is not a response).
func answeredRequest(data []byte) string {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Method != "" || (msg.Result == nil && msg.Error == nil) {
		return ""
	}
	return canonicalID(msg.ID)
}

// canonicalID is a JSON-RPC id as one text whatever its spelling: a whole
// number in decimal, a string as JSON; "" for anything else (null, no id).
func canonicalID(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch id := v.(type) {
	case string:
		b, _ := json.Marshal(id)
		return string(b)
	case float64:
		if n, ok := wholeNumber(id); ok {
			return strconv.FormatInt(n, 10)
		}
	}
	return ""
}

// requestOf returns the canonical id of the one JSON-RPC request in a
// POST's body ("" for a notification, a response, or a batch).
func requestOf(body []byte) (id, method string) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return "", ""
	}
	return canonicalID(msg.ID), msg.Method
}

// retryKey is the idempotency key of a tools/call that names none: the
// MCP session and the JSON-RPC id, so that the same request sent again in
// the session (after a drop, or a restart) finds the call the first one
// made instead of making another. "" outside a durable session.
func (e *Endpoint) retryKey(req *mcp.CallToolRequest, named string) string {
	if named != "" || e.opts.SessionStore == nil || req.Session == nil || req.Session.ID() == "" {
		return named
	}
	request := durableRequest(req)
	if request == "" {
		return named
	}
	sum := sha256.Sum256([]byte(request))
	return "mcp:" + req.Session.ID() + ":" + hex.EncodeToString(sum[:16])
}

// durableRequest returns the canonical JSON-RPC id of a tools/call carried
// by a durable POST ("" otherwise).
func durableRequest(req *mcp.CallToolRequest) string {
	if req.Extra == nil || req.Extra.Header == nil || req.Extra.Header.Get(durableHeader) == "" {
		return ""
	}
	return req.Extra.Header.Get(requestHeader)
}
