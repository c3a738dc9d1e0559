package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/store"
)

// Several nodes on one database (PostgreSQL; store.Shared). The tables are
// the truth and each node's memory a copy of what it serves: another node's
// committed change reaches this one as a store.Change carrying an id, and
// this node reads that session or call again (applyChanges). A session
// created elsewhere is read in the first time a request names it
// (ensureSession), so a change that has not arrived yet never makes a
// session look unknown. One node at a time, holding the sweeper lease,
// ends overdue calls, expires sessions and prunes events; each node keeps
// a lease of its own alive, and when it lapses (the node was killed) the
// sweeper claims the runs and built-in calls that node was driving.

const (
	// nodeLeaseTTL is how long a node counts as alive after renewing its
	// lease: past it, its work is claimed by another node.
	nodeLeaseTTL = 15 * time.Second
	// nodeLeaseEvery is how often a node renews its lease.
	nodeLeaseEvery = 5 * time.Second
	// sweeperLease names the lease of the one node that sweeps.
	sweeperLease = "sweeper"
)

// shared reports whether other nodes share the database.
func (e *Engine) shared() bool { return e.st.Shared() }

// joinCluster makes this node known (its lease), listens to the other
// nodes' changes and starts the loop that renews the lease. Called by
// NewEngine on a shared store, after the open sessions were loaded.
func (e *Engine) joinCluster(ctx context.Context) error {
	e.syncedAt = e.now()
	e.checkFleetKey(ctx, true)
	if _, err := e.st.TakeLease(ctx, store.NodeLease(e.st.Node()), nodeLeaseTTL); err != nil {
		return err
	}
	e.st.OnChanges(e.applyChanges)
	e.stopped.Add(1)
	go func() {
		defer e.stopped.Done()
		t := time.NewTicker(nodeLeaseEvery)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				// Another node sweeps at once, and claims this node's runs
				// and built-in calls (stopped with the engine) at its next
				// sweep rather than after the lease would have lapsed.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				e.st.ReleaseLease(ctx, sweeperLease)
				e.st.ReleaseLease(ctx, store.NodeLease(e.st.Node()))
				cancel()
				return
			case <-t.C:
				// Nothing else on this loop: a write held up elsewhere
				// must not let a live node's lease lapse.
				if _, err := e.st.TakeLease(e.life, store.NodeLease(e.st.Node()), nodeLeaseTTL); err != nil {
					e.log.Error("renew the node's lease", "err", err)
				}
			}
		}
	}()
	e.log.Info("joined the nodes sharing the database", "node", e.st.Node())
	return nil
}

// applyChanges reads again what other nodes changed. It runs on the
// store's listener goroutine, one batch at a time.
func (e *Engine) applyChanges(changes []store.Change) {
	ctx := e.life
	for _, c := range changes {
		switch c.Kind {
		case store.ChangeSession:
			e.refreshSession(ctx, c.ID)
		case store.ChangeEvents:
			e.sessions.wake(c.ID)
		case store.ChangeCall:
			e.refreshCall(ctx, c.ID)
		case store.ChangeResync:
			e.resync(ctx)
		}
	}
}

// ensureSession reads an open session another node created into this
// node's table, the first time a request names it; it reports whether the
// session is open. Without other nodes every open session is in the table
// already.
func (e *Engine) ensureSession(ctx context.Context, sid string) bool {
	if e.sessions.isOpen(sid) {
		return true
	}
	if !e.shared() || sid == "" {
		return false
	}
	e.refreshSession(ctx, sid)
	return e.sessions.isOpen(sid)
}

// ensureSessionByToken is ensureSession for the session a token opens.
func (e *Engine) ensureSessionByToken(ctx context.Context, hash string) {
	if !e.shared() || e.sessions.withToken(hash, func(*sessionState) {}) {
		return
	}
	row, err := e.st.FindSessionByTokenHash(ctx, hash)
	if err != nil || row == nil || row.Closed() {
		return
	}
	e.refreshSession(ctx, row.ID)
}

// refreshSession makes this node's copy of a session what the tables say:
// closed (its streams end), or open with its stored tools and settings.
func (e *Engine) refreshSession(ctx context.Context, sid string) {
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
func (e *Engine) applySessionRow(row *store.SessionRow, tools []store.ToolRow) {
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
func (e *Engine) applyOwnChange(ctx context.Context, sid string, version int64, patch func(s *sessionState)) {
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

// refreshCall tells this node's waiters of a call another node changed:
// its end, or its latest progress. A call nobody here waits for, runs or
// counts costs no read.
func (e *Engine) refreshCall(ctx context.Context, id string) {
	if !e.waiters.known(id) && !e.running.has(id) && !e.progress.watched(id) {
		return
	}
	row, err := e.st.GetCall(ctx, id)
	if err != nil {
		e.log.Error("read a call another node changed", "call", id, "err", err)
		return
	}
	if row == nil {
		return
	}
	if toolgate.CallStatus(row.Status).Final() {
		e.waiters.ended(id)
		e.running.stop(id) // a tool running here for it stops
		return
	}
	if e.running.has(id) {
		// Claimed by another node (this one's lease lapsed while it was
		// cut off): its run there is the call's now.
		if node, err := e.st.CallNode(ctx, id); err == nil && node != "" && node != e.st.Node() {
			e.log.Warn("another node claimed a built-in call running here; stopping it", "call", id, "node", node)
			e.running.stop(id)
		}
	}
	if row.Progress.Valid {
		e.progress.reported(id, json.RawMessage(row.Progress.String))
	}
}

// resyncMargin is how far before the last re-read the next one starts:
// changed_at and last_seen_at are written with the clock of the node that
// wrote them, which may be behind this one's.
const resyncMargin = time.Minute

// resync reads again what another node may have changed while its notes
// could not arrive: the sessions changed or seen since the last re-read
// (each one's tools only when its version moved), and the calls someone
// here waits for; the streams here look at their logs again. A re-read
// that fails is tried again a second later.
func (e *Engine) resync(ctx context.Context) {
	e.syncMu.Lock()
	defer e.syncMu.Unlock()
	started := e.now()
	if err := e.resyncSessions(ctx, e.syncedAt.Add(-resyncMargin)); err != nil {
		e.log.Error("read again what other nodes changed; trying again in a second", "err", err)
		if e.syncRetry.CompareAndSwap(false, true) {
			time.AfterFunc(time.Second, func() {
				e.syncRetry.Store(false)
				if e.life.Err() == nil {
					e.resync(e.life)
				}
			})
		}
		return
	}
	e.syncedAt = started
	e.sessions.each((*sessionState).wakeLocked)
	for _, id := range e.waiters.waitedFor() {
		e.refreshCall(ctx, id)
	}
}

// resyncSessions applies the sessions changed since: closed ones leave,
// others are read in when their version moved.
func (e *Engine) resyncSessions(ctx context.Context, since time.Time) error {
	rows, err := e.st.SessionsChangedSince(ctx, since)
	if err != nil {
		return err
	}
	for i := range rows {
		row := &rows[i]
		if row.Closed() {
			if e.sessions.remove(row.ID, row.CloseReason) {
				e.toolWatch.changed(row.ID)
			}
			continue
		}
		current := false
		e.sessions.with(row.ID, func(s *sessionState) { current = s.version >= row.Version })
		if current {
			continue
		}
		tools, err := e.st.ListTools(ctx, row.ID)
		if err != nil {
			return err
		}
		e.applySessionRow(row, tools)
	}
	return nil
}

// copySeen reads when the open sessions were last seen, as the nodes
// holding their streams and polls wrote it since the last sweep, into this
// node's copies: a session another node serves stays reachable here.
func (e *Engine) copySeen(ctx context.Context, since time.Time) {
	seen, err := e.st.SessionsSeenSince(ctx, since)
	if err != nil {
		e.log.Error("read when sessions were seen", "err", err)
		return
	}
	ids := make([]string, len(seen))
	for i := range seen {
		ids[i] = seen[i].ID
	}
	e.sessions.withEach(ids, func(i int, s *sessionState) {
		if at := time.UnixMilli(seen[i].LastSeenAt); at.After(s.lastSeen) {
			s.lastSeen, s.lastSave = at, at
		}
	})
}

// sessionSeen is when a session was last seen, to be written.
type sessionSeen struct {
	id string
	at time.Time
}

// writeTouches stores when sessions were last seen.
func (e *Engine) writeTouches(ctx context.Context, touched []sessionSeen) {
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

// seenElsewhere reports whether a session this node would expire was seen
// by another node within the time-to-live (its stream is there); its
// last sight is then copied here.
func (e *Engine) seenElsewhere(ctx context.Context, sid string, now time.Time) bool {
	row, err := e.st.GetSession(ctx, sid)
	if err != nil || row == nil {
		return true // not now: the next sweep looks again
	}
	seen := time.UnixMilli(row.LastSeenAt)
	if now.Sub(seen) >= e.cfg.SessionTTL {
		return false
	}
	e.sessions.with(sid, func(s *sessionState) {
		if seen.After(s.lastSeen) {
			s.lastSeen, s.lastSave = seen, seen
		}
	})
	return true
}

// sweeper reports whether this node does the sweep now: always without
// other nodes, else while it holds the sweeper lease.
func (e *Engine) sweeper(ctx context.Context) bool {
	if !e.shared() {
		return true
	}
	ok, err := e.st.TakeLease(ctx, sweeperLease, 3*e.cfg.SweepInterval)
	if err != nil {
		e.log.Error("take the sweeper lease", "err", err)
		return false
	}
	return ok
}

// claimOrphans takes over, for this node, the built-in calls and runs of
// nodes whose lease lapsed, and goes on with them.
func (e *Engine) claimOrphans(ctx context.Context) {
	calls, err := e.st.OrphanedBuiltinCalls(ctx)
	if err != nil {
		e.log.Error("list orphaned built-in calls", "err", err)
	}
	for _, o := range calls {
		claimed, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (bool, error) { return tx.ClaimCall(o) })
		if err != nil || !claimed {
			continue
		}
		row, err := e.st.GetCall(ctx, o.ID)
		if err != nil || row == nil {
			continue
		}
		e.log.Info("claimed a built-in call of a stopped node", "call", o.ID, "from", o.Node)
		e.resumeBuiltinCall(ctx, row)
	}
	if e.cfg.OrphanRuns != nil {
		select {
		case e.cfg.OrphanRuns <- struct{}{}:
		default: // one signal pending is enough
		}
	}
}

// fleetKeySetting holds the hash of the agent key the nodes sharing the
// database were last started with: nodes must agree on the key, or a
// caller is refused by some of them only.
const fleetKeySetting = "agent_key_sha256_of_nodes"

// checkFleetKey compares this node's agent key with the one the nodes
// were started with and logs an error when they differ. At start-up
// (atStart) this node's key is stored after the check, so that a
// rotation (every node restarted with a new key) ends the errors once
// every node has it; the sweep only checks.
func (e *Engine) checkFleetKey(ctx context.Context, atStart bool) {
	mine := hashToken(e.agentKey.plain)
	stored, ok, err := e.st.Setting(ctx, fleetKeySetting)
	if err != nil {
		e.log.Error("read the agent key of the other nodes", "err", err)
		return
	}
	if ok && stored != mine {
		e.log.Error("NODES DISAGREE ON THE AGENT KEY: this node's --agent-key is not the one another node sharing the database was started with, so callers are refused by some nodes; give every node the same key")
	}
	if atStart && stored != mine {
		if err := e.st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting(fleetKeySetting, mine) }); err != nil {
			e.log.Error("store the agent key's hash for the other nodes", "err", err)
		}
	}
}
