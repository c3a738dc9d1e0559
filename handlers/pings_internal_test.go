package handlers

import (
	"testing"
	"time"
)

// Streams opened together (every client back after a restart) get their
// pings spread over the last quarter of their interval, not all due at
// once; each then pings every interval of its own, and a stream that
// ended is dropped when its turn comes.
func TestPingScheduleSpreadsStreamsOpenedTogether(t *testing.T) {
	var q pingSchedule
	now := time.Unix(1000, 0)
	const n = 1000
	open := map[*hubStream]bool{}
	for i := range n {
		every := 4 * time.Second
		if i%2 == 1 {
			every = time.Second
		}
		s := &hubStream{heartbeat: every}
		open[s] = true
		q.add(s, now)
	}
	first, _ := q.next()
	if first.Before(now.Add(750*time.Millisecond)) || !first.Before(now.Add(time.Second)) {
		t.Fatalf("first ping due %s after the opening, want within the last quarter of 1 s", first.Sub(now))
	}
	live := func(s *hubStream) bool { return open[s] }
	// Within the first 100 ms of the 1 s streams' quarter only a share is due.
	if due := q.popDue(now.Add(850*time.Millisecond), live); len(due) == 0 || len(due) > n/2*3/4 {
		t.Fatalf("%d of %d streams due 850 ms after opening together, want a spread share", len(due), n/2)
	}
	due := q.popDue(now.Add(time.Second), live)
	for _, s := range due {
		if s.heartbeat != time.Second {
			t.Fatalf("a 4 s stream was due after 1 s")
		}
	}
	// By 4 s every stream was due at least once; the 1 s ones about four times.
	counts := map[*hubStream]int{}
	for at := now.Add(1100 * time.Millisecond); !at.After(now.Add(4 * time.Second)); at = at.Add(100 * time.Millisecond) {
		for _, s := range q.popDue(at, live) {
			counts[s]++
		}
	}
	for s := range open {
		if s.heartbeat == 4*time.Second && counts[s] != 1 {
			t.Fatalf("a 4 s stream pinged %d times in 4 s", counts[s])
		}
		if s.heartbeat == time.Second && (counts[s] < 2 || counts[s] > 4) {
			t.Fatalf("a 1 s stream pinged %d more times by 4 s", counts[s])
		}
	}
	// Streams that ended leave the schedule at their turn.
	for s := range open {
		open[s] = false
	}
	q.popDue(now.Add(time.Minute), live)
	if len(q) != 0 {
		t.Fatalf("%d ended streams left in the schedule", len(q))
	}
}
