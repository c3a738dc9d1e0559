package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// handlePoll serves POST /v1/poll: one long-poll for several sessions,
// each proven by its token in the body and read from its own cursor by
// the single-session poll's rule. It answers at once when any session has
// events, else holds up to wait_ms until one has events or ends. A
// session that does not prove itself is refused in the reply; the others
// are served. A poll that serves no session answers at once.
func (h *multiHandlers) handlePoll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var body struct {
		Sessions []sessionEntry `json:"sessions"`
		WaitMS   *int64         `json:"wait_ms"`
	}
	if err := DecodeJSON(r, &body, false, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if err := h.checkCount(len(body.Sessions)); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	wait := h.wait
	if body.WaitMS != nil {
		if *body.WaitMS < 0 {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "wait_ms must not be negative"))
			return
		}
		wait = h.maxWait
		if *body.WaitMS < int64(h.maxWait/time.Millisecond) {
			wait = time.Duration(*body.WaitMS) * time.Millisecond
		}
	}
	f := newFeed(h.delivery, h.maxSessions)
	defer func() { f.close(ctx.Err() != nil) }() // a poll whose client went away was cut
	wake, notify := signal()
	served, refused := h.admitAll(r, f, body.Sessions, toolgate.Via{Transport: toolgate.TransportMultiPoll}, notify)
	if len(served) == 0 {
		wait = 0 // nothing to wait for: the refusals are the answer
	}
	batches, err := holdPoll(ctx, f, wake, nil, wait)
	if err != nil {
		if ctx.Err() == nil {
			jsonhttp.WriteError(w, r, err)
		}
		return
	}
	// Recorded before the reply leaves, so that an answer finds the call delivered.
	f.recordDelivery(batches)
	buf := []byte(`{"sessions":[`)
	for i, b := range batches {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"session_id":"`...)
		buf = append(buf, b.sid...)
		buf = append(buf, `",`...)
		buf = pollEvents(buf, b)
		// A session that closed or expired has ended; one whose listener
		// ended at a shutdown, or was replaced, has not (its client polls
		// again; after a replacement, after its retry delay).
		if b.left != "" && b.left != endShutdown && b.left != toolgate.EndReplaced {
			buf = append(buf, `,"ended":true`...)
		}
		buf = append(buf, '}')
	}
	refusedJSON, _ := json.Marshal(refused)
	buf = append(buf, `],"refused":`...)
	buf = append(buf, refusedJSON...)
	// The gateway's hold, which a client uses as its wait_ms unless told
	// otherwise (a proxy that cuts held requests sooner makes it shorten).
	buf = append(buf, `,"poll_wait_ms":`...)
	buf = strconv.AppendInt(buf, h.wait.Milliseconds(), 10)
	writePollBody(w, append(buf, "}\n"...))
}
