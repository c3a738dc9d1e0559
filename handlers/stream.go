package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// streamHandler serves a session's event stream.
type streamHandler struct {
	delivery  Delivery
	hub       *streamHub     // serves the streams taken over from net/http
	retry     time.Duration  // the retry: hint
	heartbeat heartbeatRange // ping intervals a stream may ask
	// writeTimeout bounds each write (see Options.StreamWriteTimeout).
	writeTimeout time.Duration
}

// handleEvents serves GET /v1/sessions/{sid}/events, the session's
// Server-Sent Events stream.
//
// The stream is written here over the SQLite event log rather than with
// an SSE server library: the libraries at hand keep their event log in
// memory (lost on restart, never trimmed, ids restarting at zero) and fan
// out with blocking sends, so one slow client stalls the others. Here each
// stream reads the durable log (or its in-memory tail) from its own cursor
// when woken, so a slow client only slows itself and a reconnect resumes
// exactly. Over HTTP/1.1 the connection is then handed to the stream hub,
// which needs no goroutine per idle stream; otherwise (HTTP/2) a goroutine
// serves the stream.
func (s *streamHandler) handleEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sid := chi.URLParam(r, "sid")
	var cursor int64
	resume := r.Header.Get("Last-Event-ID")
	if resume == "" {
		resume = r.URL.Query().Get("last_event_id")
	}
	if resume != "" {
		n, err := strconv.ParseInt(resume, 10, 64)
		if err != nil {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "Last-Event-ID must be an event id from this session's stream, not %q", resume))
			return
		}
		cursor = n
	}
	q := r.URL.Query()
	heartbeat, err := s.heartbeat.parse(q.Get("heartbeat_ms"), q.Has("heartbeat_ms"))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	stream := &eventStream{feed: newFeed(s.delivery, 1), head: appendReady(nil, sid, s.retry, heartbeat)}
	m := &member{sid: sid}
	hub := hubFor(w, r, s.hub)
	var hs *hubStream
	var l toolgate.Listener
	via := toolgate.Via{Transport: toolgate.TransportStream, Heartbeat: heartbeat}
	// Listen before the first read, so that nothing appended in between is missed.
	if hub != nil {
		hs = hub.newStream(stream, heartbeat)
		l, err = s.delivery.ListenFunc(sid, via, stream.notifyFor(m))
	} else {
		l, err = s.delivery.Listen(sid, via)
	}
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	m.l = l
	readFirst := func() { m.first, m.cursor, err = firstEvents(ctx, s.delivery, sid, resume != "", cursor) }
	if hub == nil {
		onOwnStack(readFirst)
	} else {
		readFirst()
	}
	if err != nil {
		l.Close()
		jsonhttp.WriteError(w, r, err)
		return
	}
	stream.feed.add(m)
	if hub == nil {
		stream.out = startStream(w, s.writeTimeout)
		stream.serve(ctx, l.Wake(), l.Done(), heartbeat)
		return
	}
	takeOver(w, r, hub, hs)
}

// onOwnStack runs fn on a goroutine of its own and waits for it. A stream
// the hub cannot take (HTTP/2) is served by its request's goroutine, which
// then parks for the stream's whole life; a deep call made on it first (the
// first events' SQLite read) would leave it a stack twice the size, for
// good. BENCHMARKS.md, "Idle sessions over HTTPS, HTTP/2 and multi-session
// streams", has the figures.
func onOwnStack(fn func()) {
	done := make(chan struct{})
	var panicked any
	go func() {
		defer func() {
			panicked = recover()
			close(done)
		}()
		fn()
	}()
	<-done
	if panicked != nil {
		panic(panicked) // on the request's goroutine, where the router recovers it
	}
}

// hubFor returns hub when it can serve the request's stream (an HTTP/1.1
// connection that can be taken over), else nil: the stream is then
// served by the request's own goroutine.
func hubFor(w http.ResponseWriter, r *http.Request, hub *streamHub) *streamHub {
	if _, ok := w.(http.Hijacker); !ok || r.ProtoMajor != 1 {
		return nil
	}
	return hub
}

// takeOver takes the request's connection from net/http, writes the
// stream's head and first events, and hands the stream to the hub. On a
// failure the stream ends.
func takeOver(w http.ResponseWriter, r *http.Request, hub *streamHub, hs *hubStream) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		hs.stream.end(false)
		jsonhttp.WriteError(w, r, err)
		return
	}
	conn = keepShare(r, conn) // its client address's place, behind a proxy
	hs.stream.out = chunkOut{conn: conn, timeout: hub.writeTimeout}
	conn.SetWriteDeadline(time.Now().Add(hub.writeTimeout))
	if _, err := conn.Write(streamHead(w.Header())); err != nil {
		conn.Close()
		hs.stream.end(true)
		return
	}
	switch hs.stream.step(r.Context(), true) {
	case streamGoesOn:
		hub.adopt(hs, conn)
	case streamEnds:
		hs.conn = conn
		hs.end(true)
	default:
		conn.Close()
		hs.stream.end(true)
	}
}
