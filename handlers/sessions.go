package handlers

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// sessionHandlers serve the sessions: a client creates its own, the
// session or the caller reads and closes it, the caller lists them.
type sessionHandlers struct {
	sessions Sessions
}

// handleSessionCreate serves POST /v1/sessions, behind requireClientKey.
func (h *sessionHandlers) handleSessionCreate(w http.ResponseWriter, r *http.Request) {
	var req toolgate.CreateSessionRequest
	if err := DecodeJSON(r, &req, true, true); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	created, err := h.sessions.CreateSession(r.Context(), req)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusCreated, created)
}

// handleSessionGet serves GET /v1/sessions/{sid}.
func (h *sessionHandlers) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	view, err := h.sessions.SessionView(r.Context(), chi.URLParam(r, "sid"))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, view)
}

// handleSessionClose serves POST /v1/sessions/{sid}/close and DELETE.
func (h *sessionHandlers) handleSessionClose(w http.ResponseWriter, r *http.Request) {
	sid := chi.URLParam(r, "sid")
	if err := h.sessions.CloseSession(r.Context(), sid); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, map[string]any{"type": "session_closed", "session_id": sid})
}

// handleSessionList serves GET /v1/sessions?limit=&before= (agent key): a
// page of the open sessions, newest first, with next_before.
func (h *sessionHandlers) handleSessionList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	before, err := beforeCursor(q.Get("before"), "session")
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	list, err := h.sessions.ListSessions(r.Context(), toolgate.SessionQuery{Before: before, Limit: limit})
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, list)
}

// pageLimit reads a list's limit parameter: 0 when absent, else a
// positive whole number (the engine caps it).
func pageLimit(text string) (int, error) {
	if text == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 1 {
		return 0, toolgate.Errorf(toolgate.EBadRequest, "limit must be a positive whole number")
	}
	return n, nil
}

// beforeCursor reads a list's before parameter: "" when absent, else the
// id of a what (session, call) as the gateway prints it, the next_before
// of the previous page: a UUID in lowercase with hyphens. The other
// spellings of a UUID (uppercase, braces, urn:uuid:, no hyphens) are
// refused: ids are compared as text, so they would give a wrong page.
func beforeCursor(text, what string) (string, error) {
	if text == "" {
		return "", nil
	}
	if id, err := uuid.Parse(text); err != nil || id.String() != text {
		return "", toolgate.Errorf(toolgate.EBadRequest,
			"before must be a %s id from next_before, as the gateway gives it (a lowercase UUID such as 01a20b24-c8e2-79cb-b053-d813ec727e4e)", what)
	}
	return text, nil
}
