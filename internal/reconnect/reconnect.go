// Package reconnect is the reconnect policy of toolgate's Go clients (the
// mobile SDK and toolgate connect), written once: docs/PROTOCOL.md,
// "Keep-alive and reconnection", says it for every SDK.
package reconnect

import (
	"math/rand/v2"
	"sync"
	"time"
)

// The reconnect policy's steps (docs/PROTOCOL.md, "Keep-alive and
// reconnection"), the same in every SDK of toolgate.
const (
	// LiveJitter bounds the wait before reopening a connection that went
	// live and then broke: at once, spread a little so that clients cut
	// together do not all come back in the same millisecond.
	LiveJitter = 250 * time.Millisecond
	// FailureBase and FailureCap bound the backoff over attempts that
	// never went live: failureBase × 2^(n−1), capped, with full jitter.
	FailureBase = 250 * time.Millisecond
	FailureCap  = 10 * time.Second
)

// Policy decides how long a client waits before it opens its stream or
// its next poll (or its session) again. A client has one, used by every
// transport, so that they cannot learn different lessons:
//
//   - a connection that went live (the stream's ready arrived, a poll was
//     answered) and then broke is opened again at once, after 0–250 ms of
//     jitter, and the count of failures starts again from zero;
//   - attempts that never went live back off, 250 ms × 2^(n−1) capped at
//     10 s, with full jitter;
//   - a Retry-After the gateway sent with a 429 or 503 is waited at least.
type Policy struct {
	// Jitter returns a random duration in [0, d]; tests may fix it.
	Jitter func(d time.Duration) time.Duration

	mu       sync.Mutex
	live     bool // the last connection went live, and nothing failed since
	failures int  // attempts that never went live, since the last live one
	// replacements counts the connections in a row that a newer one of
	// the same session replaced; going live does not forgive them.
	replacements int
	notBefore    time.Duration
}

// New returns a policy with no failure counted.
func New() *Policy {
	return &Policy{Jitter: func(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d) + 1)) }}
}

// WentLive records that the current connection went live.
func (p *Policy) WentLive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live, p.failures = true, 0
}

// NotLive records that the last connection, live or not, must not be
// reopened at once: a newer connection of the session replaced it. Two
// clients of one session must not take turns at full speed, so the waits
// grow with the replacements in a row, though each connection went live.
func (p *Policy) NotLive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = false
	p.replacements++
}

// RetryAfter records the wait a 429 or 503 asked for (Retry-After): the
// next wait is at least that.
func (p *Policy) RetryAfter(d time.Duration) {
	if d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notBefore = max(p.notBefore, d)
}

// Next returns the wait before the next attempt, the last connection
// having ended or failed, and counts a failure unless it went live.
func (p *Policy) Next() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var wait time.Duration
	if p.live {
		p.live, p.replacements = false, 0
		wait = p.Jitter(LiveJitter)
	} else {
		p.failures++
		n := p.failures + p.replacements
		step := FailureCap
		if n <= 6 { // 250 ms × 2^5 = 8 s; beyond, the cap
			step = min(FailureBase<<(n-1), FailureCap)
		}
		wait = p.Jitter(step)
	}
	wait = max(wait, p.notBefore)
	p.notBefore = 0
	return wait
}
