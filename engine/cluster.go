package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
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

// cluster is the engine's nodes when other nodes share the database.
type cluster struct {
	e *core

	// syncedAt is when the last re-read of other nodes' changes began
	// (resync), under syncMu; syncRetry marks a retry pending.
	syncMu    sync.Mutex
	syncedAt  time.Time
	syncRetry atomic.Bool
}

// join makes this node known (its lease), listens to the other nodes'
// changes and starts the loop that renews the lease. Called by New on a
// shared store, after the open sessions were loaded.
func (c *cluster) join(ctx context.Context) error {
	c.syncedAt = c.e.now()
	c.checkFleetKey(ctx, true)
	if _, err := c.e.st.TakeLease(ctx, store.NodeLease(c.e.st.Node()), nodeLeaseTTL); err != nil {
		return err
	}
	c.e.st.OnChanges(c.applyChanges)
	c.e.stopped.Add(1)
	go func() {
		defer c.e.stopped.Done()
		t := time.NewTicker(nodeLeaseEvery)
		defer t.Stop()
		for {
			select {
			case <-c.e.stop:
				// Another node sweeps at once, and claims this node's runs
				// and built-in calls (stopped with the engine) at its next
				// sweep rather than after the lease would have lapsed.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				c.e.st.ReleaseLease(ctx, sweeperLease)
				c.e.st.ReleaseLease(ctx, store.NodeLease(c.e.st.Node()))
				cancel()
				return
			case <-t.C:
				// Nothing else on this loop: a write held up elsewhere
				// must not let a live node's lease lapse.
				if _, err := c.e.st.TakeLease(c.e.life, store.NodeLease(c.e.st.Node()), nodeLeaseTTL); err != nil {
					c.e.log.Error("renew the node's lease", "err", err)
				}
			}
		}
	}()
	c.e.log.Info("joined the nodes sharing the database", "node", c.e.st.Node())
	return nil
}

// applyChanges reads again what other nodes changed. It runs on the
// store's listener goroutine, one batch at a time.
func (c *cluster) applyChanges(changes []store.Change) {
	ctx := c.e.life
	for _, ch := range changes {
		switch ch.Kind {
		case store.ChangeSession:
			c.e.refreshSession(ctx, ch.ID)
		case store.ChangeEvents:
			c.e.sessions.wake(ch.ID)
		case store.ChangeCall:
			c.refreshCall(ctx, ch.ID)
		case store.ChangeResync:
			c.resync(ctx)
		}
	}
}

// refreshCall tells this node's waiters of a call another node changed:
// its end, or its latest progress. A call nobody here waits for, runs or
// counts costs no read.
func (c *cluster) refreshCall(ctx context.Context, id string) {
	if !c.e.waiters.known(id) && !c.e.running.has(id) && !c.e.progress.watched(id) {
		return
	}
	row, err := c.e.st.GetCall(ctx, id)
	if err != nil {
		c.e.log.Error("read a call another node changed", "call", id, "err", err)
		return
	}
	if row == nil {
		return
	}
	if toolgate.CallStatus(row.Status).Final() {
		c.e.waiters.ended(id)
		c.e.running.stop(id) // a tool running here for it stops
		return
	}
	if c.e.running.has(id) {
		// Claimed by another node (this one's lease lapsed while it was
		// cut off): its run there is the call's now.
		if node, err := c.e.st.CallNode(ctx, id); err == nil && node != "" && node != c.e.st.Node() {
			c.e.log.Warn("another node claimed a built-in call running here; stopping it", "call", id, "node", node)
			c.e.running.stop(id)
		}
	}
	if row.Progress.Valid {
		c.e.progress.reported(id, json.RawMessage(row.Progress.String))
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
func (c *cluster) resync(ctx context.Context) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	started := c.e.now()
	if err := c.resyncSessions(ctx, c.syncedAt.Add(-resyncMargin)); err != nil {
		c.e.log.Error("read again what other nodes changed; trying again in a second", "err", err)
		if c.syncRetry.CompareAndSwap(false, true) {
			time.AfterFunc(time.Second, func() {
				c.syncRetry.Store(false)
				if c.e.life.Err() == nil {
					c.resync(c.e.life)
				}
			})
		}
		return
	}
	c.syncedAt = started
	c.e.sessions.each((*sessionState).wakeLocked)
	for _, id := range c.e.waiters.waitedFor() {
		c.refreshCall(ctx, id)
	}
}

// resyncSessions applies the sessions changed since: closed ones leave,
// others are read in when their version moved.
func (c *cluster) resyncSessions(ctx context.Context, since time.Time) error {
	rows, err := c.e.st.SessionsChangedSince(ctx, since)
	if err != nil {
		return err
	}
	for i := range rows {
		row := &rows[i]
		if row.Closed() {
			if c.e.sessions.remove(row.ID, row.CloseReason) {
				c.e.toolWatch.changed(row.ID)
			}
			continue
		}
		current := false
		c.e.sessions.with(row.ID, func(s *sessionState) { current = s.version >= row.Version })
		if current {
			continue
		}
		tools, err := c.e.st.ListTools(ctx, row.ID)
		if err != nil {
			return err
		}
		c.e.applySessionRow(row, tools)
	}
	return nil
}

// copySeen reads when the open sessions were last seen, as the nodes
// holding their streams and polls wrote it since the last sweep, into this
// node's copies: a session another node serves stays reachable here.
func (c *cluster) copySeen(ctx context.Context, since time.Time) {
	seen, err := c.e.st.SessionsSeenSince(ctx, since)
	if err != nil {
		c.e.log.Error("read when sessions were seen", "err", err)
		return
	}
	ids := make([]string, len(seen))
	for i := range seen {
		ids[i] = seen[i].ID
	}
	c.e.sessions.withEach(ids, func(i int, s *sessionState) {
		if at := time.UnixMilli(seen[i].LastSeenAt); at.After(s.lastSeen) {
			s.lastSeen, s.lastSave = at, at
		}
	})
}

// seenElsewhere implements nodes: it reports whether a session this node would expire was seen
// by another node within the time-to-live (its stream is there); its
// last sight is then copied here.
func (c *cluster) seenElsewhere(ctx context.Context, sid string, now time.Time) bool {
	row, err := c.e.st.GetSession(ctx, sid)
	if err != nil || row == nil {
		return true // not now: the next sweep looks again
	}
	seen := time.UnixMilli(row.LastSeenAt)
	if now.Sub(seen) >= c.e.cfg.SessionTTL {
		return false
	}
	c.e.sessions.with(sid, func(s *sessionState) {
		if seen.After(s.lastSeen) {
			s.lastSeen, s.lastSave = seen, seen
		}
	})
	return true
}

// sweeper implements nodes: while this node holds the sweeper lease.
func (c *cluster) sweeper(ctx context.Context) bool {
	ok, err := c.e.st.TakeLease(ctx, sweeperLease, 3*c.e.cfg.SweepInterval)
	if err != nil {
		c.e.log.Error("take the sweeper lease", "err", err)
		return false
	}
	return ok
}

// claimOrphans takes over, for this node, the built-in calls and runs of
// nodes whose lease lapsed, and goes on with them.
func (c *cluster) claimOrphans(ctx context.Context) {
	calls, err := c.e.st.OrphanedBuiltinCalls(ctx)
	if err != nil {
		c.e.log.Error("list orphaned built-in calls", "err", err)
	}
	for _, o := range calls {
		claimed, err := store.WriteValue(ctx, c.e.st, func(tx *store.Tx) (bool, error) { return tx.ClaimCall(o) })
		if err != nil || !claimed {
			continue
		}
		row, err := c.e.st.GetCall(ctx, o.ID)
		if err != nil || row == nil {
			continue
		}
		c.e.log.Info("claimed a built-in call of a stopped node", "call", o.ID, "from", o.Node)
		c.e.builtinOps.resumeBuiltinCall(ctx, row)
	}
	if c.e.cfg.OrphanRuns != nil {
		select {
		case c.e.cfg.OrphanRuns <- struct{}{}:
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
func (c *cluster) checkFleetKey(ctx context.Context, atStart bool) {
	mine := hashToken(c.e.agentKey.plain)
	stored, ok, err := c.e.st.Setting(ctx, fleetKeySetting)
	if err != nil {
		c.e.log.Error("read the agent key of the other nodes", "err", err)
		return
	}
	if ok && stored != mine {
		c.e.log.Error("NODES DISAGREE ON THE AGENT KEY: this node's --agent-key is not the one another node sharing the database was started with, so callers are refused by some nodes; give every node the same key")
	}
	if atStart && stored != mine {
		if err := c.e.st.Write(ctx, func(tx *store.Tx) error { return tx.PutSetting(fleetKeySetting, mine) }); err != nil {
			c.e.log.Error("store the agent key's hash for the other nodes", "err", err)
		}
	}
}

// catchUp implements nodes: another node may have changed the session.
func (c *cluster) catchUp(ctx context.Context, sid string) bool {
	c.e.refreshSession(ctx, sid)
	return true
}

// catchUpByToken implements nodes.
func (c *cluster) catchUpByToken(ctx context.Context, hash string) {
	row, err := c.e.st.FindSessionByTokenHash(ctx, hash)
	if err != nil || row == nil || row.Closed() {
		return
	}
	c.e.refreshSession(ctx, row.ID)
}

// admitCall implements nodes: this node's copy of the session may lag a
// close or a tool removal made through another node by a notification,
// and its count of open calls misses the other nodes' calls: the table
// decides, in the transaction that stores the call.
func (c *cluster) admitCall(tx *store.Tx, sid, tool string) error {
	a, err := tx.AdmitCall(sid, tool)
	switch limit := c.e.cfg.MaxOpenCallsPerSession; {
	case err != nil:
		return err
	case !a.Exists || !a.Open:
		return store.Refuse(errSessionNotOpen)
	case !a.Registered:
		return store.Refuse(toolgate.Errorf(toolgate.EToolNotFound, "session %s has no tool %q", sid, tool))
	case limit > 0 && a.OpenCalls >= limit:
		return store.Refuse(tooManyOpenCalls(sid, limit))
	}
	return nil
}

// finishCall implements nodes: unless another node claimed the call
// meanwhile.
func (c *cluster) finishCall(tx *store.Tx, id string, o store.Outcome, now time.Time) (bool, error) {
	return tx.FinishOwnCall(id, o, now)
}

// resumeBuiltins implements nodes: other nodes may be running the open
// built-in calls; only those of stopped nodes are taken over, now and by
// the sweep (claimOrphans).
func (c *cluster) resumeBuiltins(ctx context.Context) bool {
	c.claimOrphans(ctx)
	return true
}

// beforeSweep implements nodes: the agent key is compared with the other
// nodes', and the sessions whose streams other nodes hold, seen by them
// lately (each node writes its sightings at every sweep), are seen here.
func (c *cluster) beforeSweep(ctx context.Context, now time.Time) {
	c.checkFleetKey(ctx, false)
	c.copySeen(ctx, now.Add(-2*c.e.cfg.SweepInterval-resyncMargin))
}

// afterSweep implements nodes: the work of stopped nodes is claimed, and
// the leases of nodes long gone (a missing lease counts as lapsed, so this
// changes nothing but the table's size) are pruned.
func (c *cluster) afterSweep(ctx context.Context, now time.Time) {
	c.claimOrphans(ctx)
	if _, err := c.e.st.PruneLeases(ctx, now.Add(-time.Hour)); err != nil {
		c.e.log.Error("sweep: prune leases", "err", err)
	}
}
