package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// defaultMaxStreamSessions is Options.MaxStreamSessions when unset.
const defaultMaxStreamSessions = 64

// maxRefusals is how many sessions of one stream open or poll are refused
// before the gateway stops checking the rest (refusing them unchecked), so
// that a request of bogus tokens costs a few token lookups, not 64.
const maxRefusals = 8

// multiHandlers serve the multi-session stream (POST /v1/streams, its
// joins and leaves) and the multi-session poll (POST /v1/poll): one
// long-lived request carrying the events of several sessions, each proven
// by its own token in the body, so that a browser's tabs need one
// connection between them rather than one each (a browser opens at most 6
// HTTP/1.1 connections to a host).
type multiHandlers struct {
	tokens   SessionAuth
	delivery Delivery
	hub      *streamHub // serves the streams taken over from net/http
	streams  *streamRegistry
	retry    time.Duration // the retry: hint
	// heartbeat is the ping intervals a stream may ask.
	heartbeat heartbeatRange
	// writeTimeout bounds each write to a stream (see
	// Options.StreamWriteTimeout).
	writeTimeout time.Duration
	// maxSessions bounds the sessions of one stream or poll.
	maxSessions int
	wait        time.Duration // a poll's hold when it names no wait_ms
	maxWait     time.Duration // cap on wait_ms
}

// streamRegistry names the open multi-session streams for joins and
// leaves. A stream is in it from its opening until it ends.
type streamRegistry struct {
	mu   sync.Mutex
	byID map[string]*eventStream
}

func newStreamRegistry() *streamRegistry {
	return &streamRegistry{byID: map[string]*eventStream{}}
}

// add names stream with a new unguessable id and returns it; the stream
// leaves the registry when it ends.
func (g *streamRegistry) add(stream *eventStream) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather)
	id := "st_" + base64.RawURLEncoding.EncodeToString(b[:])
	g.mu.Lock()
	g.byID[id] = stream
	g.mu.Unlock()
	stream.onEnd = func() {
		g.mu.Lock()
		delete(g.byID, id)
		g.mu.Unlock()
	}
	return id
}

// get returns the open stream named id, nil when there is none.
func (g *streamRegistry) get(id string) *eventStream {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byID[id]
}

// sessionEntry is one session of a multi-session request: its id, its
// token, and optionally its cursor.
type sessionEntry struct {
	SessionID string `json:"session_id"`
	Token     string `json:"token"`
	Cursor    *int64 `json:"cursor"`
}

// refusal is a session a multi-session request did not take, and why.
type refusal struct {
	SessionID string `json:"session_id"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

// admitAll admits each session of a stream open or poll (via) onto
// f, each listening with a notify that calls wake, in the order given; it
// returns the sessions admitted and those refused. Once maxRefusals were
// refused, the rest are refused without being checked.
func (h *multiHandlers) admitAll(r *http.Request, f *feed, entries []sessionEntry, via toolgate.Via, wake func()) (admitted []string, refused []refusal) {
	admitted, refused = []string{}, []refusal{}
	for _, e := range entries {
		if f.holds(e.SessionID) {
			continue // listed twice: once is enough
		}
		if len(refused) >= maxRefusals {
			refused = append(refused, refusal{SessionID: e.SessionID, Code: toolgate.EUnauthenticated,
				Message: fmt.Sprintf("not checked: %d sessions of this request were refused, so the gateway stopped authorizing the rest", maxRefusals)})
			continue
		}
		m, err := h.admit(r.Context(), e, via, wake)
		if err != nil {
			refused = append(refused, refusalOf(r, e.SessionID, err))
			continue
		}
		f.add(m) // cannot be refused: the list is within the limit
		admitted = append(admitted, e.SessionID)
	}
	return admitted, refused
}

func refusalOf(r *http.Request, sid string, err error) refusal {
	code := toolgate.ErrorCode(err)
	if code == toolgate.EInternal && !jsonhttp.ClientGone(r, err) {
		jsonhttp.RequestLogger(r).Error("internal error", "method", r.Method, "path", r.URL.Path, "session", sid, "err", err)
	}
	return refusal{SessionID: sid, Code: code, Message: toolgate.ErrorMessage(err)}
}

// streamReady is the data of a multi-session stream's ready event.
type streamReady struct {
	Type        string    `json:"type"`
	StreamID    string    `json:"stream_id"`
	HeartbeatMS int64     `json:"heartbeat_ms"`
	Sessions    []string  `json:"sessions"`
	Refused     []refusal `json:"refused"`
}

// checkCount refuses a request naming no session (it would hold a
// connection without any credential), or more sessions than one stream or
// poll may carry.
func (h *multiHandlers) checkCount(n int) error {
	if n == 0 {
		return toolgate.Errorf(toolgate.EBadRequest, "sessions must list at least one session, each with its session_id and token")
	}
	if n <= h.maxSessions {
		return nil
	}
	err := toolgate.Errorf(toolgate.EBadRequest, "at most %d sessions may share one stream or poll, not %d", h.maxSessions, n)
	err.Details = map[string]any{"limit": h.maxSessions}
	return err
}

// handleStreamOpen serves POST /v1/streams: a Server-Sent Events stream of
// the events of every session listed in the body that proves itself with
// its token. A session that does not is refused in the ready event, and
// the others are served; when none is served, the stream ends after its
// ready event. Over HTTP/1.1 the connection is then handed to
// the stream hub, as a session's own stream is; otherwise (HTTP/2) the
// request's goroutine serves it.
func (h *multiHandlers) handleStreamOpen(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var body struct {
		Sessions []sessionEntry `json:"sessions"`
		// HeartbeatMS is read as written, so that a number too large for
		// an int64 is clamped like any other, not refused.
		HeartbeatMS json.RawMessage `json:"heartbeat_ms"`
	}
	if err := DecodeJSON(r, &body, false, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if err := h.checkCount(len(body.Sessions)); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	given := len(body.HeartbeatMS) > 0 && string(body.HeartbeatMS) != "null"
	heartbeat, err := h.heartbeat.parse(string(body.HeartbeatMS), given)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	via := toolgate.Via{Transport: toolgate.TransportMultiStream, Heartbeat: heartbeat}
	stream := &eventStream{feed: newFeed(h.delivery, h.maxSessions), multi: true, via: via, idleEnd: h.heartbeat.max}
	hub := hubFor(w, r, h.hub)
	var hs *hubStream
	var wake chan struct{}
	if hub != nil {
		hs = hub.newStream(stream, heartbeat)
	} else {
		wake, stream.wake = signal()
	}
	ready := streamReady{Type: "ready", HeartbeatMS: heartbeat.Milliseconds()}
	admit := func() {
		ready.Sessions, ready.Refused = h.admitAll(r, stream.feed, body.Sessions, via, stream.wakeUp)
	}
	if hub == nil {
		onOwnStack(admit) // the request's goroutine serves the stream: keep its stack small
	} else {
		admit()
	}
	if len(ready.Sessions) == 0 {
		// Nothing to carry: the stream ends once its ready event (with the
		// refusals) is written, and nothing can join it.
		stream.feed.close(false)
	}
	ready.StreamID = h.streams.add(stream)
	stream.head = appendNamed(appendRetry(nil, h.retry), "ready", ready)
	if hub == nil {
		stream.out = startStream(w, h.writeTimeout)
		stream.serve(ctx, wake, nil, heartbeat)
		return
	}
	takeOver(w, r, hub, hs)
}

// admit checks one session of a multi-session stream or poll (via)
// and listens to it with a notify that marks it and calls wake, with
// what it gets first: a stream's first events (see firstEvents), or a
// poll's (see firstPolled). The member is not yet on a feed.
func (h *multiHandlers) admit(ctx context.Context, e sessionEntry, via toolgate.Via, wake func()) (*member, error) {
	streaming := via.Streaming()
	if e.SessionID == "" {
		return nil, toolgate.Errorf(toolgate.EBadRequest, "session_id is required")
	}
	if err := h.tokens.AuthorizeSession(ctx, e.SessionID, e.Token); err != nil {
		return nil, err
	}
	var cursor int64
	if e.Cursor != nil {
		cursor = *e.Cursor
		// A poll checks its cursor before it listens, as a session's poll
		// does; a stream's firstEvents checks it after.
		if !streaming {
			if err := h.delivery.CheckCursor(ctx, e.SessionID, cursor); err != nil {
				return nil, err
			}
		}
	}
	m := &member{sid: e.SessionID}
	l, err := h.delivery.ListenFunc(e.SessionID, via, notifier(m, wake))
	if err != nil {
		return nil, err
	}
	m.l = l
	if streaming {
		m.first, m.cursor, err = firstEvents(ctx, h.delivery, e.SessionID, e.Cursor != nil, cursor)
	} else {
		m.first, m.cursor, err = firstPolled(ctx, h.delivery, e.SessionID, e.Cursor != nil, cursor)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return m, nil
}

// handleJoin serves POST /v1/streams/{stream_id}/sessions: a session
// joins an open stream, which then sends session_joined and the
// session's first events. Joining again changes nothing.
func (h *multiHandlers) handleJoin(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "stream_id")
	var e sessionEntry
	if err := DecodeJSON(r, &e, false, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	err := h.join(r.Context(), id, e)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, map[string]any{"stream_id": id, "session_id": e.SessionID, "joined": true})
}

func (h *multiHandlers) join(ctx context.Context, id string, e sessionEntry) error {
	stream := h.streams.get(id)
	if stream == nil {
		return toolgate.Errorf(toolgate.ENotFound, "no open stream %s; open a new one", id)
	}
	if e.SessionID == "" {
		return toolgate.Errorf(toolgate.EBadRequest, "session_id is required")
	}
	if err := h.tokens.AuthorizeSession(ctx, e.SessionID, e.Token); err != nil {
		return err
	}
	if stream.feed.holds(e.SessionID) {
		return nil
	}
	full := toolgate.Errorf(toolgate.EConflict, "the stream carries its limit of %d sessions", h.maxSessions)
	full.Details = map[string]any{"limit": h.maxSessions}
	if stream.feed.full() {
		return full
	}
	m, err := h.admit(ctx, e, stream.via, stream.wakeUp)
	if err != nil {
		return err
	}
	m.announce = true
	if ok, why := stream.feed.add(m); !ok {
		m.l.Close()
		switch why {
		case feedOver:
			return toolgate.Errorf(toolgate.ENotFound, "no open stream %s; open a new one", id)
		case feedFull:
			return full
		}
		return nil // joined meanwhile by another request
	}
	stream.wake()
	return nil
}

// handleLeave serves DELETE /v1/streams/{stream_id}/sessions/{sid}, with
// that session's token: the stream sends session_left and nothing more of
// the session.
func (h *multiHandlers) handleLeave(w http.ResponseWriter, r *http.Request) {
	id, sid := chi.URLParam(r, "stream_id"), chi.URLParam(r, "sid")
	if err := h.tokens.AuthorizeSession(r.Context(), sid, jsonhttp.Bearer(r, false)); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	stream := h.streams.get(id)
	if stream == nil {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "no open stream %s", id))
		return
	}
	if !stream.feed.leave(sid, "left") {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.ENotFound, "session %s is not on stream %s", sid, id))
		return
	}
	stream.wake()
	w.WriteHeader(http.StatusNoContent)
}
