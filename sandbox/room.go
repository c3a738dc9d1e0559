package sandbox

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
	"golang.org/x/sync/semaphore"
)

// StackReserveMB is what a call is counted beside its memory limit for
// its native call stack. wazero's compiler keeps a module's call stack on
// the gateway's heap and grows it by doubling up to a fixed ceiling: a
// runaway recursion holds about 84 MB when it ends with "stack
// overflow", and 126 MB for a moment while the last growth copies it.
// wazero has no setting to lower that ceiling, so the memory budget
// counts it for every call.
const StackReserveMB = 128

// weightMB is what a call of a tool with this memory limit is counted of
// the memory budget.
func weightMB(memoryLimitMB int64) int64 { return memoryLimitMB + StackReserveMB }

// freeAfterAllocBytes is how much a call must have made the process
// allocate (its memory, its call stack…) for its end to give memory back
// to the operating system.
const freeAfterAllocBytes = 32 << 20

// room is the bounds of the calls running at once, and their fair
// shares. The agent key's calls (no toolgate.CallerSession) take a slot
// and their memory from the whole; the calls of the runs a session's
// token started take them first from the sessions' share, which leaves
// the agent key a quarter of the slots (at least one) and of the memory
// budget, and one session at most half the sessions' share of slots, so
// neither one session nor all of them together can make the agent key's
// calls wait behind theirs. The sessions whose runs came from one client
// address (toolgate.CallerAddress) hold together at most half the
// sessions' share too: sessions are cheap to create, so a share per
// session alone would let one address take every session slot.
type room struct {
	memory  *semaphore.Weighted // MiB of weights of the calls running
	slots   chan struct{}       // one per call running
	running atomic.Int64        // calls holding their room

	sessionMemory *semaphore.Weighted // the sessions' share of memory
	sessionSlots  chan struct{}       // the sessions' share of slots
	perSession    int                 // slots one session, or one address, may hold

	mu        sync.Mutex
	bySession map[string]*sessionSlots // the sessions with calls waiting or running
	byAddress map[string]*sessionSlots // the client addresses with calls waiting or running

	freer *memoryFreer
}

// sessionSlots are one session's slots, shared by its calls waiting or
// running (refs).
type sessionSlots struct {
	slots chan struct{}
	refs  int
}

func newRoom(maxConcurrent int, budgetMB int64, freer *memoryFreer) *room {
	reserved := max(1, maxConcurrent/4)
	shared := max(1, maxConcurrent-reserved)
	return &room{
		memory:        semaphore.NewWeighted(budgetMB),
		slots:         make(chan struct{}, maxConcurrent),
		sessionMemory: semaphore.NewWeighted(max(1, budgetMB-budgetMB/4)),
		sessionSlots:  make(chan struct{}, shared),
		perSession:    max(1, shared/2),
		bySession:     map[string]*sessionSlots{},
		byAddress:     map[string]*sessionSlots{},
		freer:         freer,
	}
}

// wait takes a slot and weight MiB of memory for a call, from the shares
// of the session it runs for (toolgate.CallerSession) and of that
// session's client address (toolgate.CallerAddress) first, waiting
// within ctx; release gives them back.
func (r *room) wait(ctx context.Context, weight int64) (release func(), err error) {
	var undo []func()
	giveBack := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if sid := toolgate.CallerSession(ctx); sid != "" {
		own := r.join(r.bySession, sid)
		undo = append(undo, func() { r.leave(r.bySession, sid) })
		type step struct {
			take func() error
			back func()
		}
		steps := []step{{func() error { return take(ctx, own.slots) }, func() { <-own.slots }}}
		if addr := toolgate.CallerAddress(ctx); addr != "" {
			from := r.join(r.byAddress, addr)
			undo = append(undo, func() { r.leave(r.byAddress, addr) })
			steps = append(steps, step{func() error { return take(ctx, from.slots) }, func() { <-from.slots }})
		}
		steps = append(steps, []step{
			{func() error { return take(ctx, r.sessionSlots) }, func() { <-r.sessionSlots }},
			{func() error { return r.sessionMemory.Acquire(ctx, weight) }, func() { r.sessionMemory.Release(weight) }},
		}...)
		for _, s := range steps {
			if err := s.take(); err != nil {
				giveBack()
				return nil, err
			}
			undo = append(undo, s.back)
		}
	}
	if err := take(ctx, r.slots); err != nil {
		giveBack()
		return nil, err
	}
	undo = append(undo, func() { <-r.slots })
	if err := r.memory.Acquire(ctx, weight); err != nil {
		giveBack()
		return nil, err
	}
	undo = append(undo, func() { r.memory.Release(weight) })
	r.running.Add(1)
	allocated := allocatedBytes()
	return func() {
		r.running.Add(-1)
		giveBack()
		if allocatedBytes()-allocated >= freeAfterAllocBytes {
			r.freer.request()
		}
	}, nil
}

// take puts a token in slots, waiting within ctx.
func take(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// join returns the slots of key (a session or a client address) in
// shares, counting one more call of it.
func (r *room) join(shares map[string]*sessionSlots, key string) *sessionSlots {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := shares[key]
	if s == nil {
		s = &sessionSlots{slots: make(chan struct{}, r.perSession)}
		shares[key] = s
	}
	s.refs++
	return s
}

// leave counts one call of key fewer, forgetting it after its last.
func (r *room) leave(shares map[string]*sessionSlots, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := shares[key]; s != nil {
		if s.refs--; s.refs == 0 {
			delete(shares, key)
		}
	}
}

// allocatedBytes is what the process has allocated on its heap since it
// started (a cumulative count, cheap to read).
func allocatedBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// memoryFreer gives the heap a call grew (its linear memory, its call
// stack: hundreds of MiB for a runaway recursion) back to the operating
// system once the call has ended: Go's runtime would otherwise keep it,
// free but mapped, until a later collection and its slow scavenger. It
// runs debug.FreeOSMemory (a full collection) in the background, at most
// once every minGap, and again after a request made while it ran, so the
// last call to end is always followed by one.
type memoryFreer struct {
	minGap time.Duration
	wake   chan struct{}
	freed  atomic.Int64 // times it ran, for the tests
}

func newMemoryFreer(minGap time.Duration) *memoryFreer {
	return &memoryFreer{minGap: minGap, wake: make(chan struct{}, 1)}
}

// request asks for a run; it never blocks.
func (f *memoryFreer) request() {
	select {
	case f.wake <- struct{}{}:
	default: // one is pending: it runs after this call's end
	}
}

// run serves requests until ctx ends. Each request is served by two
// frees a gap apart: what a call still held when the first ran (measured:
// a runaway recursion's last stack, ~100 MiB, was given back only by a
// later collection) is given back by the second.
func (f *memoryFreer) run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		for range 2 {
			if wait := time.Until(last.Add(f.minGap)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			debug.FreeOSMemory()
			last = time.Now()
			f.freed.Add(1)
		}
	}
}
