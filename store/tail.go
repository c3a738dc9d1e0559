package store

import (
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// tailSize is how many recent events of a session the tail keeps.
const tailSize = 16

// eventTail keeps each session's most recent events in memory, as they
// were committed, so that a stream or poll that keeps up reads new events
// without a query. It is a cache of the events table: every event is
// appended by this process's single writer, and goes into the tail only
// after its transaction committed, in commit order. A reader whose cursor
// lies before what the tail holds reads the table instead.
type eventTail struct {
	mu       sync.Mutex
	sessions map[string]*sessionTail
	requests map[string]*tailEvent // call id → its request event in a tail
}

// sessionTail is one session's recent events. Every event of the session
// with seq >= from that has not been trimmed is in events; from is 0 for a
// session created by this process (it had no events before).
type sessionTail struct {
	from   int64
	events []*tailEvent
	added  time.Time // when the newest event was added
}

type tailEvent struct {
	toolgate.Event
	session string
	ended   bool // for a request: its call has ended, so it is not resent
}

func newEventTail() *eventTail {
	return &eventTail{sessions: map[string]*sessionTail{}, requests: map[string]*tailEvent{}}
}

// tailChanges are what one operation changed that the tail must learn once
// its transaction commits.
type tailChanges struct {
	sessions []string    // sessions created
	closed   []string    // sessions closed
	events   []tailEvent // events appended
	ended    []string    // calls that reached a final status
	finals   []CallRow   // their records, when the operation gave them
	rows     rowChanges  // open calls' rows changed (for openRows)
	notes    []Change    // what other nodes are told (PostgreSQL only)
}

func (c *tailChanges) len() [7]int {
	return [7]int{len(c.sessions), len(c.closed), len(c.events), len(c.ended), len(c.finals), len(c.rows.list), len(c.notes)}
}

// truncate forgets what an operation rolled back to its savepoint added.
func (c *tailChanges) truncate(n [7]int) {
	c.sessions, c.closed, c.events, c.ended, c.finals = c.sessions[:n[0]], c.closed[:n[1]], c.events[:n[2]], c.ended[:n[3]], c.finals[:n[4]]
	c.rows.truncate(n[5])
	c.notes = c.notes[:n[6]]
}

// apply records committed changes.
func (t *eventTail) apply(c *tailChanges, now time.Time) {
	if len(c.sessions)+len(c.closed)+len(c.events)+len(c.ended) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range c.sessions {
		t.sessions[id] = &sessionTail{from: 0, added: now}
	}
	for i := range c.events {
		ev := c.events[i]
		st := t.sessions[ev.session]
		if st == nil {
			st = &sessionTail{from: ev.Seq}
			t.sessions[ev.session] = st
		}
		e := &ev
		st.events = append(st.events, e)
		st.added = now
		if ev.Type == toolgate.EventToolCallRequest && ev.CallID != "" {
			t.requests[ev.CallID] = e
		}
		if len(st.events) > tailSize {
			t.dropOldestLocked(st)
		}
	}
	for _, id := range c.ended {
		if e := t.requests[id]; e != nil {
			e.ended = true
			delete(t.requests, id)
		}
	}
	for _, id := range c.closed {
		t.dropSessionLocked(id)
	}
}

func (t *eventTail) dropOldestLocked(st *sessionTail) {
	old := st.events[0]
	if old.Type == toolgate.EventToolCallRequest && t.requests[old.CallID] == old {
		delete(t.requests, old.CallID)
	}
	st.events[0] = nil
	st.events = st.events[1:]
	st.from = st.events[0].Seq
}

func (t *eventTail) dropSessionLocked(id string) {
	st := t.sessions[id]
	if st == nil {
		return
	}
	for _, e := range st.events {
		if e.Type == toolgate.EventToolCallRequest && t.requests[e.CallID] == e {
			delete(t.requests, e.CallID)
		}
	}
	delete(t.sessions, id)
}

// after returns the session's events after cursor when the tail holds all
// of them (ok), leaving out requests for calls that have ended, with the
// cursor of the last event looked at.
func (t *eventTail) after(session string, cursor int64) (events []toolgate.Event, last int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.sessions[session]
	if st == nil || cursor < st.from-1 {
		return nil, cursor, false
	}
	last = cursor
	for _, e := range st.events {
		if e.Seq <= cursor {
			continue
		}
		last = e.Seq
		if e.ended {
			continue
		}
		events = append(events, e.Event)
	}
	return events, last, true
}

// lastSeq returns the session's newest event cursor when the tail knows it.
func (t *eventTail) lastSeq(session string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.sessions[session]
	if st == nil {
		return 0, false
	}
	if n := len(st.events); n > 0 {
		return st.events[n-1].Seq, true
	}
	return 0, st.from == 0
}

// trim forgets the tails of sessions with no event since before; their
// readers go back to the table.
func (t *eventTail) trim(before time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, st := range t.sessions {
		if st.added.Before(before) && len(st.events) > 0 {
			t.dropSessionLocked(id)
		}
	}
}

// TrimEventTail forgets the in-memory events of sessions quiet since before.
func (s *Store) TrimEventTail(before time.Time) { s.tail.trim(before) }
