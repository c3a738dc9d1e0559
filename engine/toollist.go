package engine

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// Tool list pages (GET /api/tools without session_id): the default and
// the largest number of tools.
const (
	defaultToolPage = 100
	maxToolPage     = 500
)

// ListTools lists the tools of open session sid, sorted by name (the
// agent loop's RemoteDirectory, and GET /api/tools?session_id=): none for
// a closed or expired session, NOT_FOUND for an unknown one.
func (e *Tools) ListTools(ctx context.Context, sid string) ([]toolgate.ToolInfo, error) {
	now := e.now()
	var tools []toolgate.ToolInfo
	// With other nodes, read from the tables: a registration through
	// another node a moment ago may not have reached this one yet.
	e.nodes.catchUp(ctx, sid)
	if e.sessions.with(sid, func(s *sessionState) { tools = e.toolInfosLocked(s, now) }) {
		return tools, nil
	}
	row, err := e.st.GetSession(ctx, sid)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, toolgate.Errorf(toolgate.ENotFound, "no session %s", sid)
	}
	return []toolgate.ToolInfo{}, nil
}

// ListToolsPage serves GET /api/tools. With q.SessionID, that session's
// tools, all of them (at most MaxToolsPerSess), in one reply. Without, a
// page of every tool the gateway knows: the built-in ones (by name), then
// the tools of every open session, newest session first and by name within
// one, read from the store as index ranges, so that a page costs its size
// however many sessions there are. q.After is the next_after of the
// previous page.
func (e *Tools) ListToolsPage(ctx context.Context, q toolgate.ToolQuery) (*toolgate.ToolList, error) {
	if q.SessionID != "" {
		if q.After != "" || q.Limit != 0 {
			return nil, toolgate.Errorf(toolgate.EBadRequest, "limit and after page the tools of every session; with session_id the reply holds all of that session's tools")
		}
		tools, err := e.ListTools(ctx, q.SessionID)
		if err != nil {
			return nil, err
		}
		return &toolgate.ToolList{Tools: tools}, nil
	}
	after, err := parseToolCursor(q.After)
	if err != nil {
		return nil, err
	}
	limit := pageSize(q.Limit, defaultToolPage, maxToolPage)
	// Read one more than the page holds: whether it is there says whether
	// there is a next page.
	var read []listedTool
	if after.sessionID == "" && e.builtins != nil {
		for _, t := range e.builtins.List() {
			if t.Name > after.name && len(read) <= limit {
				read = append(read, listedTool{key: toolKey{name: t.Name}, info: t, listed: true})
			}
		}
	}
	if len(read) <= limit {
		remote, err := e.remoteToolsAfter(ctx, after, limit+1-len(read))
		if err != nil {
			return nil, err
		}
		read = append(read, remote...)
	}
	list := &toolgate.ToolList{Tools: []toolgate.ToolInfo{}}
	if len(read) > limit {
		read = read[:limit]
		next := read[limit-1].key.String()
		list.NextAfter = &next
	}
	for _, t := range read {
		if t.listed {
			list.Tools = append(list.Tools, t.info)
		}
	}
	return list, nil
}

// listedTool is a tool read for a page: its cursor key, its info, and
// whether it is listed (a tool whose session closed, or that the engine
// does not hold, since the read is not; it still moves the cursor).
type listedTool struct {
	key    toolKey
	info   toolgate.ToolInfo
	listed bool
}

// remoteToolsAfter reads up to n tools of sessions after the cursor, with
// their online state from memory.
func (e *Tools) remoteToolsAfter(ctx context.Context, after toolKey, n int) ([]listedTool, error) {
	sid, name := after.sessionID, after.name
	if sid == "" {
		name = "" // from the first remote tool
	}
	rows, err := e.st.ToolsPage(ctx, sid, name, n)
	if err != nil {
		return nil, err
	}
	out := make([]listedTool, len(rows))
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].SessionID
		out[i] = listedTool{key: toolKey{sessionID: rows[i].SessionID, name: rows[i].Name}, info: remoteToolInfo(&rows[i])}
	}
	now := e.now()
	e.sessions.withEach(ids, func(i int, s *sessionState) {
		if s.tools[rows[i].Name] != nil {
			out[i].listed = true
			out[i].info.Online = s.reachable(now, e.cfg)
			out[i].info.Presence = s.presence(now, e.cfg)
		}
	})
	return out, nil
}

// remoteToolInfo is a stored tool as the caller API lists it, its online
// state left to the caller.
func remoteToolInfo(r *store.ToolRow) toolgate.ToolInfo {
	return toolgate.ToolInfo{
		ToolSpec:     r.Spec(),
		Source:       toolgate.ToolSource{Kind: toolgate.SourceRemote, SessionID: r.SessionID},
		RegisteredAt: toolgate.TimePtr(r.RegisteredTime()),
	}
}

// toolKey is a tool's place in GET /api/tools: its session id ("" for a
// built-in tool, listed first) and its name. Its text form,
// "<session id>/<name>", is the list's cursor (next_after).
type toolKey struct {
	sessionID string
	name      string
}

// String returns the cursor text of the key.
func (k toolKey) String() string { return k.sessionID + "/" + k.name }

// parseToolCursor reads a next_after cursor; "" is the start of the list.
// Tool names hold no "/", session ids are UUIDs.
func parseToolCursor(text string) (toolKey, error) {
	if text == "" {
		return toolKey{}, nil
	}
	bad := toolgate.Errorf(toolgate.EBadRequest, "after must be the next_after of a previous page")
	sid, name, ok := strings.Cut(text, "/")
	if !ok || name == "" || len(name) > 64 || strings.Contains(name, "/") {
		return toolKey{}, bad
	}
	if sid != "" {
		id, err := uuid.Parse(sid)
		if err != nil || id.String() != sid {
			return toolKey{}, bad
		}
	}
	return toolKey{sessionID: sid, name: name}, nil
}
