package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
)

// handleSessionCreate serves POST /v1/sessions. When a client key is
// configured it must be presented (the agent key also serves).
func (a *API) handleSessionCreate(w http.ResponseWriter, r *http.Request) {
	if !a.eng.IsClientKey(Bearer(r, false)) {
		WriteError(w, r, toolgate.Errorf(toolgate.EUnauthenticated, "this gateway requires its client key to create sessions (Authorization: Bearer <client key>)"))
		return
	}
	var req toolgate.CreateSessionRequest
	if err := DecodeJSON(r, &req, true, true); err != nil {
		WriteError(w, r, err)
		return
	}
	created, err := a.eng.CreateSession(r.Context(), req)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, created)
}

// handleSessionGet serves GET /v1/sessions/{sid}.
func (a *API) handleSessionGet(w http.ResponseWriter, r *http.Request) {
	view, err := a.eng.SessionView(r.Context(), chi.URLParam(r, "sid"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, view)
}

// handleSessionClose serves POST /v1/sessions/{sid}/close and DELETE.
func (a *API) handleSessionClose(w http.ResponseWriter, r *http.Request) {
	sid := chi.URLParam(r, "sid")
	if err := a.eng.CloseSession(r.Context(), sid); err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"type": "session_closed", "session_id": sid})
}

// handleSessionList serves GET /v1/sessions (agent key): open sessions.
func (a *API) handleSessionList(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListSessions(r.Context())
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"sessions": list})
}

// handleToolsRegister serves POST /v1/sessions/{sid}/tools.
func (a *API) handleToolsRegister(w http.ResponseWriter, r *http.Request) {
	var req toolgate.RegisterToolsRequest
	if err := DecodeJSON(r, &req, false, false); err != nil {
		WriteError(w, r, err)
		return
	}
	if req.Tools == nil {
		WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "the body must have a tools array"))
		return
	}
	reply, err := a.eng.RegisterTools(r.Context(), chi.URLParam(r, "sid"), req)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, reply)
}

// handleToolDelete serves DELETE /v1/sessions/{sid}/tools/{name}.
func (a *API) handleToolDelete(w http.ResponseWriter, r *http.Request) {
	sid, name := chi.URLParam(r, "sid"), chi.URLParam(r, "name")
	if err := a.eng.RemoveTool(r.Context(), sid, name); err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"type": "tool_removed", "name": name})
}

// handleToolsList serves GET /api/tools (agent key).
func (a *API) handleToolsList(w http.ResponseWriter, r *http.Request) {
	tools, err := a.eng.ListTools(r.Context(), r.URL.Query().Get("session_id"))
	if err != nil {
		WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"tools": tools})
}
