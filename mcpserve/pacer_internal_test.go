package mcpserve

import (
	"testing"
	"time"
)

// The pacer lets listBurst updates through at once, then one per
// interval, and fills up again over a quiet while.
func TestListPacer(t *testing.T) {
	const interval = 100 * time.Millisecond
	now := time.Unix(1000, 0)
	p := newListPacer(interval, now)
	for i := 0; i < listBurst; i++ {
		if wait := p.reserve(now); wait != 0 {
			t.Fatalf("update %d of the burst waits %s", i+1, wait)
		}
	}
	if wait := p.reserve(now); wait != interval {
		t.Fatalf("the update after the burst waits %s; want %s", wait, interval)
	}
	now = now.Add(interval) // it waited
	if wait := p.reserve(now); wait != interval {
		t.Fatalf("the next waits %s; want %s", wait, interval)
	}
	now = now.Add(interval + 10*listBurst*interval) // a quiet while
	for i := 0; i < listBurst; i++ {
		if wait := p.reserve(now); wait != 0 {
			t.Fatalf("after a quiet while, update %d waits %s", i+1, wait)
		}
	}
	if wait := p.reserve(now); wait == 0 {
		t.Fatal("the bucket holds more than listBurst")
	}
}
