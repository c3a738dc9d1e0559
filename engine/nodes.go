package engine

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/store"
)

// nodes is what the engine does differently when other nodes share its
// database (cluster.go) and when it is alone (alone): New picks one, and
// the engine's code runs the same either way. Alone, memory is the truth
// for sessions, this node sweeps, and no one else runs built-in calls.
type nodes interface {
	// join makes this node known to the others, once, at start.
	join(ctx context.Context) error
	// catchUp reads a session again from the tables when another node may
	// have changed it, and reports whether it did.
	catchUp(ctx context.Context, sid string) bool
	// catchUpByToken is catchUp for the session a token opens.
	catchUpByToken(ctx context.Context, hash string)
	// admitCall checks, in the transaction that stores a call of a
	// session, what this node's copy of the session may not know yet.
	admitCall(tx *store.Tx, sid, tool string) error
	// finishCall ends a built-in call this node ran.
	finishCall(tx *store.Tx, id string, o store.Outcome, now time.Time) (bool, error)
	// resumeBuiltins takes over the resumption of the built-in calls left
	// open, and reports whether it did (else this node runs them all).
	resumeBuiltins(ctx context.Context) bool
	// sweeper reports whether this node does the sweep now.
	sweeper(ctx context.Context) bool
	// seenElsewhere reports whether a session this node would expire was
	// seen by another node within the time-to-live.
	seenElsewhere(ctx context.Context, sid string, now time.Time) bool
	// beforeSweep and afterSweep run around every sweep; afterSweep only
	// on the node that sweeps.
	beforeSweep(ctx context.Context, now time.Time)
	afterSweep(ctx context.Context, now time.Time)
}

// alone is the engine's nodes when no other node shares the database.
type alone struct{}

func (alone) join(context.Context) error                            { return nil }
func (alone) catchUp(context.Context, string) bool                  { return false }
func (alone) catchUpByToken(context.Context, string)                {}
func (alone) admitCall(*store.Tx, string, string) error             { return nil }
func (alone) resumeBuiltins(context.Context) bool                   { return false }
func (alone) sweeper(context.Context) bool                          { return true }
func (alone) seenElsewhere(context.Context, string, time.Time) bool { return false }
func (alone) beforeSweep(context.Context, time.Time)                {}
func (alone) afterSweep(context.Context, time.Time)                 {}

func (alone) finishCall(tx *store.Tx, id string, o store.Outcome, now time.Time) (bool, error) {
	return tx.FinishCall(id, o, now)
}
