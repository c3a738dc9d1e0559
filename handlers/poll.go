package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
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
		jsonhttp.WriteError(w, r, err)
		return
	}
	var cursor int64
	hasCursor := q.Has("cursor")
	if hasCursor {
		cursor, err = strconv.ParseInt(q.Get("cursor"), 10, 64)
		if err != nil {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "cursor must be a whole number from an earlier poll, not %q", q.Get("cursor")))
			return
		}
		if err := h.delivery.CheckCursor(ctx, sid, cursor); err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
	}
	l, err := h.delivery.Listen(sid, toolgate.Via{Transport: toolgate.TransportPoll})
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	m := &member{sid: sid, l: l}
	m.first, m.cursor, err = firstPolled(ctx, h.delivery, sid, hasCursor, cursor)
	if err != nil {
		l.Close()
		jsonhttp.WriteError(w, r, err)
		return
	}
	f := newFeed(h.delivery, 1)
	f.add(m)
	defer func() { f.close(ctx.Err() != nil) }() // a poll whose client went away was cut
	batches, err := holdPoll(ctx, f, l.Wake(), l.Done(), wait)
	if err != nil {
		if ctx.Err() == nil {
			jsonhttp.WriteError(w, r, err)
		}
		return
	}
	b := batches[0]
	// Recorded before the reply leaves, so that an answer finds the call delivered.
	h.delivery.Delivered(sid, b.events)
	writePollReply(w, b)
}

// holdPoll is the delivery loop of a poll: it collects the first events
// of the feed's sessions and, when none has any (and wait is not zero),
// holds until one has events or ends, wait passes, or ctx ends (then an
// error). wake and done are the signals of the poll's listeners without
// notify (nil for a multi-session poll, whose listeners notify). It
// returns one batch per session, in the feed's order, with all that was
// collected for it.
func holdPoll(ctx context.Context, f *feed, wake, done <-chan struct{}, wait time.Duration) ([]batch, error) {
	all, err := f.collect(ctx, false, true)
	if err != nil || wait <= 0 || newsIn(all) {
		return all, err
	}
	index := make(map[string]int, len(all))
	for i, b := range all {
		index[b.sid] = i
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return all, nil
		case <-wake:
		case <-done:
		}
		more, err := f.collect(ctx, true, false)
		if err != nil {
			return nil, err
		}
		for _, b := range more {
			i := index[b.sid]
			all[i].events = append(all[i].events, b.events...)
			all[i].cursor, all[i].left = b.cursor, b.left
		}
		if newsIn(more) {
			return all, nil
		}
	}
}

// newsIn reports whether a poll can answer with batches: a session has
// events, or has ended.
func newsIn(batches []batch) bool {
	for _, b := range batches {
		if len(b.events) > 0 || b.left != "" {
			return true
		}
	}
	return false
}

// writePollReply writes {"events": [...], "cursor": n}. Each event is its
// stored JSON object with "seq" spliced in front, so nothing is re-encoded.
func writePollReply(w http.ResponseWriter, b batch) {
	buf := append([]byte(`{`), pollEvents(nil, b)...)
	writePollBody(w, append(buf, "}\n"...))
}

// pollEvents appends `"events":[...],"cursor":n` for a session's batch,
// each event its stored JSON object with "seq" spliced in front, so
// nothing is re-encoded. A poll a newer one replaced ends its events with
// stream_replaced (which has no seq).
func pollEvents(buf []byte, b batch) []byte {
	buf = append(buf, `"events":[`...)
	for i, ev := range b.events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendTagged(buf, "", ev)
	}
	if b.left == toolgate.EndReplaced {
		if len(b.events) > 0 {
			buf = append(buf, ',')
		}
		buf = appendReplacedData(buf, b.sid)
	}
	buf = append(buf, `],"cursor":`...)
	return strconv.AppendInt(buf, b.cursor, 10)
}

// writePollBody writes a poll's reply body, which no cache may keep.
func writePollBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}
