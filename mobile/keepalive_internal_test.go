package mobile

import (
	"testing"
	"time"
)

func TestTwoSimilarIdleCutsAskAHeartbeatBelowThem(t *testing.T) {
	p := &pathLessons{byURL: map[string]*pathLesson{}}
	const gw = "http://gw"
	hb := 15 * time.Second
	if asked, changed := p.streamEnded(gw, true, 10*time.Second, hb); changed || asked != 0 {
		t.Fatalf("one cut changed the heartbeat to %s", asked)
	}
	// A cut that is not idle (a ping was due: a stall) breaks the run.
	p.streamEnded(gw, true, 16*time.Second, hb)
	if _, changed := p.streamEnded(gw, true, 10*time.Second, hb); changed {
		t.Fatal("a cut after a stall counted as the second of a run")
	}
	// Too different: 10 s and 6 s are not one proxy's limit.
	if _, changed := p.streamEnded(gw, true, 6*time.Second, hb); changed {
		t.Fatal("cuts at 10 s and 6 s were taken as alike")
	}
	if asked, changed := p.streamEnded(gw, true, 7*time.Second, hb); !changed || asked != 2400*time.Millisecond {
		t.Fatalf("cuts at 6 s and 7 s: asked %s (changed %v), want 0.4 × 6 s", asked, changed)
	}
	if got := p.heartbeat(gw); got != 2400*time.Millisecond {
		t.Fatalf("remembered %s", got)
	}
	if p.heartbeat("http://other") != 0 {
		t.Fatal("another gateway got the lesson")
	}
	// A stream the gateway ended (replaced) is no cut; nor is a longer
	// heartbeat ever asked after a shorter one; the floor is 1 s.
	p.streamEnded(gw, false, 2*time.Second, 2400*time.Millisecond)
	p.streamEnded(gw, true, 2*time.Second, 2400*time.Millisecond)
	if asked, _ := p.streamEnded(gw, true, 2100*time.Millisecond, 2400*time.Millisecond); asked != time.Second {
		t.Fatalf("cuts at 2 s: asked %s, want the 1 s floor", asked)
	}
}

func TestPollHoldHalvesOnProxyFailuresAndGrowsBack(t *testing.T) {
	p := &pathLessons{byURL: map[string]*pathLesson{}}
	const gw, wait = "http://gw", 25 * time.Second
	if got := p.pollHold(gw, wait); got != wait {
		t.Fatalf("first hold %s", got)
	}
	ms := time.Millisecond
	for _, want := range []time.Duration{12500 * ms, 6250 * ms, 3125 * ms, 1562500 * time.Microsecond, 1000 * ms, 1000 * ms} {
		p.pollFailed(gw, p.pollHold(gw, wait))
		if got := p.pollHold(gw, wait); got != want {
			t.Fatalf("after a failure: hold %s, want %s", got, want)
		}
	}
	clean := 0
	for p.pollHold(gw, wait) < wait {
		p.pollHeld(gw, wait)
		clean++
	}
	if clean < 10 || clean > 20 {
		t.Fatalf("the hold grew back from 1 s to 25 s in %d clean polls, want slowly (×1.25 each)", clean)
	}
}
