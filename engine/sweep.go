package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/store"
)

// sweepLoop expires sessions unseen for their time-to-live, persists
// last-seen times and prunes old events, every SweepInterval.
func (e *Sessions) sweepLoop() {
	t := time.NewTicker(e.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.Sweep(context.Background())
		}
	}
}

// Sweep runs one round of session expiry, last-seen persistence and event
// pruning. The sweep loop calls it; tests may call it directly.
func (e *Sessions) Sweep(ctx context.Context) {
	now := e.now()
	// With other nodes, one at a time ends overdue calls, expires sessions
	// and prunes events (the sweeper lease); every node writes when its
	// own sessions were seen and tells its watchers of reachability.
	sweeps := e.nodes.sweeper(ctx)
	e.sessions.forgetClosed(time.Now().Add(-time.Minute))
	e.nodes.beforeSweep(ctx, now)
	var expired []string
	var touched []sessionSeen
	var flipped []string // sessions that became reachable or unreachable
	e.sessions.each(func(s *sessionState) {
		if s.streams > 0 || s.polls > 0 {
			s.lastSeen = now
		}
		if s.reachabilityChangedLocked(now, e.cfg) {
			flipped = append(flipped, s.row.ID)
		}
		if now.Sub(s.lastSeen) >= e.cfg.SessionTTL {
			if sweeps {
				expired = append(expired, s.row.ID)
			}
			return
		}
		if s.lastSeen.After(s.lastSave) {
			touched = append(touched, sessionSeen{s.row.ID, s.lastSeen})
			s.lastSave = s.lastSeen
		}
	})
	for _, id := range flipped {
		e.toolWatch.changed(id)
	}
	// Quiet sessions' recent events leave memory; their readers use the table.
	e.st.TrimEventTail(now.Add(-e.cfg.SweepInterval))
	for _, id := range expired {
		if e.nodes.seenElsewhere(ctx, id, now) {
			continue
		}
		if err := e.closeSession(ctx, id, "expired"); err != nil {
			e.log.Error("expire session", "session", id, "err", err)
		}
	}
	// Open calls past their deadline that the deadline queue did not end
	// (it should have; this makes a missed one cost a sweep, not forever).
	if !sweeps {
		e.writeTouches(ctx, touched)
		return
	}
	e.nodes.afterSweep(ctx, now)
	if overdue, err := e.st.OverdueCalls(ctx, now.Add(-time.Second), 1000); err != nil {
		e.log.Error("sweep: overdue calls", "err", err)
	} else if len(overdue) > 0 {
		e.log.Warn("sweep: ending overdue calls", "count", len(overdue))
		e.callOps.expireCalls(overdue)
	}
	pruned, err := store.WriteValue(ctx, e.st, func(tx *store.Tx) (int64, error) {
		for _, t := range touched {
			if err := tx.TouchSession(t.id, t.at); err != nil {
				return 0, err
			}
		}
		return tx.PruneEvents(now.Add(-e.cfg.EventRetention))
	})
	if err != nil {
		e.log.Error("sweep", "err", err)
	} else if pruned > 0 {
		e.log.Debug("pruned events", "count", pruned)
	}
}
