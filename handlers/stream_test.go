package handlers_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
)

// frame is an event as the stream writes it.
func frame(seq int64, typ, callID string) string {
	return fmt.Sprintf("id: %d\nevent: %s\ndata: {\"type\":\"%s\",\"id\":\"%s\"}\n\n", seq, typ, typ, callID)
}

// ready is the start of every stream of session s1.
func ready(heartbeatMS int) string {
	return fmt.Sprintf("retry: 2000\n\nevent: ready\ndata: {\"type\":\"ready\",\"session_id\":\"%s\",\"heartbeat_ms\":%d}\n\n", sid1, heartbeatMS)
}

// openStream is a stream's engine side: the session's log, its open calls,
// the listener, and what the handlers told the engine.
type openStream struct {
	log      eventLog
	open     []toolgate.Event
	listener *fakeListener
	checked  received[int64]

	mu        sync.Mutex
	notify    func()  // set when the stream listens with ListenFunc
	streaming *bool   // set when it listens with Listen
	delivered []int64 // every event recorded as delivered
}

func newOpenStream(open ...toolgate.Event) (*openStream, fakeEngine) {
	s := &openStream{open: open, listener: newFakeListener()}
	s.log.add(open...)
	return s, fakeEngine{Delivery: &fakeDelivery{
		listen: func(sid string, streaming bool) (toolgate.Listener, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.streaming = &streaming
			return s.listener, nil
		},
		listenFunc: func(sid string, _ bool, notify func()) (toolgate.Listener, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.notify = notify
			return s.listener, nil
		},
		openEvents:  func(string) ([]toolgate.Event, int64, error) { return s.open, seqOfLast(s.open), nil },
		eventsAfter: s.log.after,
		checkCursor: func(_ string, cursor int64) error { s.checked.put(cursor); return nil },
		delivered: func(_ string, events []toolgate.Event) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.delivered = append(s.delivered, seqs(events)...)
		},
	}}
}

// wake tells the stream its log has grown, as the engine does: through
// notify for a stream the hub serves, through the listener's channel for
// one served by its request's goroutine.
func (s *openStream) wake() {
	s.mu.Lock()
	notify := s.notify
	s.mu.Unlock()
	if notify != nil {
		notify()
	} else {
		s.listener.signal()
	}
}

func (s *openStream) deliveredSeqs() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64{}, s.delivered...)
}

// expect reads exactly want from the stream.
func expect(t *testing.T, r io.Reader, want string) {
	t.Helper()
	got := make([]byte, len(want))
	n, err := io.ReadFull(r, got)
	if err != nil || string(got) != want {
		t.Fatalf("the stream sent %q (%v), want %q", got[:n], err, want)
	}
}

// transports are the two ways a stream is served: HTTP/1.1, whose
// connection the stream hub takes over, and HTTP/2, served by the
// request's own goroutine.
var transports = []struct {
	name  string
	http2 bool
}{{"hub over HTTP/1.1", false}, {"request goroutine over HTTP/2", true}}

func TestStream(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s, eng := newOpenStream(event(3, "tool_call_request", "c1"))
			ts := newTestServer(t, eng, nil, tr.http2)
			resp := ts.do(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/events", headers: asSession(sid1)})
			if resp.StatusCode != 200 || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[tr.http2] {
				t.Fatalf("status %d over %s", resp.StatusCode, resp.Proto)
			}
			for name, want := range map[string]string{
				"Content-Type":      "text/event-stream; charset=utf-8",
				"Cache-Control":     "no-cache, no-transform",
				"X-Accel-Buffering": "no",
			} {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("header %s is %q, want %q", name, got, want)
				}
			}
			if !tr.http2 && (!resp.Close || !reflect.DeepEqual(resp.TransferEncoding, []string{"chunked"})) {
				// A taken-over connection is not reused after the stream.
				t.Errorf("a stream's connection is kept (close %v), transfer encoding %v", resp.Close, resp.TransferEncoding)
			}
			body := bufio.NewReader(resp.Body)
			expect(t, body, ready(15000)+frame(3, "tool_call_request", "c1"))

			s.log.add(event(4, "tool_call_request", "c2"))
			s.wake()
			expect(t, body, frame(4, "tool_call_request", "c2"))

			// The session closes: what is left goes out, then the end.
			s.log.add(event(5, "call_cancelled", "c2"))
			s.listener.end()
			s.wake()
			expect(t, body, frame(5, "call_cancelled", "c2"))
			if rest, err := io.ReadAll(body); err != nil || len(rest) > 0 {
				t.Fatalf("after the end the stream sent %q (%v)", rest, err)
			}

			if got := s.deliveredSeqs(); !reflect.DeepEqual(got, []int64{3, 4, 5}) {
				t.Errorf("recorded %v as delivered, want [3 4 5]", got)
			}
			s.mu.Lock()
			viaHub, streaming := s.notify != nil, s.streaming
			s.mu.Unlock()
			if viaHub == tr.http2 || (tr.http2 && (streaming == nil || !*streaming)) {
				t.Errorf("listened through the hub %v, with Listen(streaming) %v", viaHub, streaming)
			}
			waitClosed(t, s.listener)
		})
	}
}

// waitClosed waits for the handlers to close the stream's listener.
func waitClosed(t *testing.T, l *fakeListener) {
	t.Helper()
	select {
	case <-l.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream's listener was never closed")
	}
}

// TestStreamResumes checks a stream opened with a cursor: the open calls
// sent before it again, then the events after it.
func TestStreamResumes(t *testing.T) {
	for _, tr := range transports {
		for _, resume := range []struct {
			name    string
			path    string
			headers map[string]string
		}{
			{"Last-Event-ID", "", map[string]string{"Last-Event-ID": "5"}},
			{"last_event_id in the query", "?last_event_id=5", nil},
			{"the header over the query", "?last_event_id=1", map[string]string{"Last-Event-ID": "5"}},
		} {
			t.Run(tr.name+"/"+resume.name, func(t *testing.T) {
				t.Parallel()
				// c1 (3) was sent before the cursor, c4 (7) after it, both open.
				s, eng := newOpenStream(event(3, "tool_call_request", "c1"), event(7, "tool_call_request", "c4"))
				s.log.add(event(6, "call_cancelled", "c2"))
				ts := newTestServer(t, eng, func(o *handlers.Options) { o.Heartbeat = time.Hour }, tr.http2)
				resp := ts.do(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/events" + resume.path, headers: with(asSession(sid1), resume.headers)})
				expect(t, resp.Body, ready(3600000)+frame(3, "tool_call_request", "c1")+
					frame(6, "call_cancelled", "c2")+frame(7, "tool_call_request", "c4"))
				if cursor := s.checked.only(t); cursor != 5 {
					t.Errorf("checked the cursor %d, want 5", cursor)
				}
				resp.Body.Close() // the client goes away
				waitClosed(t, s.listener)
			})
		}
	}
}

// TestStreamPings checks the pings a quiet stream sends each heartbeat.
func TestStreamPings(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			_, eng := newOpenStream()
			ts := newTestServer(t, eng, func(o *handlers.Options) { o.Heartbeat = 20 * time.Millisecond }, tr.http2)
			resp := ts.do(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/events", headers: asSession(sid1)})
			body := bufio.NewReader(resp.Body)
			expect(t, body, ready(20))
			for range 2 {
				expect(t, body, `event: ping`+"\n"+`data: {"type":"ping","time":"`)
				rest, err := body.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				stamp, ok := strings.CutSuffix(rest, "\"}\n")
				if _, perr := time.Parse(toolgate.TimeLayout, stamp); !ok || perr != nil {
					t.Fatalf("a ping ends %q", rest)
				}
				expect(t, body, "\n")
			}
		})
	}
}

// TestStreamCORS checks that a stream taken over from net/http still
// carries the CORS headers set before it was.
func TestStreamCORS(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			_, eng := newOpenStream()
			ts := newTestServer(t, eng, func(o *handlers.Options) { o.AllowedOrigins = []string{"https://app.example"} }, tr.http2)
			resp := ts.do(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/events",
				headers: with(asSession(sid1), map[string]string{"Origin": "https://app.example"})})
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
				t.Errorf("Access-Control-Allow-Origin is %q", got)
			}
			expect(t, resp.Body, ready(15000))
		})
	}
}

func TestStreamRefused(t *testing.T) {
	failing := func(tweak func(d *fakeDelivery)) fakeEngine {
		_, eng := newOpenStream()
		tweak(eng.Delivery.(*fakeDelivery))
		return eng
	}
	events := func(headers map[string]string) request {
		return request{method: "GET", path: "/v1/sessions/" + sid1 + "/events", headers: with(asSession(sid1), headers)}
	}
	runScenarios(t, []scenario{
		{name: "a Last-Event-ID that is not a number", engine: failing(func(*fakeDelivery) {}),
			request: events(map[string]string{"Last-Event-ID": "abc"}),
			status:  400, body: errorBody(toolgate.EBadRequest, `Last-Event-ID must be an event id from this session's stream, not "abc"`)},
		{name: "a query last_event_id that is not a number", engine: failing(func(*fakeDelivery) {}),
			request: request{method: "GET", path: "/v1/sessions/" + sid1 + "/events?last_event_id=x&access_token=token-" + sid1},
			status:  400, body: errorBody(toolgate.EBadRequest, `Last-Event-ID must be an event id from this session's stream, not "x"`)},
		{name: "a cursor the log cannot resume from",
			engine: failing(func(d *fakeDelivery) {
				d.checkCursor = func(_ string, c int64) error {
					return toolgate.Errorf(toolgate.EBadRequest, "cursor %d is past the log", c)
				}
			}),
			request: events(map[string]string{"Last-Event-ID": "99"}),
			status:  400, body: errorBody(toolgate.EBadRequest, "cursor 99 is past the log")},
		{name: "a session that cannot be listened to",
			engine: failing(func(d *fakeDelivery) {
				d.listenFunc = func(sid string, _ bool, _ func()) (toolgate.Listener, error) {
					return nil, toolgate.Errorf(toolgate.ENotFound, "session %s is closed", sid)
				}
			}),
			request: events(nil),
			status:  404, body: errorBody(toolgate.ENotFound, "session "+sid1+" is closed")},
		{name: "the open calls cannot be read",
			engine: failing(func(d *fakeDelivery) {
				d.openEvents = func(string) ([]toolgate.Event, int64, error) { return nil, 0, errors.New("store closed") }
			}),
			request: events(nil),
			status:  500, body: errorBody(toolgate.EInternal, "Internal error.")},
	})
}

// TestStreamReplaced: a stream a newer one of its session replaced sends
// stream_replaced, nothing more of the log, and ends cleanly.
func TestStreamReplaced(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s, eng := newOpenStream(event(3, "tool_call_request", "c1"))
			ts := newTestServer(t, eng, nil, tr.http2)
			resp := ts.do(t, request{method: "GET", path: "/v1/sessions/" + sid1 + "/events", headers: asSession(sid1)})
			body := bufio.NewReader(resp.Body)
			expect(t, body, ready(15000)+frame(3, "tool_call_request", "c1"))
			s.log.add(event(4, "tool_call_request", "c2")) // the newer stream carries it
			s.listener.replace()
			s.wake()
			expect(t, body, "event: stream_replaced\ndata: {\"type\":\"stream_replaced\",\"session_id\":\""+sid1+"\"}\n\n")
			if rest, err := io.ReadAll(body); err != nil || len(rest) > 0 {
				t.Fatalf("after stream_replaced the stream sent %q (%v)", rest, err)
			}
			if got := s.deliveredSeqs(); !reflect.DeepEqual(got, []int64{3}) {
				t.Errorf("recorded %v as delivered, want [3]", got)
			}
			waitClosed(t, s.listener)
		})
	}
}
