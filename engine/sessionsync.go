package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/store"
)

// The engine's copy of a session follows the tables: read again when a
// change this node committed was not the next one its copy expected
// (applyOwnChange), and, with other nodes, whenever another node may have
// changed it (the nodes: nodes.go).

// ensureSession reads an open session another node created into this
// node's table, the first time a request names it; it reports whether the
// session is open. Without other nodes every open session is in the table
// already.
func (e *core) ensureSession(ctx context.Context, sid string) bool {
	if e.sessions.isOpen(sid) {
		return true
	}
	if sid == "" || !e.nodes.catchUp(ctx, sid) {
		return false
	}
	return e.sessions.isOpen(sid)
}

// ensureSessionByToken is ensureSession for the session a token opens.
func (e *core) ensureSessionByToken(ctx context.Context, hash string) {
	if e.sessions.withToken(hash, func(*sessionState) {}) {
		return
	}
	e.nodes.catchUpByToken(ctx, hash)
}

// refreshSession makes this node's copy of a session what the tables say:
// closed (its streams end), or open with its stored tools and settings.
func (e *core) refreshSession(ctx context.Context, sid string) {
	row, err := e.st.GetSession(ctx, sid)
	if err != nil {
		e.log.Error("read a session another node changed", "session", sid, "err", err)
		return
	}
	if row == nil {
		return
	}
	if row.Closed() {
		if e.sessions.remove(sid, row.CloseReason) {
			e.toolWatch.changed(sid)
		}
		return
	}
	tools, err := e.st.ListTools(ctx, sid)
	if err != nil {
		e.log.Error("read the tools of a session another node changed", "session", sid, "err", err)
		return
	}
	e.applySessionRow(row, tools)
}

// applySessionRow installs an open session's stored row and tools in the
// table, adding the session when this node did not know it. It reports
// whether its tools changed (then watchers are told).
func (e *core) applySessionRow(row *store.SessionRow, tools []store.ToolRow) {
	seen := time.UnixMilli(row.LastSeenAt)
	changed := false
	e.sessions.locked(func() {
		s := e.sessions.byID[row.ID]
		if s == nil && e.sessions.recentlyClosedLocked(row.ID) {
			return // read before it closed here
		}
		if s != nil && row.Version < s.version {
			return // read before a change this node made or already applied
		}
		if s == nil {
			s = newSessionState(*row, seen)
			s.shownReachable = s.reachable(e.now(), e.cfg)
			e.sessions.byID[row.ID] = s
			e.sessions.byToken[row.TokenHash] = s
			changed = true
		}
		s.version = row.Version
		s.row.AutoApprove = row.AutoApprove
		if seen.After(s.lastSeen) {
			s.lastSeen, s.lastSave = seen, seen
		}
		if !sameTools(s.tools, tools) {
			next := make(map[string]*toolEntry, len(tools))
			for i := range tools {
				t := &tools[i]
				if old := s.tools[t.Name]; old != nil && old.registeredAt.Equal(t.RegisteredTime()) {
					next[t.Name] = old
					continue
				}
				next[t.Name] = storedToolEntry(e.schemas, t.Spec(), t.RegisteredTime())
			}
			s.tools = next
			changed = true
		}
	})
	if changed {
		e.toolWatch.changed(row.ID)
	}
}

// applyOwnChange applies to this node's copy of a session a change this
// node just committed as version: patched in memory when the copy held
// the version just before it, else (another node's change came between,
// or was missed) the session is read again from the tables, so that the
// copy never looks current while it is not.
func (e *core) applyOwnChange(ctx context.Context, sid string, version int64, patch func(s *sessionState)) {
	patched := false
	e.sessions.with(sid, func(s *sessionState) {
		if patched = s.version == version-1; patched {
			patch(s)
			s.version = version
		}
	})
	if !patched {
		e.refreshSession(ctx, sid)
	}
}

// sameTools reports whether a session's tools in memory are the stored
// ones: the same names, each registered at the same time.
func sameTools(have map[string]*toolEntry, stored []store.ToolRow) bool {
	if len(have) != len(stored) {
		return false
	}
	for i := range stored {
		t := have[stored[i].Name]
		if t == nil || !t.registeredAt.Equal(stored[i].RegisteredTime()) {
			return false
		}
	}
	return true
}

// sessionSeen is when a session was last seen, to be written.
type sessionSeen struct {
	id string
	at time.Time
}

// writeTouches stores when sessions were last seen.
func (e *core) writeTouches(ctx context.Context, touched []sessionSeen) {
	if len(touched) == 0 {
		return
	}
	err := e.st.Write(ctx, func(tx *store.Tx) error {
		for _, t := range touched {
			if err := tx.TouchSession(t.id, t.at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.log.Error("write when sessions were seen", "err", err)
	}
}
