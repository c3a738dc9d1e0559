package handlers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// endShutdown is the leave reason of a session whose listener ended
// without the session closing: the gateway is shutting down.
const endShutdown = "shutdown"

// feed is the delivery loop's state, shared by every way events reach a
// client (a session's stream, a multi-session stream, the polls): a set
// of sessions, each with its listener and cursor. Whoever drives the feed
// (a hub worker, a stream's goroutine, a poll) calls collect when woken;
// collect reads each session's events after its cursor, moves the
// cursor, and notices the sessions that ended or left. The driver frames
// what collect returns, records the delivery and writes it.
//
// mu guards the members and each member's fields but dirty; collect runs
// with it held, so it runs for one driver at a time, and a join or a
// leave waits for it. A listener's notify never takes mu.
type feed struct {
	delivery Delivery
	// limit bounds the members (0: no bound).
	limit int

	mu      sync.Mutex
	members []*member // in the order they were added
	closed  bool      // the feed is over: its listeners are closed, nothing joins
	// emptySince is when endIfIdle first found the feed without members
	// (zero while it has some).
	emptySince time.Time
}

// member is one session of a feed.
type member struct {
	sid    string
	l      toolgate.Listener
	cursor int64
	// notified is set when the listener reports growth through notify
	// (dirty); without it, the member is read whenever the driver was
	// woken.
	notified bool
	dirty    atomic.Bool
	// first holds the events read when the session was added, not yet
	// returned by collect.
	first []toolgate.Event
	// announce asks collect to report the member as joined once.
	announce bool
	// leaving is the reason the member leaves ("left", "closed",
	// "expired", EndReplaced, endShutdown); collect then returns its last
	// batch and drops it.
	leaving string
}

// batch is what collect found for one session.
type batch struct {
	sid    string
	events []toolgate.Event
	cursor int64  // the session's cursor after these events
	joined bool   // the session joined since the last collect
	left   string // why the session left, when it did ("" while it stays)
}

// newFeed returns an empty feed over delivery with at most limit members.
func newFeed(delivery Delivery, limit int) *feed {
	return &feed{delivery: delivery, limit: limit}
}

// add puts a session on the feed. It reports false, and adds nothing,
// when the feed is over or full, or holds the session already (the
// caller then closes the member's listener).
func (f *feed) add(m *member) (added bool, reason addRefusal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return false, feedOver
	case f.holdsLocked(m.sid):
		return false, feedHolds
	case f.fullLocked():
		return false, feedFull
	}
	f.members = append(f.members, m)
	f.emptySince = time.Time{}
	return true, 0
}

// addRefusal says why add refused a member.
type addRefusal int

const (
	feedOver  addRefusal = iota + 1 // the feed has ended
	feedHolds                       // the session is on it already
	feedFull                        // it holds limit members
)

// holds reports whether session sid is on the feed (and not leaving).
func (f *feed) holds(sid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holdsLocked(sid)
}

func (f *feed) holdsLocked(sid string) bool {
	for _, m := range f.members {
		if m.sid == sid && m.leaving == "" {
			return true
		}
	}
	return false
}

// full reports whether the feed carries its limit of sessions. Members
// leaving do not count: they are gone at the next collect, and a join
// meanwhile (a tab's reload: leave, then join again) must not be refused.
func (f *feed) full() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fullLocked()
}

func (f *feed) fullLocked() bool {
	if f.limit <= 0 {
		return false
	}
	staying := 0
	for _, m := range f.members {
		if m.leaving == "" {
			staying++
		}
	}
	return staying >= f.limit
}

// leave marks session sid as leaving for reason; its last batch (no more
// events, only the leave) comes with the next collect. It reports false
// when the session is not on the feed.
func (f *feed) leave(sid, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.sid == sid && m.leaving == "" {
			m.leaving = reason
			return true
		}
	}
	return false
}

// collect reads what is new for every member: its first events, then —
// when its log grew (or, for a member without notify, when woken) — the
// events after its cursor. A member whose session ended gets its last
// events and leaves with the session's end reason; a member that left,
// or whose listener a newer one replaced (EndReplaced), gets no more
// events. Members that left are dropped and their listeners
// closed. Only members with something to report are returned (all of
// them with every, for a poll's reply). An error reading a log ends the
// whole feed's read: the caller ends its stream.
func (f *feed) collect(ctx context.Context, woken, every bool) ([]batch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []batch
	kept := f.members[:0]
	for i, m := range f.members {
		b := batch{sid: m.sid, joined: m.announce, events: m.first}
		m.announce, m.first = false, nil
		reason := m.l.EndReason()
		switch {
		case m.leaving != "":
			b.events = nil // a session that left is sent nothing more
		case reason == toolgate.EndReplaced:
			// A newer stream or poll of the session carries its events
			// now: this one reads no more of them.
			b.events = nil
			m.leaving = reason
		default:
			ended := reason != "" || isClosed(m.l.Done())
			if ended || m.dirty.Swap(false) || (woken && !m.notified) {
				events, cursor, err := f.delivery.EventsAfter(ctx, m.sid, m.cursor)
				if err != nil {
					f.members = append(kept, f.members[i:]...)
					return nil, err
				}
				b.events = append(b.events, events...)
				m.cursor = cursor
			}
			if ended {
				m.leaving = endReason(m.l)
			}
		}
		b.cursor = m.cursor
		if m.leaving != "" {
			b.left = m.leaving
			m.l.Close()
		} else {
			kept = append(kept, m)
		}
		if every || b.joined || b.left != "" || len(b.events) > 0 {
			out = append(out, b)
		}
	}
	clear(f.members[len(kept):])
	f.members = kept
	return out, nil
}

// endIfIdle reports whether the feed is over, closing it when it has had
// no member for idle (since a call that found it empty; add restarts the
// count). A feed once over stays over: nothing joins it.
func (f *feed) endIfIdle(now time.Time, idle time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return true
	case len(f.members) > 0:
		f.emptySince = time.Time{}
		return false
	case f.emptySince.IsZero():
		f.emptySince = now
		return false
	case now.Sub(f.emptySince) < idle:
		return false
	}
	f.closed = true
	return true
}

// close ends the feed: every listener still open is closed (cut, when
// the connection broke: see Listener.Cut) and nothing joins any more. It
// may be called more than once.
func (f *feed) close(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, m := range f.members {
		if cut {
			m.l.Cut()
		} else {
			m.l.Close()
		}
	}
	f.members = nil
}

// recordDelivery tells the engine what the batches carry, before the
// bytes leave, so that an answer finds its call delivered.
func (f *feed) recordDelivery(batches []batch) {
	for _, b := range batches {
		if len(b.events) > 0 {
			f.delivery.Delivered(b.sid, b.events)
		}
	}
}

// endReason is why a listener's session ended: "closed" or "expired", or
// endShutdown when it ended without closing (the gateway is stopping).
func endReason(l toolgate.Listener) string {
	if r := l.EndReason(); r != "" {
		return r
	}
	return endShutdown
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// firstEvents reads what a stream sends a session first. Without a cursor
// the client gets every open call. With one (resume) it gets the events
// after it, and before them again the open calls it was sent earlier: a
// client that restarted with its stored cursor has lost the handlers it
// was running, and a live one de-duplicates by call id.
func firstEvents(ctx context.Context, d Delivery, sid string, resume bool, cursor int64) ([]toolgate.Event, int64, error) {
	if resume {
		if err := d.CheckCursor(ctx, sid, cursor); err != nil {
			return nil, 0, err
		}
	}
	events, last, err := d.OpenEvents(ctx, sid)
	if err != nil || !resume {
		return events, last, err
	}
	var earlier []toolgate.Event
	for _, ev := range events {
		if ev.Seq <= cursor {
			earlier = append(earlier, ev)
		}
	}
	after, last, err := d.EventsAfter(ctx, sid, cursor)
	return append(earlier, after...), last, err
}

// firstPolled reads what a poll returns a session first: the events after
// its cursor, or without one its open calls (a poll does not resend the
// calls before a cursor: its client keeps its state between polls).
func firstPolled(ctx context.Context, d Delivery, sid string, hasCursor bool, cursor int64) ([]toolgate.Event, int64, error) {
	if hasCursor {
		return d.EventsAfter(ctx, sid, cursor)
	}
	return d.OpenEvents(ctx, sid)
}
