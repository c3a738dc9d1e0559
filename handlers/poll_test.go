package handlers_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// pollOver is a Delivery for polls over log, whose open calls are open.
func pollOver(log *eventLog, open ...toolgate.Event) *fakeDelivery {
	return &fakeDelivery{
		listen:      func(string, bool) (toolgate.Listener, error) { return newFakeListener(), nil },
		openEvents:  func(string) ([]toolgate.Event, int64, error) { return open, seqOfLast(open), nil },
		eventsAfter: log.after,
		checkCursor: func(string, int64) error { return nil },
		delivered:   func(string, []toolgate.Event) {},
	}
}

func seqOfLast(events []toolgate.Event) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Seq
}

func TestPoll(t *testing.T) {
	log := &eventLog{}
	log.add(event(3, "tool_call_request", "c1"), event(4, "call_cancelled", "c1"),
		toolgate.Event{Seq: 5, Type: "odd", Data: []byte(`{}`)})
	delivery := func(d *fakeDelivery) fakeEngine { return fakeEngine{Delivery: d} }
	poll := func(query string) request {
		return request{method: "GET", path: "/v1/sessions/" + sid1 + "/poll" + query, headers: asSession(sid1)}
	}
	failing := func(tweak func(d *fakeDelivery)) fakeEngine {
		d := pollOver(log)
		tweak(d)
		return delivery(d)
	}
	runScenarios(t, []scenario{
		{name: "the first poll gets the open calls", engine: delivery(pollOver(log, event(3, "tool_call_request", "c1"))),
			request: poll(""),
			status:  200, body: `{"events":[{"seq":3,"type":"tool_call_request","id":"c1"}],"cursor":3}` + "\n",
			header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store"}},
		{name: "a poll from a cursor", engine: delivery(pollOver(log)),
			request: poll("?cursor=3"),
			status:  200, body: `{"events":[{"seq":4,"type":"call_cancelled","id":"c1"},{"seq":5}],"cursor":5}` + "\n"},
		{name: "nothing new and no wait", engine: delivery(pollOver(log)),
			request: poll("?cursor=5&wait_ms=0"),
			status:  200, body: `{"events":[],"cursor":5}` + "\n"},
		{name: "no open calls", engine: delivery(pollOver(log)),
			request: poll(""),
			status:  200, body: `{"events":[],"cursor":0}` + "\n"},
		{name: "the token in the query", engine: delivery(pollOver(log)),
			request: request{method: "GET", path: "/v1/sessions/" + sid1 + "/poll?cursor=5&access_token=token-" + sid1},
			status:  200, body: `{"events":[],"cursor":5}` + "\n"},

		{name: "a cursor that is not a number", engine: delivery(pollOver(log)),
			request: poll("?cursor=3a"),
			status:  400, body: errorBody(toolgate.EBadRequest, `cursor must be a whole number from an earlier poll, not "3a"`)},
		{name: "an empty cursor", engine: delivery(pollOver(log)),
			request: poll("?cursor="),
			status:  400, body: errorBody(toolgate.EBadRequest, `cursor must be a whole number from an earlier poll, not ""`)},
		{name: "a wait that is not a number", engine: delivery(pollOver(log)),
			request: poll("?wait_ms=soon"),
			status:  400, body: errorBody(toolgate.EBadRequest, `wait_ms must be a whole number of milliseconds, not "soon"`)},
		{name: "a cursor the log cannot resume from",
			engine: failing(func(d *fakeDelivery) {
				d.checkCursor = func(_ string, c int64) error {
					return toolgate.Errorf(toolgate.EBadRequest, "cursor %d is past the log", c)
				}
			}),
			request: poll("?cursor=99"),
			status:  400, body: errorBody(toolgate.EBadRequest, "cursor 99 is past the log")},
		{name: "a session that cannot be listened to",
			engine: failing(func(d *fakeDelivery) {
				d.listen = func(sid string, _ bool) (toolgate.Listener, error) {
					return nil, toolgate.Errorf(toolgate.ENotFound, "session %s is closed", sid)
				}
			}),
			request: poll(""),
			status:  404, body: errorBody(toolgate.ENotFound, "session "+sid1+" is closed")},
		{name: "the open calls cannot be read",
			engine: failing(func(d *fakeDelivery) {
				d.openEvents = func(string) ([]toolgate.Event, int64, error) { return nil, 0, errors.New("store closed") }
			}),
			request: poll(""),
			status:  500, body: errorBody(toolgate.EInternal, "Internal error.")},
		{name: "the log cannot be read",
			engine: failing(func(d *fakeDelivery) {
				d.eventsAfter = func(string, int64) ([]toolgate.Event, int64, error) { return nil, 0, errors.New("store closed") }
			}),
			request: poll("?cursor=1"),
			status:  500, body: errorBody(toolgate.EInternal, "Internal error.")},
	})
}

// heldPoll is the engine side of a poll from cursor 7 of an empty log:
// the newHeldPoll's during runs right after the log's first read, as if
// something happened while the poll is held.
type heldPoll struct {
	log       eventLog
	listener  *fakeListener
	reads     atomic.Int32
	listened  received[bool]
	checked   received[int64]
	delivered received[[]int64]
}

func newHeldPoll(during func(p *heldPoll)) (*heldPoll, fakeEngine) {
	p := &heldPoll{listener: newFakeListener()}
	return p, fakeEngine{Delivery: &fakeDelivery{
		listen: func(sid string, streaming bool) (toolgate.Listener, error) {
			p.listened.put(streaming)
			return p.listener, nil
		},
		checkCursor: func(_ string, cursor int64) error { p.checked.put(cursor); return nil },
		eventsAfter: func(sid string, cursor int64) ([]toolgate.Event, int64, error) {
			if p.reads.Add(1) == 1 && during != nil {
				defer during(p)
			}
			return p.log.after(sid, cursor)
		},
		delivered: func(_ string, events []toolgate.Event) { p.delivered.put(seqs(events)) },
	}}
}

func TestPollHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during func(p *heldPoll)
		wait   string
		tune   func(*handlers.Options)
		body   string
		reads  int32
		// held is how long the poll must at least have been held.
		held time.Duration
	}{
		{name: "an event arrives",
			during: func(p *heldPoll) { p.log.add(event(8, "tool_call_request", "c2")); p.listener.signal() },
			wait:   "&wait_ms=5000",
			body:   `{"events":[{"seq":8,"type":"tool_call_request","id":"c2"}],"cursor":8}` + "\n", reads: 2},
		{name: "the session ends",
			during: func(p *heldPoll) { p.log.add(event(8, "call_cancelled", "c1")); p.listener.end() },
			wait:   "&wait_ms=5000",
			body:   `{"events":[{"seq":8,"type":"call_cancelled","id":"c1"}],"cursor":8}` + "\n", reads: 2},
		{name: "a newer poll replaces it",
			during: func(p *heldPoll) { p.log.add(event(8, "tool_call_request", "c2")); p.listener.replace() },
			wait:   "&wait_ms=5000",
			body:   `{"events":[{"type":"stream_replaced","session_id":"` + sid1 + `"}],"cursor":7}` + "\n", reads: 1},
		{name: "a wake with nothing new holds on",
			during: func(p *heldPoll) { p.listener.signal() },
			wait:   "&wait_ms=50",
			body:   `{"events":[],"cursor":7}` + "\n", reads: 2, held: 50 * time.Millisecond},
		{name: "the wait is capped",
			tune: func(o *handlers.Options) { o.MaxPollWait = 50 * time.Millisecond },
			wait: "&wait_ms=600000",
			body: `{"events":[],"cursor":7}` + "\n", reads: 1, held: 50 * time.Millisecond},
		{name: "the default wait",
			tune: func(o *handlers.Options) { o.PollWait = 50 * time.Millisecond },
			body: `{"events":[],"cursor":7}` + "\n", reads: 1, held: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, eng := newHeldPoll(tc.during)
			ts := newTestServer(t, eng, tc.tune, false)
			start := time.Now()
			status, _, body := ts.call(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/poll?cursor=7" + tc.wait, headers: asSession(sid1)})
			if status != 200 || body != tc.body {
				t.Fatalf("status %d body %s, want 200 %s", status, body, tc.body)
			}
			if held := time.Since(start); held < tc.held {
				t.Errorf("held %v, want at least %v", held, tc.held)
			}
			if reads := p.reads.Load(); reads != tc.reads {
				t.Errorf("the log was read %d times, want %d", reads, tc.reads)
			}
			if streaming := p.listened.only(t); streaming {
				t.Error("a poll listened as a stream")
			}
			if cursor := p.checked.only(t); cursor != 7 {
				t.Errorf("checked the cursor %d, want 7", cursor)
			}
			var replied struct{ Events []struct{ Seq int64 } }
			if err := json.Unmarshal([]byte(body), &replied); err != nil {
				t.Fatal(err)
			}
			want := []int64{}
			for _, ev := range replied.Events {
				if ev.Seq != 0 { // stream_replaced is no event of the log
					want = append(want, ev.Seq)
				}
			}
			if got := p.delivered.only(t); !reflect.DeepEqual(got, want) {
				t.Errorf("recorded %v as delivered, want %v", got, want)
			}
			select {
			case <-p.listener.closed:
			default:
				t.Error("the poll's listener was left open")
			}
		})
	}
}
