package handlers

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
)

// handleEvents serves GET /v1/sessions/{sid}/events, the session's
// Server-Sent Events stream.
//
// The stream is written here over the SQLite event log rather than with
// an SSE server library: the libraries at hand keep their event log in
// memory (lost on restart, never trimmed, ids restarting at zero) and fan
// out with blocking sends, so one slow client stalls the others. Here each
// stream reads the durable log from its own cursor when woken, so a slow
// client only slows itself and a reconnect resumes exactly.
func (a *API) handleEvents(w http.ResponseWriter, r *http.Request) {
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
	rc := http.NewResponseController(w)
	// Streams live long; the server's write timeout must not cut them.
	_ = rc.SetWriteDeadline(time.Time{})

	l, err := a.eng.Listen(sid, true)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	defer l.Close()
	// The first read runs on a goroutine of its own: SQLite's calls grow a
	// goroutine's stack deep, and this one then idles for hours holding
	// whatever it grew to (measured: about 10 KB a stream).
	type firstRead struct {
		events []toolgate.Event
		last   int64
		err    error
	}
	done := make(chan firstRead, 1)
	go func() {
		events, last, err := a.firstEvents(ctx, sid, resume != "", cursor)
		done <- firstRead{events, last, err}
	}()
	first := <-done
	if first.err != nil {
		WriteError(w, r, first.err)
		return
	}
	events, cursor := first.events, first.last

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	heartbeat := a.opts.Heartbeat
	// Writes go straight to the ResponseWriter, which buffers already: an
	// idle stream holds no buffer of its own.
	io.WriteString(w, "retry: "+strconv.FormatInt(a.opts.StreamRetry.Milliseconds(), 10)+"\n\n"+
		"event: ready\ndata: {\"type\":\"ready\",\"session_id\":\""+sid+"\",\"heartbeat_ms\":"+
		strconv.FormatInt(heartbeat.Milliseconds(), 10)+"}\n\n")

	send := func(events []toolgate.Event) bool {
		for _, ev := range events {
			writeSSE(w, ev)
		}
		// Record the delivery before the bytes leave: the client may answer
		// at once, and its answer must find the call already delivered.
		a.eng.Delivered(sid, events)
		return rc.Flush() == nil
	}
	if !send(events) {
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
			if events, _, err = a.eng.EventsAfter(ctx, sid, cursor); err == nil {
				send(events)
			}
			return
		case <-l.Wake():
			events, cursor, err = a.eng.EventsAfter(ctx, sid, cursor)
			if err != nil || !send(events) {
				return
			}
		case now := <-ping.C:
			io.WriteString(w, "event: ping\ndata: {\"type\":\"ping\",\"time\":\""+now.UTC().Format(toolgate.TimeLayout)+"\"}\n\n")
			if !send(nil) {
				return
			}
		}
	}
}

// writeSSE writes one event in the text/event-stream format. Data is
// stored compact, so it is one line.
func writeSSE(w io.Writer, ev toolgate.Event) {
	buf := make([]byte, 0, len(ev.Data)+64)
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Type...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, ev.Data...)
	buf = append(buf, "\n\n"...)
	w.Write(buf)
}

// firstEvents reads what a stream sends first. Without a cursor the client
// gets every open call. With one it gets the events after it, and before
// them again the open calls it was sent earlier: a client that restarted
// with its stored cursor has lost the handlers it was running, and a live
// one de-duplicates by call id.
func (a *API) firstEvents(ctx context.Context, sid string, resume bool, cursor int64) ([]toolgate.Event, int64, error) {
	if resume {
		if err := a.eng.CheckCursor(ctx, sid, cursor); err != nil {
			return nil, 0, err
		}
	}
	events, last, err := a.eng.OpenEvents(ctx, sid)
	if err != nil || !resume {
		return events, last, err
	}
	var earlier []toolgate.Event
	for _, ev := range events {
		if ev.Seq <= cursor {
			earlier = append(earlier, ev)
		}
	}
	after, last, err := a.eng.EventsAfter(ctx, sid, cursor)
	return append(earlier, after...), last, err
}
