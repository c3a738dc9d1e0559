package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jsonhttp"
	"github.com/toolgate/toolgate/outputsafety"
)

// toolHandlers serve the tools: a session registers and removes its own,
// the caller lists them all.
type toolHandlers struct {
	tools Tools
	// screen finds text aimed at a model in the tools' descriptions and
	// schemas, which the caller may hand to its model as they are.
	screen *outputsafety.Sanitizer
}

// handleToolsRegister serves POST /v1/sessions/{sid}/tools.
func (h *toolHandlers) handleToolsRegister(w http.ResponseWriter, r *http.Request) {
	var req toolgate.RegisterToolsRequest
	if err := DecodeJSON(r, &req, false, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if req.Tools == nil {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "the body must have a tools array"))
		return
	}
	reply, err := h.tools.RegisterTools(r.Context(), chi.URLParam(r, "sid"), req)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, reply)
}

// handleToolDelete serves DELETE /v1/sessions/{sid}/tools/{name}.
func (h *toolHandlers) handleToolDelete(w http.ResponseWriter, r *http.Request) {
	sid, name := chi.URLParam(r, "sid"), chi.URLParam(r, "name")
	// A name no registration can have names no tool: not looked for.
	if !toolgate.ToolNamePattern.MatchString(name) {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EToolNotFound, "session %s has no tool %q", sid, name))
		return
	}
	if err := h.tools.RemoveTool(r.Context(), sid, name); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, map[string]any{"type": "tool_removed", "name": name})
}

// handleToolsList serves GET /api/tools?session_id=&limit=&after=
// &descriptions= (agent key): one session's tools, or a page of every tool
// with next_after. A caller hands these tools to its model as the agent
// loop does, so they are screened as the agent loop's are
// (outputsafety.ScreenTool): a tool from outside the gateway whose
// description or parameter descriptions hold text aimed at a model is
// listed with them withheld and description_withheld true;
// descriptions=registered lists them as registered (still flagged).
func (h *toolHandlers) handleToolsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	descriptions := q.Get("descriptions")
	if descriptions != "" && descriptions != "screened" && descriptions != "registered" {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "descriptions must be screened (the default) or registered"))
		return
	}
	query := toolgate.ToolQuery{SessionID: q.Get("session_id"), After: q.Get("after"), Limit: limit}
	// An unknown session is 404 here; one whose id cannot exist is not read.
	if err := sessionFilter(query.SessionID, toolgate.ENotFound); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if err := textParam("after", query.After); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	list, err := h.tools.ListToolsPage(r.Context(), query)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	for i, t := range list.Tools {
		screened, _ := h.screen.ScreenToolInfo(t)
		if descriptions == "registered" {
			list.Tools[i].DescriptionWithheld = screened.DescriptionWithheld
		} else {
			list.Tools[i] = screened
		}
	}
	jsonhttp.WriteJSON(w, http.StatusOK, list)
}
