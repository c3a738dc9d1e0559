package reconnect

import (
	"testing"
	"time"
)

// whole makes the jitter its bound, so that the steps show.
func whole(p *Policy) *Policy {
	p.Jitter = func(d time.Duration) time.Duration { return d }
	return p
}

func TestAttemptsThatNeverWentLiveBackOffToTheCap(t *testing.T) {
	p := whole(New())
	want := []time.Duration{250, 500, 1000, 2000, 4000, 8000, 10000, 10000, 10000}
	for i, w := range want {
		if got := p.Next(); got != w*time.Millisecond {
			t.Fatalf("failure %d: wait %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
}

// A connection that went live and broke is reopened at once (within the
// jitter), however many failures came before; failures after it count
// from one again. Repeated live connections cut over and over never wait
// longer: the shared tab lane's 0.3 → 25.7 s growth cannot happen.
func TestALiveConnectionThatBrokeIsReopenedAtOnce(t *testing.T) {
	p := whole(New())
	for range 5 {
		p.Next()
	}
	for cut := range 20 {
		p.WentLive()
		if got := p.Next(); got != LiveJitter {
			t.Fatalf("after live connection %d broke: wait %s, want at most %s", cut+1, got, LiveJitter)
		}
	}
	if got := p.Next(); got != FailureBase {
		t.Fatalf("the first failure after a live connection waits %s, want %s", got, FailureBase)
	}
	// A replaced connection does not come back at once, and replacements
	// in a row wait longer each time, though each connection went live.
	for i, want := range []time.Duration{500, 1000, 2000, 4000} {
		p.WentLive()
		p.NotLive()
		if got := p.Next(); got != want*time.Millisecond {
			t.Fatalf("after replacement %d: wait %s, want %s", i+1, got, want*time.Millisecond)
		}
	}
	// A live connection that then broke ends the run of replacements.
	p.WentLive()
	p.Next()
	if got := p.Next(); got != FailureBase {
		t.Fatalf("after the replacements ended, a failure waits %s, want %s", got, FailureBase)
	}
}

func TestRetryAfterIsWaitedAtLeastOnce(t *testing.T) {
	p := whole(New())
	p.WentLive()
	p.RetryAfter(3 * time.Second)
	p.RetryAfter(time.Second) // the longer one holds
	if got := p.Next(); got != 3*time.Second {
		t.Fatalf("with Retry-After 3 s: wait %s", got)
	}
	if got := p.Next(); got != FailureBase {
		t.Fatalf("the next failure waits %s, want %s (the Retry-After was used)", got, FailureBase)
	}
	p.RetryAfter(-time.Second)
	if got := p.Next(); got != 2*FailureBase {
		t.Fatalf("a negative Retry-After changed the wait to %s", got)
	}
}

func TestJitterStaysWithinItsBound(t *testing.T) {
	p := New()
	for range 1000 {
		p.WentLive()
		if got := p.Next(); got < 0 || got > LiveJitter {
			t.Fatalf("live jitter %s outside [0, %s]", got, LiveJitter)
		}
	}
	for n := range 12 {
		got := p.Next()
		if bound := min(FailureBase<<n, FailureCap); got < 0 || got > bound {
			t.Fatalf("failure %d waited %s, beyond [0, %s]", n+1, got, bound)
		}
	}
}
