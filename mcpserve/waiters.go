package mcpserve

import "sync"

// callWaiters counts the tools/call requests waiting on each idempotency
// key: a host that retries a request (a connection that looked dead)
// sends the same key and gets the same call, and the earlier attempt
// giving up must not cancel the call the retry still waits on. There is
// an entry per key while a request waits on it, so at most as many as
// requests being served.
type callWaiters struct {
	mu    sync.Mutex
	byKey map[string]int
}

func newCallWaiters() *callWaiters {
	return &callWaiters{byKey: map[string]int{}}
}

// waiter is one request waiting on a call.
type waiter struct {
	all  *callWaiters
	key  string // "" when the call has no idempotency key: no one else can wait on it
	left bool
}

// join counts a request in under its idempotency key ("" for none);
// call leave when it no longer waits.
func (w *callWaiters) join(key string) *waiter {
	if key != "" {
		w.mu.Lock()
		w.byKey[key]++
		w.mu.Unlock()
	}
	return &waiter{all: w, key: key}
}

// leave counts the request out, and reports whether it was the last one
// waiting on its call (always, for a call without a key). Only the first
// leave counts; later ones report false.
func (x *waiter) leave() (last bool) {
	if x.left {
		return false
	}
	x.left = true
	if x.key == "" {
		return true
	}
	x.all.mu.Lock()
	defer x.all.mu.Unlock()
	x.all.byKey[x.key]--
	if x.all.byKey[x.key] > 0 {
		return false
	}
	delete(x.all.byKey, x.key)
	return true
}
