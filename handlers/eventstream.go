package handlers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// eventStream is one Server-Sent Events stream of session events — a
// session's own stream, or a multi-session stream — whoever serves it:
// the stream hub (a taken-over HTTP/1.1 connection, no goroutine while
// idle) or a goroutine of its own (HTTP/2). Both call step, the one
// delivery loop: collect what is new from the feed, frame it, record the
// delivery, write it, add a ping when one is due, and say whether the
// stream goes on.
type eventStream struct {
	feed *feed
	// multi frames events with their session ("<sid>:<seq>" ids, the
	// session in the data), announces joins and leaves, and lets the
	// stream outlive its sessions; a session's own stream ends with its
	// session.
	multi bool
	// via is how the stream holds its sessions (a join listens so too).
	via toolgate.Via
	out sseOut
	// head is written before the first events: the retry hint and ready.
	head    []byte
	pingDue atomic.Bool
	// idleEnd ends a multi stream that has carried no session for this
	// long (it is checked at each step, so at the latest at the next ping
	// after it). A tab's quick leave and join again, on a reload, is
	// shorter and keeps it.
	idleEnd time.Duration
	// wake tells whoever serves the stream that something is new (a
	// session's log grew or it ended, a session joined or left). It must
	// not block: it is called under the engine's lock.
	wake func()

	endOnce sync.Once
	onEnd   func() // run once when the stream ends (a multi stream leaves the registry)
}

// stepResult says how a stream goes on after a step.
type stepResult int

const (
	streamGoesOn stepResult = iota
	streamEnds              // ended cleanly: the session closed, or the gateway stops
	streamBroken            // a read or a write failed
)

// notifyFor is the notify of member m's listener: mark m's log grown and
// wake the stream.
func (s *eventStream) notifyFor(m *member) func() { return notifier(m, s.wakeUp) }

// wakeUp calls the stream's wake (set by whoever serves it, possibly after
// its listeners were registered).
func (s *eventStream) wakeUp() { s.wake() }

// notifier is the notify of member m's listener: mark m's log grown and
// call wake (which must not block).
func notifier(m *member, wake func()) func() {
	m.notified = true
	return func() {
		m.dirty.Store(true)
		wake()
	}
}

// step writes what is new on the stream: the head the first time, the
// events collected from the feed (with session_joined and session_left
// on a multi stream), and a ping when one is due. woken says the serving
// goroutine was woken by a listener without notify.
func (s *eventStream) step(ctx context.Context, woken bool) stepResult {
	batches, err := s.feed.collect(ctx, woken, false)
	if err != nil {
		return streamBroken
	}
	body, result := s.head, streamGoesOn
	s.head = nil
	for _, b := range batches {
		if !s.multi {
			for _, ev := range b.events {
				body = appendSSE(body, ev)
			}
			if b.left == toolgate.EndReplaced {
				body = appendReplaced(body, b.sid)
			}
			if b.left != "" {
				result = streamEnds
			}
			continue
		}
		if b.joined {
			body = appendNamed(body, "session_joined", sessionNote{Type: "session_joined", SessionID: b.sid})
		}
		for _, ev := range b.events {
			body = appendSessionSSE(body, b.sid, ev)
		}
		switch b.left {
		case "":
		case endShutdown:
			// The gateway stops: the stream ends without session_left.
			result = streamEnds
		default:
			body = appendNamed(body, "session_left", sessionNote{Type: "session_left", SessionID: b.sid, Reason: b.left})
		}
	}
	if s.pingDue.Swap(false) {
		body = appendPing(body, time.Now())
	}
	if len(body) > 0 {
		s.feed.recordDelivery(batches)
		if err := s.out.write(body); err != nil {
			return streamBroken
		}
	}
	if s.multi && result == streamGoesOn && s.feed.endIfIdle(time.Now(), s.idleEnd) {
		result = streamEnds
	}
	return result
}

// sessionNote is the data of session_joined and session_left.
type sessionNote struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Reason    string `json:"reason,omitempty"`
}

// serve serves the stream from the calling goroutine (where its
// connection is not taken over) until it ends, ctx ends or a write fails:
// a step whenever wake or done fires, and a ping every heartbeat.
func (s *eventStream) serve(ctx context.Context, wake, done <-chan struct{}, heartbeat time.Duration) {
	cut := true // unless the gateway ends the stream
	defer func() { s.end(cut) }()
	if r := s.step(ctx, true); r != streamGoesOn {
		cut = r == streamBroken
		return
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		woken := false
		select {
		case <-ctx.Done():
			return
		case <-wake:
			woken = true
		case <-done:
			woken = true
		case <-ping.C:
			s.pingDue.Store(true)
		}
		if r := s.step(ctx, woken); r != streamGoesOn {
			cut = r == streamBroken
			return
		}
	}
}

// end closes the stream's listeners (the sessions' presence drops; cut
// says the connection broke rather than the gateway ending it) and runs
// onEnd, once.
func (s *eventStream) end(cut bool) {
	s.endOnce.Do(func() {
		s.feed.close(cut)
		if s.onEnd != nil {
			s.onEnd()
		}
	})
}

// signal returns a one-slot channel and a wake that sends on it without
// blocking, for a stream served by its own goroutine.
func signal() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
