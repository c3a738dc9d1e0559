package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// callHandlers serve the caller's calls.
type callHandlers struct {
	calls   Calls
	maxWait time.Duration // cap on GET /v1/calls/{id}?wait_ms=
}

// handleCallCreate serves POST /v1/calls. With wait (the default) the reply
// comes when the call ends: 200 with the final record, timed_out included.
// With "wait": false it is 202 with the pending record. If the caller goes
// away or the gateway shuts down while waiting, the call goes on; the
// caller re-attaches with GET /v1/calls/{id}?wait_ms=.
func (h *callHandlers) handleCallCreate(w http.ResponseWriter, r *http.Request) {
	var req toolgate.CallRequest
	if err := DecodeJSON(r, &req, true, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if err := checkIdempotencyKey(key); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if req.SessionID != "" && !toolgate.WellFormedID(req.SessionID) {
		jsonhttp.WriteError(w, r, notWellFormed("session", req.SessionID))
		return
	}
	call, err := h.calls.CreateCall(r.Context(), req, key)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if req.Wait != nil && !*req.Wait {
		jsonhttp.WriteJSON(w, http.StatusAccepted, call)
		return
	}
	final, err := h.calls.WaitCall(r.Context(), call.ID, -1)
	if err != nil {
		// The request context ended: reply with what is known, if anyone listens.
		if current, gerr := h.calls.GetCall(detached(r.Context()), call.ID); gerr == nil {
			jsonhttp.WriteJSON(w, http.StatusAccepted, current)
			return
		}
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, final)
}

// handleCallGet serves GET /v1/calls/{id}?wait_ms=: the record, held until
// the call ends when wait_ms is given.
func (h *callHandlers) handleCallGet(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	wait, err := durationParam(r, "wait_ms", 0, h.maxWait)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if !toolgate.WellFormedID(id) {
		jsonhttp.WriteError(w, r, notWellFormed("call", id))
		return
	}
	call, err := h.calls.WaitCall(r.Context(), id, wait)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, call)
}

// handleCallList serves GET /v1/calls: history, newest first.
func (h *callHandlers) handleCallList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := toolgate.CallQuery{
		SessionID: q.Get("session_id"),
		Tool:      q.Get("tool"),
		Status:    toolgate.CallStatus(q.Get("status")),
	}
	// Filters that can match nothing are refused before the database is
	// read, as before is.
	if err := sessionFilter(query.SessionID, toolgate.EBadRequest); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if err := textParam("tool", query.Tool); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	before, err := beforeCursor(q.Get("before"), "call")
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	query.Before = before
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "limit must be a positive whole number"))
			return
		}
		query.Limit = n
	}
	list, err := h.calls.ListCalls(r.Context(), query)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, list)
}

// handleCallCancel serves POST /v1/calls/{id}/cancel.
func (h *callHandlers) handleCallCancel(w http.ResponseWriter, r *http.Request) {
	call, err := h.calls.CancelCall(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, call)
}

// durationParam reads a millisecond query parameter, capped at max.
func durationParam(r *http.Request, name string, def, max time.Duration) (time.Duration, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, toolgate.Errorf(toolgate.EBadRequest, "%s must be a whole number of milliseconds, not %q", name, s)
	}
	d := time.Duration(n) * time.Millisecond
	if n > int64(max/time.Millisecond) {
		d = max
	}
	return d, nil
}
