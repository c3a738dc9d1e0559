package mcpserve

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate"
)

// sessionRoute returns the route of /mcp/sessions/{sid}, made (and its
// tools listed) on first use; nil when the session is not open. Routes
// go when their session closes or expires (dropSession), so there are at
// most as many as open sessions.
func (e *Endpoint) sessionRoute(ctx context.Context, sid string) *route {
	e.mu.Lock()
	rt, closed := e.sessions[sid], e.closed
	e.mu.Unlock()
	if rt != nil || closed {
		return rt
	}
	if view, err := e.views.SessionView(ctx, sid); err != nil || view.ClosedAt != nil {
		return nil
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	if rt = e.sessions[sid]; rt == nil {
		rt = e.newRoute(sid, fmt.Sprintf("toolgate: the tools of client session %s, under their own names.", sid))
		e.sessions[sid] = rt
	}
	e.mu.Unlock()
	// Listed from what the engine says now: a change from here on reaches
	// the sync goroutine, which finds the route.
	if !e.syncSessionRoute(rt, sid) {
		e.dropSession(sid)
		return nil
	}
	return rt
}

// syncSessionRoute brings a session route's list up to date; false when
// the session is no longer open.
func (e *Endpoint) syncSessionRoute(rt *route, sid string) bool {
	rt.syncMu.Lock()
	defer rt.syncMu.Unlock()
	view, err := e.views.SessionView(e.life, sid)
	if err != nil || view.ClosedAt != nil {
		return false
	}
	var offers []offer
	for _, t := range view.Tools {
		if !t.Online {
			continue
		}
		key := toolKey{sid, t.Name}
		offers = append(offers, newOffer(key, t.Name, e.screened(t), "", e.callHandler(sid, t.Name)))
	}
	rt.tools.replace(sid, offers)
	return true
}

// dropSession forgets a closed session's route and ends its MCP sessions.
func (e *Endpoint) dropSession(sid string) {
	e.mu.Lock()
	rt := e.sessions[sid]
	delete(e.sessions, sid)
	e.mu.Unlock()
	if rt != nil {
		rt.closeSessions()
	}
}

// existingSessionRoute returns the route of sid if it has been made.
func (e *Endpoint) existingSessionRoute(sid string) *route {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessions[sid]
}

// ownerNote is the line a session's tool carries on /mcp, saying whose it
// is. The client's name, version and platform are the client's own words:
// when they hold text aimed at a model they are withheld.
func (e *Endpoint) ownerNote(view *toolgate.SessionView) string {
	client := view.Client.Name
	if client == "" {
		client = "a client"
	}
	if view.Client.Version != "" {
		client += " " + view.Client.Version
	}
	if view.Client.Platform != "" {
		client += " (" + view.Client.Platform + ")"
	}
	if screened, _ := e.screen.ScreenText(client); screened == "" {
		client = "a client (its name withheld: it held text aimed at the model)"
	}
	return fmt.Sprintf("[toolgate: a tool of %s, session %s]", client, view.ID)
}

// screened returns a tool as hosts are shown it: the description and
// parameters of a tool from outside the gateway pass the injection search
// the agent loop applies to what its model is shown
// (outputsafety.ScreenTool); flagged text is withheld and the tool's
// _meta says so.
func (e *Endpoint) screened(t toolgate.ToolInfo) toolgate.ToolInfo {
	t, _ = e.screen.ScreenToolInfo(t)
	return t
}
