package keyedlimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/keyedlimit"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestBurstThenRefill: a key gets its burst at once, then is refused with
// the wait until its next token; the wait passed, one more gets through.
// Other keys have their own buckets.
func TestBurstThenRefill(t *testing.T) {
	b := keyedlimit.New(0.5, 3, 10) // a token every 2 s
	for i := range 3 {
		if ok, _ := b.Take("a", t0); !ok {
			t.Fatalf("take %d of the burst refused", i+1)
		}
	}
	ok, wait := b.Take("a", t0)
	if ok || wait != 2*time.Second {
		t.Fatalf("over the burst: ok=%v wait=%s, want refused with 2s", ok, wait)
	}
	if ok, wait := b.Take("a", t0.Add(1500*time.Millisecond)); ok || wait != time.Second {
		t.Fatalf("half a second before the token: ok=%v wait=%s, want refused with 1s (rounded up)", ok, wait)
	}
	if ok, _ := b.Take("b", t0); !ok {
		t.Fatal("another key shares the first one's bucket")
	}
	if ok, _ := b.Take("a", t0.Add(2*time.Second)); !ok {
		t.Fatal("refused after the refill time")
	}
}

// TestWaitIsAtLeastASecond: a fast refill still says 1 s (Retry-After
// counts whole seconds; 0 would mean "now").
func TestWaitIsAtLeastASecond(t *testing.T) {
	b := keyedlimit.New(100, 1, 10)
	b.Take("a", t0)
	if ok, wait := b.Take("a", t0); ok || wait != time.Second {
		t.Fatalf("ok=%v wait=%s, want refused with 1s", ok, wait)
	}
}

// TestKeysBounded: many keys never hold more than maxKeys buckets; buckets
// full again are dropped first, so a busy key keeps its (empty) bucket
// while idle ones go.
func TestKeysBounded(t *testing.T) {
	b := keyedlimit.New(1, 2, 100)
	b.Take("busy", t0)
	b.Take("busy", t0)
	for i := range 10_000 {
		b.Take(fmt.Sprint("addr-", i), t0.Add(time.Duration(i)*time.Millisecond))
		if n := b.Len(); n > 100 {
			t.Fatalf("after %d keys: %d buckets, want at most 100", i+1, n)
		}
	}
	// Every bucket is now idle (full) at t0+1h; a new key drops them all.
	b.Take("late", t0.Add(time.Hour))
	if n := b.Len(); n != 1 {
		t.Fatalf("buckets after all went idle: %d, want 1", n)
	}
}

// TestIdleBucketsKept: a bucket not yet full again is not dropped while
// there is room, so its key stays limited.
func TestIdleBucketsKept(t *testing.T) {
	b := keyedlimit.New(1, 2, 100)
	b.Take("a", t0)
	b.Take("a", t0)
	b.Take("other", t0.Add(500*time.Millisecond)) // a is not full again before t0+2s
	if ok, _ := b.Take("a", t0.Add(900*time.Millisecond)); ok {
		t.Fatal("a's bucket was dropped while not full")
	}
}

// TestNilLimitsNothing: a rate or burst of 0 (or less) is no limit.
func TestNilLimitsNothing(t *testing.T) {
	for _, b := range []*keyedlimit.Buckets{keyedlimit.New(0, 10, 10), keyedlimit.New(1, 0, 10), keyedlimit.New(-1, -1, 10)} {
		if b != nil {
			t.Fatal("a disabled limit is not nil")
		}
		for range 1000 {
			if ok, _ := b.Take("a", t0); !ok {
				t.Fatal("a disabled limit refused")
			}
		}
	}
}
