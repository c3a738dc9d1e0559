package handlers_test

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate"
)

// The fakes of the engine's parts: each method calls its func field, and
// one left nil panics (a 500 from the router's Recoverer).

type fakeSessions struct {
	create func(req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error)
	view   func(sid string) (*toolgate.SessionView, error)
	list   func(q toolgate.SessionQuery) (*toolgate.SessionList, error)
	close  func(sid string) error
}

func (f *fakeSessions) CreateSession(_ context.Context, req toolgate.CreateSessionRequest) (*toolgate.SessionCreated, error) {
	return f.create(req)
}
func (f *fakeSessions) SessionView(_ context.Context, sid string) (*toolgate.SessionView, error) {
	return f.view(sid)
}
func (f *fakeSessions) ListSessions(_ context.Context, q toolgate.SessionQuery) (*toolgate.SessionList, error) {
	return f.list(q)
}
func (f *fakeSessions) CloseSession(_ context.Context, sid string) error { return f.close(sid) }

type fakeTools struct {
	register func(sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error)
	remove   func(sid, name string) error
	list     func(q toolgate.ToolQuery) (*toolgate.ToolList, error)
}

func (f *fakeTools) RegisterTools(_ context.Context, sid string, req toolgate.RegisterToolsRequest) (*toolgate.ToolsRegistered, error) {
	return f.register(sid, req)
}
func (f *fakeTools) RemoveTool(_ context.Context, sid, name string) error {
	return f.remove(sid, name)
}
func (f *fakeTools) ListToolsPage(_ context.Context, q toolgate.ToolQuery) (*toolgate.ToolList, error) {
	return f.list(q)
}

type fakeAnswers struct {
	submit   func(sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error)
	progress func(sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error)
}

func (f *fakeAnswers) SubmitAnswers(_ context.Context, sid string, answers []toolgate.Answer) ([]toolgate.AnswerAck, error) {
	return f.submit(sid, answers)
}
func (f *fakeAnswers) ReportProgress(_ context.Context, sid string, p toolgate.ProgressReport) (*toolgate.ProgressAck, error) {
	return f.progress(sid, p)
}

// fakeCalls passes the request's context on where a test needs to see
// whether it ended.
type fakeCalls struct {
	create func(req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error)
	get    func(ctx context.Context, id string) (*toolgate.Call, error)
	wait   func(ctx context.Context, id string, wait time.Duration) (*toolgate.Call, error)
	list   func(q toolgate.CallQuery) (*toolgate.CallList, error)
	cancel func(id string) (*toolgate.Call, error)
}

func (f *fakeCalls) CreateCall(_ context.Context, req toolgate.CallRequest, idempotencyKey string) (*toolgate.Call, error) {
	return f.create(req, idempotencyKey)
}
func (f *fakeCalls) GetCall(ctx context.Context, id string) (*toolgate.Call, error) {
	return f.get(ctx, id)
}
func (f *fakeCalls) WaitCall(ctx context.Context, id string, wait time.Duration) (*toolgate.Call, error) {
	return f.wait(ctx, id, wait)
}
func (f *fakeCalls) ListCalls(_ context.Context, q toolgate.CallQuery) (*toolgate.CallList, error) {
	return f.list(q)
}
func (f *fakeCalls) CancelCall(_ context.Context, id string) (*toolgate.Call, error) {
	return f.cancel(id)
}

type fakeDelivery struct {
	listen      func(sid string, streaming bool) (toolgate.Listener, error)
	listenFunc  func(sid string, streaming bool, notify func()) (toolgate.Listener, error)
	openEvents  func(sid string) ([]toolgate.Event, int64, error)
	eventsAfter func(sid string, cursor int64) ([]toolgate.Event, int64, error)
	checkCursor func(sid string, cursor int64) error
	delivered   func(sid string, events []toolgate.Event)
}

func (f *fakeDelivery) Listen(sid string, via toolgate.Via) (toolgate.Listener, error) {
	return f.listen(sid, via.Streaming())
}
func (f *fakeDelivery) ListenFunc(sid string, via toolgate.Via, notify func()) (toolgate.Listener, error) {
	return f.listenFunc(sid, via.Streaming(), notify)
}
func (f *fakeDelivery) OpenEvents(_ context.Context, sid string) ([]toolgate.Event, int64, error) {
	return f.openEvents(sid)
}
func (f *fakeDelivery) EventsAfter(_ context.Context, sid string, cursor int64) ([]toolgate.Event, int64, error) {
	return f.eventsAfter(sid, cursor)
}
func (f *fakeDelivery) CheckCursor(_ context.Context, sid string, cursor int64) error {
	return f.checkCursor(sid, cursor)
}
func (f *fakeDelivery) Delivered(sid string, events []toolgate.Event) { f.delivered(sid, events) }

// fakeListener is a toolgate.Listener the test wakes and ends.
type fakeListener struct {
	wake      chan struct{}
	done      chan struct{}
	reason    string // the end reason, set before done is closed
	closed    chan struct{}
	closeOnce sync.Once
	endOnce   sync.Once
	replaced  atomic.Bool // a newer stream or poll took its place
}

func newFakeListener() *fakeListener {
	return &fakeListener{wake: make(chan struct{}, 1), done: make(chan struct{}), closed: make(chan struct{})}
}

func (l *fakeListener) Wake() <-chan struct{} { return l.wake }
func (l *fakeListener) Done() <-chan struct{} { return l.done }
func (l *fakeListener) Close()                { l.closeOnce.Do(func() { close(l.closed) }) }
func (l *fakeListener) Cut()                  { l.Close() }
func (l *fakeListener) EndReason() string {
	if l.replaced.Load() {
		return toolgate.EndReplaced
	}
	select {
	case <-l.done:
		return l.reason
	default:
		return ""
	}
}

// signal wakes the listener as the engine does when the log grows.
func (l *fakeListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// replace ends the listener as the engine does when a newer stream or
// poll of its session takes its place: the reason, then a wake (the
// caller wakes a listener with notify itself).
func (l *fakeListener) replace() {
	l.replaced.Store(true)
	l.signal()
}

// end ends the session, as the engine does when it closes.
func (l *fakeListener) end() { l.endWith("closed") }

// endWith ends the session for reason ("closed", "expired"; "" as at
// shutdown).
func (l *fakeListener) endWith(reason string) {
	l.endOnce.Do(func() { l.reason = reason; close(l.done) })
}

// event is a stored event of type typ with the call id, as the log holds it.
func event(seq int64, typ, callID string) toolgate.Event {
	return toolgate.Event{Seq: seq, Type: typ, CallID: callID,
		Data: []byte(`{"type":"` + typ + `","id":"` + callID + `"}`)}
}

// eventLog is a session's event log that a test appends to, read as the
// engine reads it: the events after a cursor, and the new cursor.
type eventLog struct {
	mu     sync.Mutex
	events []toolgate.Event
}

func (g *eventLog) add(events ...toolgate.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, events...)
	slices.SortFunc(g.events, func(a, b toolgate.Event) int { return cmp.Compare(a.Seq, b.Seq) })
}

func (g *eventLog) after(_ string, cursor int64) ([]toolgate.Event, int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []toolgate.Event
	for _, ev := range g.events {
		if ev.Seq > cursor {
			out = append(out, ev)
			cursor = ev.Seq
		}
	}
	return out, cursor, nil
}

// seqs lists the sequence numbers of events.
func seqs(events []toolgate.Event) []int64 {
	out := []int64{}
	for _, ev := range events {
		out = append(out, ev.Seq)
	}
	return out
}
