package mobile

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/toolgate/toolgate"
)

// executor runs calls on a fixed number of worker goroutines, in the order
// they arrived. One worker (the default) means an app's handler never runs
// twice at once.
type executor struct {
	run func(*Call)

	mu      sync.Mutex
	queue   []*Call
	wake    chan struct{}
	stop    chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

func newExecutor(workers int, run func(*Call)) *executor {
	if workers < 1 {
		workers = 1
	}
	e := &executor{run: run, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	e.wg.Add(workers)
	for range workers {
		go e.work()
	}
	return e
}

// submit queues a call; it never blocks.
func (e *executor) submit(call *Call) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, call)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *executor) next() *Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return nil
	}
	call := e.queue[0]
	e.queue[0] = nil
	e.queue = e.queue[1:]
	if len(e.queue) > 0 {
		// Another worker may be idle: pass the wake-up on.
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	return call
}

func (e *executor) work() {
	defer e.wg.Done()
	for {
		if call := e.next(); call != nil {
			e.run(call)
			continue
		}
		select {
		case <-e.stop:
			return
		case <-e.wake:
		}
	}
}

// close stops taking calls and returns the calls still queued. Workers
// finish the call they run on their own; close does not wait for them.
func (e *executor) close() []*Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	close(e.stop)
	queued := e.queue
	e.queue = nil
	return queued
}

// callTable remembers the calls in flight and the ids already taken, so a
// call delivered twice (at-least-once delivery, a replay after a
// reconnection) runs once.
type callTable struct {
	mu     sync.Mutex
	active map[string]*Call
	seen   map[string]struct{}
	order  []string // seen ids, oldest first, to bound the memory
	limit  int
}

func newCallTable(limit int) *callTable {
	return &callTable{active: map[string]*Call{}, seen: map[string]struct{}{}, limit: limit}
}

// admit records the call and reports whether it is new.
func (t *callTable) admit(call *Call) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.seen[call.id]; dup {
		return false
	}
	t.markSeenLocked(call.id)
	t.active[call.id] = call
	return true
}

// cancel cancels an active call, or remembers the id so that a late copy
// of its request is not run.
func (t *callTable) cancel(id, reason string) *Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	if call := t.active[id]; call != nil {
		call.cancel(reason)
		return call
	}
	if _, dup := t.seen[id]; !dup {
		t.markSeenLocked(id)
	}
	return nil
}

// cancelAll cancels every active call.
func (t *callTable) cancelAll(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, call := range t.active {
		call.cancel(reason)
	}
}

// cancelAndForgetActive cancels every active call and forgets its id, so
// the same call delivered again later runs again.
func (t *callTable) cancelAndForgetActive(reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, call := range t.active {
		call.cancel(reason)
		delete(t.seen, id)
		delete(t.active, id)
	}
}

// finish forgets an active call; its id stays seen. A newer copy of the
// same call (admitted after Close forgot this one) is left alone.
func (t *callTable) finish(call *Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active[call.id] == call {
		delete(t.active, call.id)
	}
}

// reset forgets everything (a new session starts a new id space).
func (t *callTable) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active = map[string]*Call{}
	t.seen = map[string]struct{}{}
	t.order = nil
}

func (t *callTable) markSeenLocked(id string) {
	t.seen[id] = struct{}{}
	t.order = append(t.order, id)
	if len(t.order) > t.limit {
		drop := len(t.order) - t.limit
		for _, old := range t.order[:drop] {
			if _, running := t.active[old]; !running {
				delete(t.seen, old)
			}
		}
		t.order = append([]string(nil), t.order[drop:]...)
	}
}

// runCall runs one call's handler and queues its answer, unless the call
// was cancelled meanwhile (the gateway has closed it: an answer would only
// be refused).
func (c *Client) runCall(call *Call) {
	defer c.calls.finish(call)
	defer close(call.finished)
	if call.Cancelled() {
		c.log(LevelInfo, fmt.Sprintf("call %s (%s) cancelled (%s) before it ran", call.id, call.name, call.cancelReason))
		return
	}
	ans := c.invokeHandler(call)
	if call.Cancelled() {
		c.log(LevelInfo, fmt.Sprintf("call %s (%s) cancelled (%s); its answer is not sent", call.id, call.name, call.cancelReason))
		return
	}
	c.outbox.add(ans)
}

// invokeHandler finds the handler for the call's tool and turns what it
// returns, or a panic, into an answer.
func (c *Client) invokeHandler(call *Call) (ans answer) {
	h := c.tools.handlerFor(call.name)
	if h == nil {
		return errorAnswer(call.id, &ToolError{
			Code:    toolgate.EToolNotFound,
			Message: fmt.Sprintf("this client has no handler for the tool %q", call.name),
		})
	}
	defer func() {
		if r := recover(); r != nil {
			c.log(LevelError, fmt.Sprintf("handler of %s panicked on call %s: %v\n%s", call.name, call.id, r, debug.Stack()))
			ans = errorAnswer(call.id, &ToolError{Code: CodeInternalError, Message: fmt.Sprintf("the tool's handler panicked: %v", r)})
		}
	}()
	result, err := h.HandleCall(call)
	switch failure := call.recordedFailure(); {
	case failure != nil:
		ans = errorAnswer(call.id, failure)
	case err != nil:
		ans = errorAnswer(call.id, asToolError(err))
	default:
		ans = resultAnswer(call.id, outputJSON(result))
	}
	ans.Cost = call.reportedCost() // Call.ReportCost's, with either answer
	return ans
}
