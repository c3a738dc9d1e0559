package handlers

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/clientaddr"
	"github.com/toolgate/toolgate/internal/jsonhttp"
)

// Agent is what the runs API and the approval endpoints need of the
// gateway; the server implements it.
type Agent interface {
	IsAgentKey(secret string) bool
	// StartRun stores a new run and starts it; origin says who started
	// it (an empty origin is the agent key).
	StartRun(ctx context.Context, req toolgate.RunRequest, origin RunOrigin) (runID string, feed toolgate.RunFeed, err error)
	// GetRun reads a run with its messages and calls; with sessionID set,
	// only a run of that session (NOT_FOUND otherwise).
	GetRun(ctx context.Context, id, sessionID string) (*toolgate.Run, error)
	// RunFeed returns the events of a run still going on in this process,
	// nil when it is not.
	RunFeed(id string) toolgate.RunFeed

	ApproveCall(ctx context.Context, id, secret string) (*toolgate.Call, error)
	DenyCall(ctx context.Context, id, secret, reason string) (*toolgate.Call, error)
	SetAutoApprove(ctx context.Context, sid string, on bool) (*toolgate.SessionView, error)
}

// RunOrigin is who started a run: the session whose token started it and
// the client address (a key of addrKey: an IPv4 address, an IPv6 /64) it
// came from, both empty for the agent key; Address is empty too when the
// address cannot be read.
type RunOrigin struct {
	Session string
	Address string
}

// MountAgent returns the Options.Mount that adds the runs API, approval
// and the auto-approve setting. runStarts bounds the runs one client
// address may start with a session's token (POST /v1/sessions/{sid}/runs),
// whatever the session: sessions are cheap to create, so a bound per
// session alone would not bound an address. The agent key's runs
// (POST /v1/runs) are not counted.
func MountAgent(ag Agent, runStarts AddressLimit) func(r Router, api *API) {
	return func(r Router, api *API) {
		h := &agentHandlers{api: api, ag: ag, runStarts: newAddressBuckets(runStarts, "runs started"), trusted: runStarts.TrustedProxies}
		r.With(api.RequireAgent).Post("/v1/runs", h.handleRunCreate)
		r.With(api.RequireAgent, runInPath).Get("/v1/runs/{id}", h.handleRunGet)
		r.With(api.requireSession, sessionInPath).Post("/v1/sessions/{sid}/runs", h.handleRunCreate)
		r.With(api.requireSession, sessionInPath, runInPath).Get("/v1/sessions/{sid}/runs/{id}", h.handleRunGet)
		r.With(api.requireSessionOrAgent, sessionInPath).Post("/v1/sessions/{sid}/settings", h.handleSettings)
		// Approve and deny check their credentials in the engine.
		r.With(callInPath).Post("/v1/calls/{id}/approve", h.handleApprove)
		r.With(callInPath).Post("/v1/calls/{id}/deny", h.handleDeny)
	}
}

type agentHandlers struct {
	api       *API
	ag        Agent
	runStarts *addressBuckets // runs started with a session's token, per client address
	trusted   []netip.Prefix  // the proxies whose X-Forwarded-For names the client
}

// handleRunCreate serves POST /v1/runs (agent key) and
// POST /v1/sessions/{sid}/runs (that session's token, for its own
// session). With Accept: text/event-stream the reply streams the run's
// events; else it is the final run record (202 with the running record
// when "wait": false, or when the caller goes away first).
func (h *agentHandlers) handleRunCreate(w http.ResponseWriter, r *http.Request) {
	var req toolgate.RunRequest
	if err := DecodeJSON(r, &req, true, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	var origin RunOrigin
	if sid := chi.URLParam(r, "sid"); sid != "" {
		if req.SessionID != "" && req.SessionID != sid {
			jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "session_id must be this session's id or left out"))
			return
		}
		req.SessionID, origin.Session = sid, sid
		if addr, ok := clientaddr.FromRequest(r, h.trusted); ok {
			origin.Address = clientaddr.AddressKey(addr)
		}
		if err := h.runStarts.take(r); err != nil {
			jsonhttp.WriteError(w, r, err)
			return
		}
	} else if req.SessionID != "" && !toolgate.WellFormedID(req.SessionID) {
		jsonhttp.WriteError(w, r, notWellFormed("session", req.SessionID))
		return
	}
	id, feed, err := h.ag.StartRun(r.Context(), req, origin)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if wantsStream(r) {
		h.streamRun(w, r, feed)
		return
	}
	status := http.StatusOK
	if req.Wait == nil || *req.Wait {
		if err := waitEnded(r.Context(), feed); err != nil {
			status = http.StatusAccepted
		}
	} else {
		status = http.StatusAccepted
	}
	run, err := h.ag.GetRun(detached(r.Context()), id, "")
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, status, run)
}

// handleRunGet serves GET /v1/runs/{id} (agent key) and
// GET /v1/sessions/{sid}/runs/{id} (that session's token, for its runs):
// the run with its messages and calls; with Accept: text/event-stream, the
// events of a run still going on in this process (from its start), else
// the record.
func (h *agentHandlers) handleRunGet(w http.ResponseWriter, r *http.Request) {
	id, sid := chi.URLParam(r, "id"), chi.URLParam(r, "sid")
	run, err := h.ag.GetRun(r.Context(), id, sid)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if wantsStream(r) {
		if feed := h.ag.RunFeed(id); feed != nil {
			h.streamRun(w, r, feed)
			return
		}
	}
	jsonhttp.WriteJSON(w, http.StatusOK, run)
}

func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// waitEnded waits for the run to end; an error when ctx ended first.
func waitEnded(ctx context.Context, feed toolgate.RunFeed) error {
	from := 0
	for {
		events, ended, err := feed.Next(ctx, from)
		if err != nil || ended {
			return err
		}
		from += len(events)
	}
}

// streamRun writes the run's events as Server-Sent Events until the run
// ends or the caller goes away (the run goes on either way), with pings
// while it waits (on an approval, a slow client).
func (h *agentHandlers) streamRun(w http.ResponseWriter, r *http.Request, feed toolgate.RunFeed) {
	out := startStream(w, h.api.opts.StreamWriteTimeout)
	heartbeat := h.api.opts.Heartbeat
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	var body []byte
	from := 0
	for {
		ctx, cancel := context.WithTimeout(r.Context(), heartbeat)
		events, ended, err := feed.Next(ctx, from)
		cancel()
		body = body[:0]
		for _, ev := range events {
			from++
			body = appendSSE(body, toolgate.Event{Seq: int64(from), Type: ev.Type, Data: ev.Data})
		}
		if r.Context().Err() != nil {
			return
		}
		if err != nil && len(events) == 0 {
			body = appendPing(body, time.Now())
		}
		if out.write(body) != nil || ended {
			return
		}
	}
}

// handleApprove serves POST /v1/calls/{id}/approve, with the agent key or
// the token of the session that started the call's run.
func (h *agentHandlers) handleApprove(w http.ResponseWriter, r *http.Request) {
	call, err := h.ag.ApproveCall(r.Context(), chi.URLParam(r, "id"), jsonhttp.Bearer(r, false))
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, call)
}

// handleDeny serves POST /v1/calls/{id}/deny, body {"reason": "..."}
// (optional), with the same credentials as approve.
func (h *agentHandlers) handleDeny(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Reason string `json:"reason"`
	}
	if err := DecodeJSON(r, &body, true, true); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	call, err := h.ag.DenyCall(r.Context(), chi.URLParam(r, "id"), jsonhttp.Bearer(r, false), body.Reason)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, call)
}

// handleSettings serves POST /v1/sessions/{sid}/settings, body
// {"auto_approve": true|false}, with the session's token or the agent key.
func (h *agentHandlers) handleSettings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AutoApprove *bool `json:"auto_approve"`
	}
	if err := DecodeJSON(r, &body, true, false); err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	if body.AutoApprove == nil {
		jsonhttp.WriteError(w, r, toolgate.Errorf(toolgate.EBadRequest, "auto_approve (true or false) is required"))
		return
	}
	view, err := h.ag.SetAutoApprove(r.Context(), chi.URLParam(r, "sid"), *body.AutoApprove)
	if err != nil {
		jsonhttp.WriteError(w, r, err)
		return
	}
	jsonhttp.WriteJSON(w, http.StatusOK, view)
}
