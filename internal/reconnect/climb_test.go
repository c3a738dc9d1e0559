package reconnect

import (
	"testing"
	"time"
)

// fixedClock is a clock the test moves by hand.
type fixedClock struct{ now time.Time }

func (f *fixedClock) Now() time.Time          { return f.now }
func (f *fixedClock) advance(d time.Duration) { f.now = f.now.Add(d) }

func newTestClimb() (*Climb, *fixedClock) {
	clock := &fixedClock{now: time.Unix(1_700_000_000, 0)}
	c := NewClimb(0)
	c.Now = clock.Now
	return c, clock
}

// Probes come a minute after the move to the poll, then every 2, 4, 8
// minutes after failures, capped at 10.
func TestProbesBackOffToTheCap(t *testing.T) {
	c, clock := newTestClimb()
	c.Downgraded()
	if got := c.UntilProbe(); got != ProbeEvery {
		t.Fatalf("first probe in %s, want %s", got, ProbeEvery)
	}
	clock.advance(ProbeEvery)
	if got := c.UntilProbe(); got != 0 {
		t.Fatalf("probe due, yet wait %s", got)
	}
	want := []time.Duration{2, 4, 8, 10, 10}
	for i, w := range want {
		c.ProbeFailed()
		if got := c.UntilProbe(); got != w*time.Minute {
			t.Fatalf("after failure %d: next probe in %s, want %s", i+1, got, w*time.Minute)
		}
		clock.advance(w * time.Minute)
	}
}

// A stream held back again right after a climb counts as a failed probe;
// one held back long after the climb starts from the first interval.
func TestHeldBackSoonAfterAClimbDoublesTheWait(t *testing.T) {
	c, clock := newTestClimb()
	c.Downgraded()
	clock.advance(ProbeEvery)
	c.Climbed()
	clock.advance(5 * time.Second)
	c.Downgraded()
	if got := c.UntilProbe(); got != 2*ProbeEvery {
		t.Fatalf("held back 5 s after a climb: next probe in %s, want %s", got, 2*ProbeEvery)
	}
	clock.advance(2 * ProbeEvery)
	c.Climbed()
	clock.advance(SwitchWindow + time.Second)
	c.Downgraded()
	if got := c.UntilProbe(); got != ProbeEvery {
		t.Fatalf("held back long after a climb: next probe in %s, want %s", got, ProbeEvery)
	}
}

// Never more than four transport changes in ten minutes: a fifth waits
// until the oldest of the four is ten minutes old.
func TestNoMoreThanFourSwitchesInTenMinutes(t *testing.T) {
	c := NewClimb(time.Second)
	clock := &fixedClock{now: time.Unix(1_700_000_000, 0)}
	c.Now = clock.Now
	start := clock.now
	for range 2 {
		c.Downgraded()
		clock.advance(c.UntilProbe())
		c.Climbed()
		clock.advance(time.Second)
	}
	c.Downgraded() // the fifth change; a climb would be the sixth
	got := c.UntilProbe()
	// The oldest change kept is the second (the climb at start+1 s).
	if want := start.Add(time.Second).Add(SwitchWindow).Sub(clock.now); got != want {
		t.Fatalf("a climb after five changes waits %s, want %s", got, want)
	}
}
