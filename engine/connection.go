package engine

import (
	"time"

	"github.com/toolgate/toolgate"
)

// connRecord is what the engine knows of how a session's client holds
// it, for GET /v1/sessions/{sid} ("connection"): the transport, the
// heartbeat and the start of the current connection, and the connections
// that were cut. It lives in memory only (per node, since its start) and
// changes only when a stream or poll of the session opens or ends, never
// on a ping or a sweep: nothing proportional to the sessions is added to
// the path of a call. Its fields are guarded by the session table's lock,
// like the rest of sessionState.
type connRecord struct {
	// via is the transport of the newest stream or poll ("" before any).
	via toolgate.Via
	// since is when the current connection began: a stream's opening,
	// or the first of a run of polls.
	since time.Time
	cuts  int64
	// lastCut is when the last cut happened and how long the connection
	// cut had lasted (zero before any).
	lastCut      time.Time
	lastCutAfter time.Duration
}

// opened notes a stream or poll l of the session opening at now; online
// is whether the session was connected just before.
func (c *connRecord) opened(l *listener, online bool, now time.Time) {
	if l.via.Streaming() || !online || c.via.Transport != l.via.Transport {
		c.since = now
	}
	c.via = l.via
}

// closed notes stream or poll l ending at now, cut or not; newest is the
// session's newest listener still open (nil for none), whose transport is
// the current one then.
func (c *connRecord) closed(l *listener, cut bool, newest *listener, now time.Time) {
	if cut {
		c.cuts++
		c.lastCut = now
		c.lastCutAfter = now.Sub(l.openedAt)
	}
	if newest == nil {
		return
	}
	if newest.via.Streaming() || newest.via.Transport != c.via.Transport {
		c.since = newest.openedAt
	}
	c.via = newest.via
}

// view is the record as GET /v1/sessions/{sid} shows it, with the
// session's presence (state).
func (c *connRecord) view(state string) toolgate.Connection {
	v := toolgate.Connection{State: state, Cuts: c.cuts}
	if !c.lastCut.IsZero() {
		v.LastCut = &toolgate.LastCut{At: toolgate.NewTime(c.lastCut), AfterMS: c.lastCutAfter.Milliseconds()}
	}
	if state != toolgate.PresenceConnected || c.via.Transport == "" {
		return v
	}
	transport := c.via.Transport
	v.Transport = &transport
	if c.via.Streaming() {
		ms := c.via.Heartbeat.Milliseconds()
		v.HeartbeatMS = &ms
	}
	v.ConnectedAt = toolgate.TimePtr(c.since)
	return v
}

// presence is the session's presence at now: connected, away (within its
// grace) or offline.
func (s *sessionState) presence(now time.Time, cfg Options) string {
	switch {
	case s.online(now, cfg.PollWait):
		return toolgate.PresenceConnected
	case s.reachable(now, cfg):
		return toolgate.PresenceAway
	}
	return toolgate.PresenceOffline
}

// newestListenerLocked returns the session's listener registered last
// (nil for none); the session table's lock is held.
func (s *sessionState) newestListenerLocked() *listener {
	var newest *listener
	for l := range s.listeners {
		if newest == nil || l.opened > newest.opened {
			newest = l
		}
	}
	return newest
}
