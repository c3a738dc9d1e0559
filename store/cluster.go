package store

import (
	"context"
	"time"
)

// Several gateway nodes may share one database (PostgreSQL). The tables
// are the truth; what one node changes reaches the others as Changes that
// carry ids only, after which they read the tables again. A node holds
// leases, rows of the leases table, for the work one node at a time must
// do (the sweep) and to show that it is alive ("node:<id>"); runs and
// calls of tools inside the gateway name the node working on them, so
// another node can claim them once that node's lease lapses.

// ChangeKind says what a Change is about.
type ChangeKind byte

// The kinds of change a node tells the others of.
const (
	// ChangeSession: a session was created or closed, or its tools or its
	// auto-approval changed. ID is the session.
	ChangeSession ChangeKind = 's'
	// ChangeEvents: events were appended to a session's log. ID is the
	// session.
	ChangeEvents ChangeKind = 'e'
	// ChangeCall: a call ended, changed status or reported progress. ID
	// is the call.
	ChangeCall ChangeKind = 'c'
	// ChangeResync: changes may have been missed (the listening
	// connection came back, or the safety timer fired): read everything
	// that matters again. ID is empty.
	ChangeResync ChangeKind = '*'
)

// Change is one committed change told to the other nodes.
type Change struct {
	Kind ChangeKind
	ID   string
}

// Node returns this store's node id, unique to the process.
func (s *Store) Node() string { return s.node }

// Shared reports whether other nodes may share the database: true on
// PostgreSQL. A SQLite file is served by one process.
func (s *Store) Shared() bool { return s.shared }

// OnChanges sets the function told of the changes other nodes commit,
// from one goroutine, in the order they arrive. Set it before serving. On
// a store that is not Shared it is never called. On PostgreSQL the first
// call starts listening (notify.go): fn is told ChangeResync once the
// listening connection is up, again after every reconnect, and every
// ResyncEvery.
func (s *Store) OnChanges(fn func([]Change)) {
	if s.pg != nil {
		s.pg.setOnChanges(fn, s.ResyncEvery)
	}
}

// note records a change to tell the other nodes once the transaction
// commits (dropped with an operation rolled back). Only where other nodes
// share the database: on SQLite nobody is told.
func (tx *Tx) note(kind ChangeKind, id string) {
	if tx.pg != nil {
		tx.changes.notes = append(tx.changes.notes, Change{Kind: kind, ID: id})
	}
}

var (
	qTakeLease = query(`INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`)
	qReleaseLease = query(`DELETE FROM leases WHERE name = ? AND holder = ?`)
	qPruneLeases  = query(`DELETE FROM leases WHERE expires_at < ?`)
	qOrphanRuns   = query(`SELECT id, COALESCE(node, '') AS node FROM runs WHERE status = 'running' AND (node IS NULL OR NOT EXISTS
		(SELECT 1 FROM leases l WHERE l.name = 'node:' || runs.node AND l.expires_at > ?)) ORDER BY id`)
	qClaimRun       = query(`UPDATE runs SET node = ? WHERE id = ? AND status = 'running' AND COALESCE(node, '') = ?`)
	qOrphanBuiltins = query(`SELECT id, COALESCE(node, '') AS node FROM calls WHERE session_id IS NULL AND status IN ('pending', 'delivered') AND (node IS NULL OR NOT EXISTS
		(SELECT 1 FROM leases l WHERE l.name = 'node:' || calls.node AND l.expires_at > ?)) ORDER BY id`)
	qClaimCall = query(`UPDATE calls SET node = ? WHERE id = ? AND session_id IS NULL AND status IN ('pending', 'delivered') AND COALESCE(node, '') = ?`)
)

// TakeLease takes or renews the named lease for this node until now+ttl.
// It reports false when another node holds it and it has not expired.
func (s *Store) TakeLease(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	now := s.Now()
	return WriteValue(ctx, s, func(tx *Tx) (bool, error) {
		res, err := tx.exec(qTakeLease, name, s.node, ms(now.Add(ttl)), ms(now))
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	})
}

// ReleaseLease gives up the named lease if this node holds it.
func (s *Store) ReleaseLease(ctx context.Context, name string) error {
	return s.Write(ctx, func(tx *Tx) error {
		_, err := tx.exec(qReleaseLease, name, s.node)
		return err
	})
}

// PruneLeases deletes the leases that expired before expiredBefore (or
// before now, whichever is earlier: a lease still held is never deleted),
// so that the node leases of nodes long gone do not pile up; it returns
// how many it deleted. Deleting a lapsed lease changes nothing else: a
// missing lease is free to take (TakeLease) and a node without one is not
// live (OrphanedRuns, OrphanedBuiltinCalls), exactly as with a lapsed one.
func (s *Store) PruneLeases(ctx context.Context, expiredBefore time.Time) (int64, error) {
	cutoff := expiredBefore
	if now := s.Now(); now.Before(cutoff) {
		cutoff = now
	}
	return WriteValue(ctx, s, func(tx *Tx) (int64, error) {
		res, err := tx.exec(qPruneLeases, ms(cutoff))
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
}

// NodeLease is the name of the lease a live node renews.
func NodeLease(node string) string { return "node:" + node }

// Orphan is work (a run, or a call of a tool inside the gateway) whose
// node's lease has lapsed, with that node ("" for none), for Claim.
type Orphan struct {
	ID   string `db:"id"`
	Node string `db:"node"`
}

// OrphanedRuns lists the running runs no live node drives, oldest first.
func (s *Store) OrphanedRuns(ctx context.Context) ([]Orphan, error) {
	var out []Orphan
	err := s.read.sel(ctx, &out, qOrphanRuns, ms(s.Now()))
	return out, err
}

// OrphanedBuiltinCalls lists the open calls of tools inside the gateway
// that no live node runs, oldest first.
func (s *Store) OrphanedBuiltinCalls(ctx context.Context) ([]Orphan, error) {
	var out []Orphan
	err := s.read.sel(ctx, &out, qOrphanBuiltins, ms(s.Now()))
	return out, err
}

// ClaimRun makes this node the driver of a running run that o.Node drove;
// false when another node claimed it first or the run ended.
func (tx *Tx) ClaimRun(o Orphan) (bool, error) {
	res, err := tx.exec(qClaimRun, tx.node, o.ID, o.Node)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ClaimCall makes this node the runner of an open call of a tool inside
// the gateway that o.Node ran; false when another node claimed it first
// or the call ended.
func (tx *Tx) ClaimCall(o Orphan) (bool, error) {
	res, err := tx.exec(qClaimCall, tx.node, o.ID, o.Node)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if n > 0 {
		tx.note(ChangeCall, o.ID) // the node it was taken from, if alive, stops its run
	}
	return n > 0, err
}
