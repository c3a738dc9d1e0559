// Package keyedlimit keeps a token bucket (golang.org/x/time/rate) per key
// — a client address, a session — in a map of bounded size, for limits
// that must hold per key without letting the keys grow memory without end.
//
// A key's bucket is dropped once it has been left alone long enough to be
// full again: it then holds nothing a fresh bucket would not. When the map
// is at its size all the same, the bucket used least recently is dropped,
// so that many keys (an attacker's many addresses) cost bounded memory;
// the key it belonged to starts again with a full bucket, which only
// someone using more keys than the map holds can exploit, and they already
// have that many buckets' worth.
package keyedlimit

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Buckets is a token bucket per key. A nil *Buckets limits nothing. It is
// safe for concurrent use.
type Buckets struct {
	perSecond rate.Limit
	burst     int
	maxKeys   int
	fullAfter time.Duration // how long an untouched bucket takes to refill

	mu    sync.Mutex
	byKey map[string]*list.Element // of *bucket
	lru   *list.List               // front: used most recently
}

// bucket is one key's limiter and when it was last used.
type bucket struct {
	key      string
	limiter  *rate.Limiter
	lastUsed time.Time
}

// New returns buckets of burst tokens refilled at perSecond, for at most
// maxKeys keys at once; nil (no limit) when perSecond or burst is not
// positive. maxKeys below 1 is taken as 1.
func New(perSecond float64, burst, maxKeys int) *Buckets {
	if perSecond <= 0 || burst <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return nil
	}
	return &Buckets{
		perSecond: rate.Limit(perSecond),
		burst:     burst,
		maxKeys:   max(maxKeys, 1),
		fullAfter: time.Duration(float64(burst) / perSecond * float64(time.Second)),
		byKey:     map[string]*list.Element{},
		lru:       list.New(),
	}
}

// Take takes one token from key's bucket at now. When the bucket is empty
// it takes nothing and returns false with how long until a token is back
// (at least a second, whole seconds: what a Retry-After header says).
func (b *Buckets) Take(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.bucketLocked(key, now)
	bk.lastUsed = now
	if bk.limiter.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - bk.limiter.TokensAt(now)
	wait := math.Ceil(missing / float64(b.perSecond))
	return false, time.Duration(max(wait, 1)) * time.Second
}

// Len returns how many keys have a bucket now.
func (b *Buckets) Len() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey)
}

// bucketLocked returns key's bucket, made (full) when it has none, moved
// to the front of the use order. Making one first drops the buckets full
// again, then, at maxKeys, the one used least recently.
func (b *Buckets) bucketLocked(key string, now time.Time) *bucket {
	if el, ok := b.byKey[key]; ok {
		b.lru.MoveToFront(el)
		return el.Value.(*bucket)
	}
	for el := b.lru.Back(); el != nil; el = b.lru.Back() {
		idle := now.Sub(el.Value.(*bucket).lastUsed) >= b.fullAfter
		if !idle && b.lru.Len() < b.maxKeys {
			break
		}
		b.lru.Remove(el)
		delete(b.byKey, el.Value.(*bucket).key)
	}
	bk := &bucket{key: key, limiter: rate.NewLimiter(b.perSecond, b.burst), lastUsed: now}
	b.byKey[key] = b.lru.PushFront(bk)
	return bk
}
