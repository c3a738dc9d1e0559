package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
)

// streamHandler serves a session's event stream.
type streamHandler struct {
	delivery  Delivery
	hub       *streamHub    // serves the streams taken over from net/http
	retry     time.Duration // the retry: hint
	heartbeat time.Duration // ping interval
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
			WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "Last-Event-ID must be an event id from this session's stream, not %q", resume))
			return
		}
		cursor = n
	}
	hijacker, canHijack := w.(http.Hijacker)
	if !canHijack || r.ProtoMajor != 1 || s.hub == nil {
		s.serveStream(w, r, sid, resume != "", cursor)
		return
	}

	// Listen before the first read, so that nothing appended in between is missed.
	hs := &hubStream{hub: s.hub, sid: sid}
	l, err := s.delivery.ListenFunc(sid, hs.wake)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	events, cursor, err := s.firstEvents(ctx, sid, resume != "", cursor)
	if err != nil {
		l.Close()
		WriteError(w, r, err)
		return
	}
	conn, _, err := hijacker.Hijack()
	if err != nil {
		l.Close()
		WriteError(w, r, err)
		return
	}
	body := appendReady(nil, sid, s.retry, s.heartbeat)
	for _, ev := range events {
		body = appendSSE(body, ev)
	}
	s.delivery.Delivered(sid, events)
	conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := conn.Write(streamHead(w.Header())); err != nil {
		conn.Close()
		l.Close()
		return
	}
	if err := writeChunk(conn, body); err != nil {
		conn.Close()
		l.Close()
		return
	}
	s.hub.adopt(hs, conn, l, cursor)
}

// serveStream serves a stream from the request's own goroutine, where the
// connection cannot be taken over.
func (s *streamHandler) serveStream(w http.ResponseWriter, r *http.Request, sid string, resume bool, cursor int64) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	// Streams live long; the server's write timeout must not cut them.
	_ = rc.SetWriteDeadline(time.Time{})
	l, err := s.delivery.Listen(sid, true)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	defer l.Close()
	events, cursor, err := s.firstEvents(ctx, sid, resume, cursor)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	heartbeat := s.heartbeat
	send := func(body []byte, events []toolgate.Event) bool {
		for _, ev := range events {
			body = appendSSE(body, ev)
		}
		// Recorded before the bytes leave, so that an answer finds its call delivered.
		s.delivery.Delivered(sid, events)
		if _, err := w.Write(body); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(appendReady(nil, sid, s.retry, heartbeat), events) {
		return
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Done():
			// The session closed: send what is left (its call_cancelled events) and end.
			if events, _, err = s.delivery.EventsAfter(ctx, sid, cursor); err == nil {
				send(nil, events)
			}
			return
		case <-l.Wake():
			events, cursor, err = s.delivery.EventsAfter(ctx, sid, cursor)
			if err != nil || !send(nil, events) {
				return
			}
		case now := <-ping.C:
			if !send(appendPing(nil, now), nil) {
				return
			}
		}
	}
}

// firstEvents reads what a stream sends first. Without a cursor the client
// gets every open call. With one it gets the events after it, and before
// them again the open calls it was sent earlier: a client that restarted
// with its stored cursor has lost the handlers it was running, and a live
// one de-duplicates by call id.
func (s *streamHandler) firstEvents(ctx context.Context, sid string, resume bool, cursor int64) ([]toolgate.Event, int64, error) {
	if resume {
		if err := s.delivery.CheckCursor(ctx, sid, cursor); err != nil {
			return nil, 0, err
		}
	}
	events, last, err := s.delivery.OpenEvents(ctx, sid)
	if err != nil || !resume {
		return events, last, err
	}
	var earlier []toolgate.Event
	for _, ev := range events {
		if ev.Seq <= cursor {
			earlier = append(earlier, ev)
		}
	}
	after, last, err := s.delivery.EventsAfter(ctx, sid, cursor)
	return append(earlier, after...), last, err
}
