package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// Durable stateful sessions (Options.SessionStore set). The SDK's
// StreamableHTTPHandler keeps its sessions in memory; the endpoint keeps
// each in the store as well, and serves a request of a session the store
// holds but this process does not (after a restart, or on another node)
// by reviving it first: the host's initialize is replayed through the
// handler, with the session's own id handed to the SDK (sessionIDs), and
// so is its notifications/initialized. The handler then serves the
// session as one it set up itself (its checks, streams, priming events,
// idle timer), and the event store behind it (eventstore.go) has every
// event the session's streams carried.

// credentialAgent is whose an MCP session is: the agent key, the only
// credential /mcp takes.
const credentialAgent = "agent"

// methodInitialize is the request that sets up a stateful session.
const methodInitialize = "initialize"

// lastEventIDHeader is the header of a GET that resumes a stream.
const lastEventIDHeader = "Last-Event-ID"

// sessionIDs hands the SDK (ServerOptions.GetSessionID) the id of the
// session its handler sets up next: a new one's, or the id of a session
// being revived. with holds the turn from before the handler is called
// until it asks for the id (or returns), so that requests setting up
// sessions at once cannot take each other's id.
type sessionIDs struct {
	turn  chan struct{}
	mu    sync.Mutex
	next  string
	armed bool
}

func newSessionIDs() *sessionIDs { return &sessionIDs{turn: make(chan struct{}, 1)} }

// with runs fn, during which the id the SDK asks for is id.
func (s *sessionIDs) with(id string, fn func()) {
	s.turn <- struct{}{}
	s.mu.Lock()
	s.next, s.armed = id, true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.armed {
			s.armed = false
			<-s.turn
		}
		s.mu.Unlock()
	}()
	fn()
}

// get is ServerOptions.GetSessionID.
func (s *sessionIDs) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed {
		return rand.Text()
	}
	s.armed = false
	<-s.turn
	return s.next
}

// serveDurable serves a request of the stateful revisions on a durable
// endpoint.
func (e *Endpoint) serveDurable(rt *route, w http.ResponseWriter, r *http.Request, body []byte) {
	sid := r.Header.Get(headerSessionID)
	if sid == "" {
		e.serveNewSession(rt, w, r, body)
		return
	}
	ctx := r.Context()
	now := e.opts.Now()
	routeKey, _, used, found, err := e.opts.SessionStore.Lookup(ctx, sid, now, e.opts.SessionIdle)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if !found || routeKey != rt.key {
		// Ended or expired (a copy held here goes), or of another route.
		if !found {
			rt.closeSession(sid)
		}
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if now.Sub(used) > e.opts.SessionIdle/10 {
		if err := e.opts.SessionStore.Touch(ctx, sid, now); err != nil {
			e.log.Warn("MCP: mark a session used", "err", err)
		}
	}
	if r.Method == http.MethodDelete {
		if _, err := e.opts.SessionStore.End(ctx, sid); err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
		rt.closeSession(sid)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !rt.hasSession(sid) {
		if !e.revive(rt, sid, r) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
	}
	if r.Method == http.MethodGet {
		if stream, ok := resumedStream(r); ok {
			e.deliverInflight(ctx, sid, stream)
		}
	}
	rt.stateful.ServeHTTP(w, r)
}

// serveNewSession serves a request without a session id: an initialize
// sets up a session, kept in the store unless the credential holds
// MaxSessionsPerKey alive (503 TOO_MANY_MCP_SESSIONS).
func (e *Endpoint) serveNewSession(rt *route, w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		rt.stateful.ServeHTTP(w, r) // the SDK's refusal
		return
	}
	if !e.admitSession() {
		unavailable(w, codeTooManySessions,
			"the gateway holds as many MCP sessions as it may; try again later, or use protocol revision "+statelessRevision)
		return
	}
	defer e.admitted()
	id := rand.Text()
	if _, method := requestOf(body); method == methodInitialize {
		var msg struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		state := []byte(msg.Params)
		if len(state) == 0 || string(state) == "null" {
			state = []byte("{}")
		}
		ok, err := e.opts.SessionStore.Create(r.Context(), id, rt.key, credentialAgent, state, e.opts.Now(), e.opts.MaxSessionsPerKey, e.opts.SessionIdle)
		if err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
		if !ok {
			unavailable(w, codeTooManySessions,
				"the agent key holds as many MCP sessions as it may; end one (DELETE) or try again later, or use protocol revision "+statelessRevision)
			return
		}
		defer func() {
			if !rt.hasSession(id) { // the initialize failed
				if _, err := e.opts.SessionStore.End(context.WithoutCancel(r.Context()), id); err != nil {
					e.log.Warn("MCP: forget a session that did not start", "err", err)
				}
			}
		}()
	}
	rt.ids.with(id, func() { rt.stateful.ServeHTTP(w, r) })
}

// revive sets up session sid, alive in the store but not here, by
// replaying its initialize and notifications/initialized through the
// route's handler; false when that fails.
func (e *Endpoint) revive(rt *route, sid string, r *http.Request) bool {
	rt.reviveMu.Lock()
	defer rt.reviveMu.Unlock()
	if rt.hasSession(sid) {
		return true
	}
	ctx := context.WithoutCancel(r.Context())
	_, state, _, found, err := e.opts.SessionStore.Lookup(ctx, sid, e.opts.Now(), e.opts.SessionIdle)
	if err != nil || !found || !json.Valid(state) {
		return false
	}
	replay := func(body string, header http.Header) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(body))
		if err != nil {
			return http.StatusInternalServerError
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		out := &discardReply{header: http.Header{}}
		rt.stateful.ServeHTTP(out, req)
		return out.status()
	}
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + string(state) + `}`
	var status int
	rt.ids.with(sid, func() { status = replay(initialize, nil) })
	if status != http.StatusOK || !rt.hasSession(sid) {
		e.log.Warn("MCP: revive a session", "status", status)
		rt.closeSession(sid)
		return false
	}
	header := http.Header{}
	header.Set(headerSessionID, sid)
	if status = replay(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, header); status != http.StatusAccepted {
		e.log.Warn("MCP: revive a session (initialized)", "status", status)
		rt.closeSession(sid)
		return false
	}
	return true
}

// resumedStream returns the stream a GET resumes (Last-Event-ID
// "<stream>_<index>", as the SDK writes them).
func resumedStream(r *http.Request) (string, bool) {
	id := r.Header.Get(lastEventIDHeader)
	stream, _, ok := strings.Cut(id, "_")
	return stream, ok && stream != ""
}

// deliverInflight waits for the calls of stream's requests still in
// flight whose handler is not running here (it died with its process, or
// runs on another node) and stores their responses on the stream, for the
// SDK to replay to the host resuming it. It gives up when ctx ends (the
// host left: it resumes again later).
func (e *Endpoint) deliverInflight(ctx context.Context, sid, stream string) {
	requests, calls, err := e.opts.SessionStore.Inflight(ctx, sid, stream)
	if err != nil {
		e.log.Warn("MCP: read the calls in flight of a resumed stream", "err", err)
		return
	}
	for i, request := range requests {
		if e.running.has(sid, request) {
			continue
		}
		ended, err := e.dispatch.WaitCallProgress(ctx, calls[i], func(json.RawMessage) {})
		if err != nil {
			return
		}
		data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(request), "result": e.guardedResultOf(ctx, ended)})
		if err == nil {
			_, err = e.opts.SessionStore.Deliver(context.WithoutCancel(ctx), sid, request, stream, data)
		}
		if err != nil {
			e.log.Warn("MCP: deliver the result of a call to a resumed stream", "call", calls[i], "err", err)
			return
		}
	}
}

// hasSession reports whether the route holds session sid here.
func (rt *route) hasSession(sid string) bool {
	for ss := range rt.server.Sessions() {
		if ss.ID() == sid {
			return true
		}
	}
	return false
}

// closeSession ends the route's session sid here, if it holds it.
func (rt *route) closeSession(sid string) {
	for ss := range rt.server.Sessions() {
		if ss.ID() == sid {
			_ = ss.Close()
		}
	}
}

// localCalls are the tools/call handlers running here in durable
// sessions, by session and request: their results reach the host through
// the SDK, so a resumed stream does not wait for them (deliverInflight).
type localCalls struct {
	mu      sync.Mutex
	running map[string]int
}

func newLocalCalls() *localCalls { return &localCalls{running: map[string]int{}} }

func (l *localCalls) has(sid, request string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running[sid+" "+request] > 0
}

func (l *localCalls) add(sid, request string) func() {
	key := sid + " " + request
	l.mu.Lock()
	l.running[key]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.running[key]--; l.running[key] <= 0 {
			delete(l.running, key)
		}
	}
}

// noteInflight records, in a durable session, that the tools/call req
// waits for call callID, so that a host resuming its stream gets the
// result even if this handler dies; call the func returned when the
// handler returns.
func (e *Endpoint) noteInflight(ctx context.Context, req *mcp.CallToolRequest, callID string) func() {
	if e.opts.SessionStore == nil || req.Session == nil || req.Session.ID() == "" {
		return func() {}
	}
	request, stream := durableRequest(req), req.Extra.Header.Get(streamHeader)
	if request == "" || stream == "" {
		return func() {}
	}
	sid := req.Session.ID()
	done := e.running.add(sid, request)
	if err := e.opts.SessionStore.PutInflight(context.WithoutCancel(ctx), sid, request, stream, callID, e.opts.Now()); err != nil {
		e.log.Warn("MCP: record a call in flight", "call", callID, "err", err)
	}
	return done
}

// keepsCallsAtClose reports whether a call whose handler ends because the
// endpoint closes is left running: in a durable session the host resumes
// and gets its result from the next process.
func (e *Endpoint) keepsCallsAtClose() bool {
	return e.opts.SessionStore != nil && e.life.Err() != nil
}

// discardReply is the reply of a replayed handshake: its status is kept,
// its body dropped.
type discardReply struct {
	header http.Header
	code   int
}

func (d *discardReply) Header() http.Header         { return d.header }
func (d *discardReply) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardReply) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardReply) Flush() {}

func (d *discardReply) status() int {
	if d.code == 0 {
		return http.StatusOK
	}
	return d.code
}
