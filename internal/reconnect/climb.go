package reconnect

import (
	"sync"
	"time"
)

// The climb back from the long-poll to the stream (docs/PROTOCOL.md,
// "Keep-alive and reconnection"), the same in every SDK of toolgate.
const (
	// ProbeEvery is the least time on the long-poll before the stream is
	// probed; ProbeCap bounds it as it doubles after failed probes.
	ProbeEvery = time.Minute
	ProbeCap   = 10 * time.Minute
	// SwitchWindow and MaxSwitches bound how often a client changes
	// transport: at most MaxSwitches in any SwitchWindow.
	SwitchWindow = 10 * time.Minute
	MaxSwitches  = 4
)

// Climb decides when a client that moved to the long-poll (a proxy held
// its stream back) probes the stream again, and whether it may move back:
//
//   - the first probe comes ProbeEvery after the move to the poll;
//   - each failed probe doubles the wait before the next, up to ProbeCap;
//   - a stream held back again soon after a climb (within SwitchWindow)
//     counts as a failed probe; a stream held back after a longer while
//     starts again from ProbeEvery;
//   - no more than MaxSwitches transport changes in SwitchWindow: a climb
//     waits until one of them is old enough.
//
// A client has one for a connection's life; its methods are safe for
// concurrent use.
type Climb struct {
	// Now returns the current time; tests may fix it.
	Now func() time.Time

	mu        sync.Mutex
	first     time.Duration
	interval  time.Duration
	nextProbe time.Time
	switches  []time.Time // the last MaxSwitches transport changes
	lastClimb time.Time   // zero before the first climb
}

// NewClimb returns a climb whose first probe waits first (ProbeEvery when
// zero or less).
func NewClimb(first time.Duration) *Climb {
	if first <= 0 {
		first = ProbeEvery
	}
	return &Climb{Now: time.Now, first: first, interval: first}
}

// Downgraded records a move from the stream to the long-poll.
func (c *Climb) Downgraded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	if !c.lastClimb.IsZero() && now.Sub(c.lastClimb) < SwitchWindow {
		c.interval = min(2*c.interval, max(ProbeCap, c.first))
	} else {
		c.interval = c.first
	}
	c.nextProbe = now.Add(c.interval)
	c.recordLocked(now)
}

// Climbed records a move from the long-poll back to the stream.
func (c *Climb) Climbed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	c.lastClimb = now
	c.recordLocked(now)
}

func (c *Climb) recordLocked(now time.Time) {
	c.switches = append(c.switches, now)
	if len(c.switches) > MaxSwitches {
		c.switches = c.switches[len(c.switches)-MaxSwitches:]
	}
}

// ProbeFailed records a probe that did not pass: the next waits twice as
// long (up to ProbeCap).
func (c *Climb) ProbeFailed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interval = min(2*c.interval, max(ProbeCap, c.first))
	c.nextProbe = c.Now().Add(c.interval)
}

// UntilProbe returns how long to wait before the next probe: until it is
// due, and until a climb would not exceed MaxSwitches in SwitchWindow.
func (c *Climb) UntilProbe() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Now()
	wait := c.nextProbe.Sub(now)
	if len(c.switches) >= MaxSwitches {
		wait = max(wait, c.switches[0].Add(SwitchWindow).Sub(now))
	}
	return max(wait, 0)
}

// Interval returns the current wait between probes.
func (c *Climb) Interval() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interval
}
