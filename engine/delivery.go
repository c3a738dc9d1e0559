package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// eventBatch bounds how many events one read of the log returns.
const eventBatch = 256

// listener is one open stream or held poll of a session. The engine sends
// on wake (without blocking; one pending signal is enough) whenever the
// session's event log grows, and closes the session's done channel when it
// ends. A session holds at most Options.MaxStreamsPerSession listeners: a
// newer one replaces the oldest (see listen).
type listener struct {
	e         *Delivery
	s         *sessionState
	wake      chan struct{}
	notify    func() // instead of wake, when set: called (under the session table's lock) on growth and on close
	streaming bool
	via       toolgate.Via // how the client holds the session by it
	openedAt  time.Time
	// opened orders the listeners of a session: the oldest has the
	// smallest (sessionTable.opened when it was registered).
	opened uint64
	closed bool // guarded by the session table's lock
	// replaced is set (under the lock, before the listener is woken a
	// last time) when a newer stream or poll of the session took its
	// place; it is read without the lock by EndReason.
	replaced atomic.Bool
}

// Wake implements toolgate.Listener.
func (l *listener) Wake() <-chan struct{} { return l.wake }

// Done implements toolgate.Listener.
func (l *listener) Done() <-chan struct{} { return l.s.done }

// EndReason implements toolgate.Listener: toolgate.EndReplaced once a
// newer stream or poll of the session replaced this one; else why the
// session ended, once Done is closed ("" before, and when it closed at
// shutdown).
func (l *listener) EndReason() string {
	if l.replaced.Load() {
		return toolgate.EndReplaced
	}
	select {
	case <-l.s.done:
		return l.s.endReason // written before done was closed
	default:
		return ""
	}
}

// Close implements toolgate.Listener: the stream or poll has ended. When
// it was the session's last, the session's reachability is looked at
// again once its grace has run out (reachLater), so that its tools leave
// the MCP listings then rather than at the next sweep.
func (l *listener) Close() { l.end(false) }

// Cut implements toolgate.Listener: Close for a connection that broke,
// which the session's connection record counts.
func (l *listener) Cut() { l.end(true) }

func (l *listener) end(cut bool) {
	e := l.e
	e.sessions.locked(func() {
		l.closeLocked(e.now(), cut)
		if len(l.s.listeners) == 0 {
			l.s.reachLater(e.cfg.SessionGrace+2*e.cfg.PollWait, func() { e.lookAtReachability(l.s.row.ID) })
		}
	})
}

// reachLater arms the session's one reachability timer to run check after
// d (again, if armed already); the session table's lock is held.
func (s *sessionState) reachLater(d time.Duration, check func()) {
	if s.reachTimer == nil {
		s.reachTimer = time.AfterFunc(d, check)
		return
	}
	s.reachTimer.Reset(d)
}

// lookAtReachability tells the tool watchers when session sid became
// reachable or unreachable since it was last looked at.
func (e *Delivery) lookAtReachability(sid string) {
	flipped := false
	e.sessions.with(sid, func(s *sessionState) { flipped = s.reachabilityChangedLocked(e.now(), e.cfg) })
	if flipped {
		e.toolWatch.changed(sid)
	}
}

// closeLocked takes the listener off its session and updates the
// session's presence and connection record (cut: its connection broke),
// once; the session table's lock is held.
func (l *listener) closeLocked(now time.Time, cut bool) {
	if l.closed {
		return
	}
	l.closed = true
	s := l.s
	delete(s.listeners, l)
	if l.streaming {
		s.streams--
	} else {
		s.polls--
		s.lastPoll = now
	}
	s.lastSeen = now
	s.conn.closed(l, cut, s.newestListenerLocked(), now)
}

// replaceLocked ends the listener because a newer stream or poll of its
// session takes its place: it is taken off the session (it no longer
// counts, and is woken no more) and woken a last time, so that whoever
// serves it sends the reason and ends it. The session table's lock is
// held.
func (l *listener) replaceLocked(now time.Time) {
	l.replaced.Store(true)
	l.closeLocked(now, false)
	if l.notify != nil {
		l.notify()
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// oldestListenerLocked returns the session's listener registered first;
// the session table's lock is held.
func (s *sessionState) oldestListenerLocked() *listener {
	var oldest *listener
	for l := range s.listeners {
		if oldest == nil || l.opened < oldest.opened {
			oldest = l
		}
	}
	return oldest
}

// Listen registers a stream or a held poll (via) of session sid. It must
// be called before the first read of the log, so that no event appended
// in between is missed.
func (e *Delivery) Listen(sid string, via toolgate.Via) (toolgate.Listener, error) {
	return e.listen(sid, via, nil)
}

// ListenFunc registers a stream or a held poll (via) of session sid that
// is told of new events, and of the session's end, by a call of notify
// instead of a channel, so that an idle stream needs no goroutine waiting
// on it, and one goroutine can serve many sessions. notify is called with
// the session table's lock held: it must only schedule work, never block
// or call back into the engine.
func (e *Delivery) ListenFunc(sid string, via toolgate.Via, notify func()) (toolgate.Listener, error) {
	return e.listen(sid, via, notify)
}

// listen registers a listener on session sid. When the session already
// holds Options.MaxStreamsPerSession streams and polls (its own streams,
// its held polls, and its places on multi-session streams and polls), the
// oldest is replaced: the usual cause of one too many is a phone or a page
// whose earlier connection is half-dead, and its client has reconnected.
// So one session cannot hold more than a few of the gateway's file
// descriptors, however often it connects.
func (e *Delivery) listen(sid string, via toolgate.Via, notify func()) (toolgate.Listener, error) {
	streaming := via.Streaming()
	l := &listener{e: e, notify: notify, streaming: streaming, via: via}
	if notify == nil {
		l.wake = make(chan struct{}, 1)
	}
	flipped := false
	open := e.sessions.with(sid, func(s *sessionState) {
		now := e.now()
		for len(s.listeners) >= e.cfg.MaxStreamsPerSession {
			s.oldestListenerLocked().replaceLocked(now)
		}
		online := s.online(now, e.cfg.PollWait)
		l.s = s
		l.opened = e.sessions.nextListener()
		l.openedAt = now
		s.conn.opened(l, online, now)
		s.listeners[l] = struct{}{}
		if streaming {
			s.streams++
		} else {
			s.polls++
			s.lastPoll = now
		}
		s.lastSeen = now
		flipped = s.reachabilityChangedLocked(now, e.cfg)
	})
	if !open {
		return nil, toolgate.Errorf(toolgate.EUnauthenticated, "session %s is not open", sid)
	}
	if flipped {
		e.toolWatch.changed(sid)
	}
	return l, nil
}

func (s *sessionState) wakeLocked() {
	for l := range s.listeners {
		if l.notify != nil {
			l.notify()
			continue
		}
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// OpenEvents returns a tool_call_request for every call of the session
// that is still open, oldest first, with the cursor to continue from: what
// a client that connects without a cursor receives first.
func (e *Delivery) OpenEvents(ctx context.Context, sid string) ([]toolgate.Event, int64, error) {
	reqs, last, err := e.st.OpenRequests(ctx, sid, e.now())
	if err != nil {
		return nil, 0, err
	}
	events := make([]toolgate.Event, 0, len(reqs))
	for _, r := range reqs {
		events = append(events, toolgate.Event{
			Seq:    r.Seq,
			Type:   toolgate.EventToolCallRequest,
			CallID: r.ID,
			Data:   requestEvent(r.ID, r.Tool, json.RawMessage(r.Args), r.DeadlineTime(), r.Attempts+1),
		})
	}
	return events, last, nil
}

// EventsAfter returns all the session's events after cursor (reading the
// log in batches until it is drained) and the new cursor.
func (e *Delivery) EventsAfter(ctx context.Context, sid string, cursor int64) ([]toolgate.Event, int64, error) {
	var all []toolgate.Event
	for {
		events, last, full, err := e.st.EventsAfter(ctx, sid, cursor, eventBatch)
		if err != nil {
			return nil, cursor, err
		}
		all = append(all, events...)
		cursor = last
		if !full {
			return all, cursor, nil
		}
	}
}

// CheckCursor refuses a cursor that is negative or beyond the session's
// newest event (it cannot have come from this gateway's log).
func (e *Delivery) CheckCursor(ctx context.Context, sid string, cursor int64) error {
	if cursor < 0 {
		return toolgate.Errorf(toolgate.EBadRequest, "cursor must not be negative")
	}
	last, err := e.st.LastEventSeq(ctx, sid)
	if err != nil {
		return err
	}
	if cursor > last {
		return toolgate.Errorf(toolgate.EBadRequest, "cursor %d is beyond this session's newest event %d", cursor, last)
	}
	return nil
}

// Delivered records that the events were written to the session's client:
// each requested call moves from pending to delivered and counts an
// attempt — within 100 ms (markDelay), or with the client's answer when
// that comes first (see marks.go).
func (e *Delivery) Delivered(sid string, events []toolgate.Event) {
	var ids []string
	for _, ev := range events {
		if ev.Type == toolgate.EventToolCallRequest && ev.CallID != "" {
			ids = append(ids, ev.CallID)
		}
	}
	if len(ids) == 0 {
		return
	}
	e.marks.note(ids, e.now())
	if e.log.Enabled(context.Background(), -4) {
		for _, id := range ids {
			e.log.Debug("call delivered", "call", id, "session", sid)
		}
	}
}

// Listeners counts the streams and held polls the engine holds for
// session sid (its own streams and polls and its places on multi-session
// ones): -1 for a session not in the table, and an error when the
// session's counts disagree with its set of listeners.
func (e *Delivery) Listeners(sid string) (int, error) {
	n := -1
	var err error
	e.sessions.with(sid, func(s *sessionState) {
		n = len(s.listeners)
		if s.streams+s.polls != n {
			err = fmt.Errorf("session %s counts %d streams and %d polls but holds %d listeners", sid, s.streams, s.polls, n)
		}
	})
	return n, err
}
