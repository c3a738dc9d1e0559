package handlers

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
)

// pollHandler serves a session's long-poll.
type pollHandler struct {
	delivery Delivery
	wait     time.Duration // the hold when the poll names no wait_ms
	maxWait  time.Duration // cap on wait_ms
}

// handlePoll serves GET /v1/sessions/{sid}/poll?cursor=&wait_ms=, the
// long-poll carrying the same events as the stream for clients behind
// proxies that break streaming. It answers at once when there are events
// after the cursor, else holds the request up to wait_ms. Without a cursor
// it first returns the session's open calls, like a stream opened without
// Last-Event-ID.
func (h *pollHandler) handlePoll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sid := chi.URLParam(r, "sid")
	q := r.URL.Query()
	wait, err := durationParam(r, "wait_ms", h.wait, h.maxWait)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	var cursor int64
	hasCursor := q.Has("cursor")
	if hasCursor {
		cursor, err = strconv.ParseInt(q.Get("cursor"), 10, 64)
		if err != nil {
			WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "cursor must be a whole number from an earlier poll, not %q", q.Get("cursor")))
			return
		}
		if err := h.delivery.CheckCursor(ctx, sid, cursor); err != nil {
			WriteError(w, r, err)
			return
		}
	}
	l, err := h.delivery.Listen(sid, false)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	defer l.Close()
	var events []toolgate.Event
	if hasCursor {
		events, cursor, err = h.delivery.EventsAfter(ctx, sid, cursor)
	} else {
		events, cursor, err = h.delivery.OpenEvents(ctx, sid)
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if len(events) == 0 && wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
	hold:
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
				break hold
			case <-l.Done():
				events, cursor, err = h.delivery.EventsAfter(ctx, sid, cursor)
				break hold
			case <-l.Wake():
				events, cursor, err = h.delivery.EventsAfter(ctx, sid, cursor)
				if err != nil || len(events) > 0 {
					break hold
				}
			}
		}
		if err != nil {
			WriteError(w, r, err)
			return
		}
	}
	// Recorded before the reply leaves, so that an answer finds the call delivered.
	h.delivery.Delivered(sid, events)
	writePollReply(w, events, cursor)
}

// writePollReply writes {"events": [...], "cursor": n}. Each event is its
// stored JSON object with "seq" spliced in front, so nothing is re-encoded.
func writePollReply(w http.ResponseWriter, events []toolgate.Event, cursor int64) {
	var buf bytes.Buffer
	buf.WriteString(`{"events":[`)
	for i, ev := range events {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"seq":`)
		buf.WriteString(strconv.FormatInt(ev.Seq, 10))
		if len(ev.Data) > 2 {
			buf.WriteByte(',')
			buf.Write(ev.Data[1:])
		} else {
			buf.WriteByte('}')
		}
	}
	buf.WriteString(`],"cursor":`)
	buf.WriteString(strconv.FormatInt(cursor, 10))
	buf.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}
