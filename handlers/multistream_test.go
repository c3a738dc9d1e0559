package handlers_test

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/handlers"
	"github.com/toolgate/toolgate/internal/testwait"
)

// multiSessions is the engine side of multi-session streams and polls:
// each session's log and listener, and the notify each listens with.
type multiSessions struct {
	mu        sync.Mutex
	logs      map[string]*eventLog
	listeners map[string]*fakeListener
	notify    map[string]func()
	streaming map[string]bool
	delivered map[string][]int64
}

func newMultiSessions(sids ...string) (*multiSessions, fakeEngine) {
	m := &multiSessions{logs: map[string]*eventLog{}, listeners: map[string]*fakeListener{},
		notify: map[string]func(){}, streaming: map[string]bool{}, delivered: map[string][]int64{}}
	for _, sid := range sids {
		m.logs[sid] = &eventLog{}
	}
	return m, fakeEngine{Delivery: &fakeDelivery{
		listenFunc: func(sid string, streaming bool, notify func()) (toolgate.Listener, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.logs[sid] == nil {
				return nil, toolgate.Errorf(toolgate.EUnauthenticated, "session %s is not open", sid)
			}
			l := newFakeListener()
			m.listeners[sid], m.notify[sid], m.streaming[sid] = l, notify, streaming
			return l, nil
		},
		openEvents: func(sid string) ([]toolgate.Event, int64, error) {
			events, last, _ := m.log(sid).after(sid, 0)
			return events, last, nil
		},
		eventsAfter: func(sid string, cursor int64) ([]toolgate.Event, int64, error) { return m.log(sid).after(sid, cursor) },
		checkCursor: func(_ string, cursor int64) error {
			if cursor > 100 {
				return toolgate.Errorf(toolgate.EBadRequest, "cursor %d is beyond this session's newest event", cursor)
			}
			return nil
		},
		delivered: func(sid string, events []toolgate.Event) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.delivered[sid] = append(m.delivered[sid], seqs(events)...)
		},
	}}
}

func (m *multiSessions) log(sid string) *eventLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[sid]
}

// append adds an event to sid's log and wakes its listener, as a commit does.
func (m *multiSessions) append(sid string, ev toolgate.Event) {
	m.log(sid).add(ev)
	m.mu.Lock()
	notify := m.notify[sid]
	m.mu.Unlock()
	notify()
}

// end closes session sid for reason, as the engine does.
func (m *multiSessions) end(sid, reason string) {
	m.mu.Lock()
	l, notify := m.listeners[sid], m.notify[sid]
	m.mu.Unlock()
	l.endWith(reason)
	notify()
}

// sessionFrame is an event of session sid as a multi-session stream writes it.
func sessionFrame(sid string, seq int64, typ, callID string) string {
	return fmt.Sprintf("id: %s:%d\nevent: %s\ndata: {\"session_id\":\"%s\",\"seq\":%d,\"type\":\"%s\",\"id\":\"%s\"}\n\n", sid, seq, typ, sid, seq, typ, callID)
}

func note(typ, sid, reason string) string {
	data := fmt.Sprintf(`{"type":"%s","session_id":"%s"`, typ, sid)
	if reason != "" {
		data += fmt.Sprintf(`,"reason":"%s"`, reason)
	}
	return "event: " + typ + "\ndata: " + data + "}\n\n"
}

var streamIDPattern = regexp.MustCompile(`"stream_id":"(st_[A-Za-z0-9_-]{22})"`)

// TestMultiStream drives one multi-session stream over both transports:
// the ready event with a refusal, the sessions' first events, events of
// two sessions interleaved, a join, a leave, a session closing, and the
// stream going on after each.
func TestMultiStream(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			m, eng := newMultiSessions("s1", "s2", "s3")
			m.logs["s1"].add(event(3, "tool_call_request", "c1"))
			ts := newTestServer(t, eng, nil, tr.http2)
			resp := ts.do(t, request{method: "POST", path: "/v1/streams",
				body: `{"sessions":[{"session_id":"s1","token":"token-s1"},{"session_id":"s2","token":"wrong"},{"session_id":"s3","token":"token-s3","cursor":0}]}`})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" ||
				resp.Header.Get("Cache-Control") != "no-cache, no-transform" || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
			}
			if !tr.http2 && !resp.Close {
				t.Error("an HTTP/1.1 multi-session stream's connection is kept")
			}
			body := bufio.NewReader(resp.Body)
			expect(t, body, "retry: 2000\n\nevent: ready\ndata: {\"type\":\"ready\",\"stream_id\":\"")
			rest, _ := body.ReadString('\n')
			id := streamIDPattern.FindStringSubmatch(`"stream_id":"` + rest)
			if id == nil || !strings.HasSuffix(rest, `","heartbeat_ms":15000,"sessions":["s1","s3"],"refused":[{"session_id":"s2","code":"UNAUTHENTICATED","message":"invalid session token"}]}`+"\n") {
				t.Fatalf("ready ends %q", rest)
			}
			expect(t, body, "\n"+sessionFrame("s1", 3, "tool_call_request", "c1"))

			m.append("s3", event(4, "tool_call_request", "c2"))
			expect(t, body, sessionFrame("s3", 4, "tool_call_request", "c2"))
			m.append("s1", event(5, "call_cancelled", "c1"))
			expect(t, body, sessionFrame("s1", 5, "call_cancelled", "c1"))

			// s2 joins with its token: session_joined, then its open calls.
			m.logs["s2"].add(event(6, "tool_call_request", "c3"))
			status, _, reply := ts.call(t, request{method: "POST", path: "/v1/streams/" + id[1] + "/sessions",
				body: `{"session_id":"s2","token":"token-s2"}`})
			if status != 200 || reply != `{"joined":true,"session_id":"s2","stream_id":"`+id[1]+`"}`+"\n" {
				t.Fatalf("join: %d %s", status, reply)
			}
			expect(t, body, note("session_joined", "s2", "")+sessionFrame("s2", 6, "tool_call_request", "c3"))

			// s1 leaves: session_left, and nothing more of it.
			status, _, reply = ts.call(t, request{method: "DELETE", path: "/v1/streams/" + id[1] + "/sessions/s1", headers: asSession("s1")})
			if status != 204 {
				t.Fatalf("leave: %d %s", status, reply)
			}
			expect(t, body, note("session_left", "s1", "left"))
			waitClosed(t, m.listeners["s1"])
			m.log("s1").add(event(7, "tool_call_request", "c4"))

			// s3 closes: its last events, then session_left; s2 goes on.
			m.log("s3").add(event(8, "call_cancelled", "c2"))
			m.end("s3", "expired")
			expect(t, body, sessionFrame("s3", 8, "call_cancelled", "c2")+note("session_left", "s3", "expired"))
			m.append("s2", event(9, "call_cancelled", "c3"))
			expect(t, body, sessionFrame("s2", 9, "call_cancelled", "c3"))

			m.mu.Lock()
			delivered, streaming := fmt.Sprint(m.delivered), m.streaming["s2"]
			m.mu.Unlock()
			if delivered != "map[s1:[3 5] s2:[6 9] s3:[4 8]]" || !streaming {
				t.Errorf("recorded as delivered %s; listened as a stream %v", delivered, streaming)
			}
			// The client goes away: every listener is closed.
			resp.Body.Close()
			waitClosed(t, m.listeners["s2"])
		})
	}
}

// TestMultiStreamShutdown: a session's listener ending without a close
// (the gateway stopping) ends the whole stream cleanly.
func TestMultiStreamShutdown(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			m, eng := newMultiSessions("s1")
			ts := newTestServer(t, eng, nil, tr.http2)
			resp := ts.do(t, request{method: "POST", path: "/v1/streams", body: `{"sessions":[{"session_id":"s1","token":"token-s1"}]}`})
			body := bufio.NewReader(resp.Body)
			if _, err := body.ReadString('}'); err != nil {
				t.Fatal(err)
			}
			m.end("s1", "")
			if rest, err := io.ReadAll(body); err != nil {
				t.Fatalf("the stream did not end cleanly: %q %v", rest, err)
			}
		})
	}
}

func TestMultiRefused(t *testing.T) {
	engine := func() fakeEngine { _, eng := newMultiSessions("s1", "s2", "s3"); return eng }
	three := `{"sessions":[{"session_id":"s1","token":"token-s1"},{"session_id":"s2","token":"token-s2"},{"session_id":"s3","token":"token-s3"}]}`
	two := func(o *handlers.Options) { o.MaxStreamSessions = 2 }
	runScenarios(t, []scenario{
		{name: "a stream body that is not JSON", engine: engine(),
			request: request{method: "POST", path: "/v1/streams", body: `{"sessions":`},
			status:  400, body: errorBody(toolgate.EBadRequest, "the body is not valid JSON: it ends too early")},
		{name: "a stream of too many sessions", engine: engine(), tune: two,
			request: request{method: "POST", path: "/v1/streams", body: three},
			status:  400, body: `{"error":{"code":"BAD_REQUEST","details":{"limit":2},"message":"at most 2 sessions may share one stream or poll, not 3"}}` + "\n"},
		{name: "a poll of too many sessions", engine: engine(), tune: two,
			request: request{method: "POST", path: "/v1/poll", body: three},
			status:  400, body: `{"error":{"code":"BAD_REQUEST","details":{"limit":2},"message":"at most 2 sessions may share one stream or poll, not 3"}}` + "\n"},
		{name: "a poll without a body", engine: engine(),
			request: request{method: "POST", path: "/v1/poll"},
			status:  400, body: errorBody(toolgate.EBadRequest, "a JSON body is required")},
		{name: "a poll with a negative wait", engine: engine(),
			request: request{method: "POST", path: "/v1/poll", body: `{"sessions":[{"session_id":"s1","token":"token-s1"}],"wait_ms":-1}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "wait_ms must not be negative")},
		{name: "a join of an unknown stream", engine: engine(),
			request: request{method: "POST", path: "/v1/streams/st_x/sessions", body: `{"session_id":"s1","token":"token-s1"}`},
			status:  404, body: errorBody(toolgate.ENotFound, "no open stream st_x; open a new one")},
		{name: "a leave of an unknown stream", engine: engine(),
			request: request{method: "DELETE", path: "/v1/streams/st_x/sessions/s1", headers: asSession("s1")},
			status:  404, body: errorBody(toolgate.ENotFound, "no open stream st_x")},
		{name: "a leave without the session's token", engine: engine(),
			request: request{method: "DELETE", path: "/v1/streams/st_x/sessions/s1", headers: asSession("s2")},
			status:  401, body: errorBody(toolgate.EUnauthenticated, "invalid session token")},
		// A request naming no session would hold a connection without any
		// credential.
		{name: "a stream of no session", engine: engine(),
			request: request{method: "POST", path: "/v1/streams", body: `{"sessions":[]}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "sessions must list at least one session, each with its session_id and token")},
		{name: "a stream without a body", engine: engine(),
			request: request{method: "POST", path: "/v1/streams"},
			status:  400, body: errorBody(toolgate.EBadRequest, "a JSON body is required")},
		{name: "a poll of no session", engine: engine(),
			request: request{method: "POST", path: "/v1/poll", body: `{"sessions":[],"wait_ms":0}`},
			status:  400, body: errorBody(toolgate.EBadRequest, "sessions must list at least one session, each with its session_id and token")},
		// Held, it would outlast the client's 5 s.
		{name: "a poll whose every session is refused answers at once", engine: engine(),
			request: request{method: "POST", path: "/v1/poll", body: `{"sessions":[{"session_id":"s1","token":"wrong"}],"wait_ms":60000}`},
			status:  200, body: `{"sessions":[],"refused":[{"session_id":"s1","code":"UNAUTHENTICATED","message":"invalid session token"}],"poll_wait_ms":0}` + "\n",
			header: map[string]string{"Cache-Control": "no-store", "Content-Type": "application/json; charset=utf-8"}},
	})
}

// TestMultiStreamJoinRefused: a join past the limit is 409, a bad token
// 401, a bad cursor 400, and the stream goes on.
func TestMultiStreamJoinRefused(t *testing.T) {
	m, eng := newMultiSessions("s1", "s2", "s3")
	ts := newTestServer(t, eng, func(o *handlers.Options) { o.MaxStreamSessions = 2 }, false)
	resp := ts.do(t, request{method: "POST", path: "/v1/streams", body: `{"sessions":[{"session_id":"s1","token":"token-s1"}]}`})
	body := bufio.NewReader(resp.Body)
	line, _ := body.ReadString('}')
	id := streamIDPattern.FindStringSubmatch(line)
	if id == nil {
		t.Fatalf("no stream id in %q", line)
	}
	body.ReadString('\n')
	body.ReadString('\n')
	join := func(entry string) (int, string) {
		status, _, reply := ts.call(t, request{method: "POST", path: "/v1/streams/" + id[1] + "/sessions", body: entry})
		return status, reply
	}
	for _, c := range []struct {
		entry  string
		status int
	}{
		{`{"session_id":"s2","token":"wrong"}`, 401},
		{`{"session_id":"s2","token":"token-s2","cursor":500}`, 400},
		{`{"session_id":"s2","token":"token-s2"}`, 200},
		{`{"session_id":"s2","token":"token-s2"}`, 200},
		{`{"session_id":"s3","token":"token-s3"}`, 409},
	} {
		if status, reply := join(c.entry); status != c.status {
			t.Errorf("join %s: %d %s, want %d", c.entry, status, reply, c.status)
		}
	}
	expect(t, body, note("session_joined", "s2", ""))
	m.append("s1", event(3, "tool_call_request", "c1"))
	expect(t, body, sessionFrame("s1", 3, "tool_call_request", "c1"))
}

// TestMultiPoll: per session the single poll's rule, refusals reported,
// a hold that answers when one session has events, and "ended".
func TestMultiPoll(t *testing.T) {
	m, eng := newMultiSessions("s1", "s2")
	m.logs["s1"].add(event(3, "tool_call_request", "c1"))
	ts := newTestServer(t, eng, nil, false)
	status, _, body := ts.call(t, request{method: "POST", path: "/v1/poll",
		body: `{"sessions":[{"session_id":"s1","token":"token-s1"},{"session_id":"s9","token":"token-s1"},{"session_id":"s2","token":"token-s2","cursor":0}],"wait_ms":0}`})
	want := `{"sessions":[{"session_id":"s1","events":[{"seq":3,"type":"tool_call_request","id":"c1"}],"cursor":3},{"session_id":"s2","events":[],"cursor":0}],` +
		`"refused":[{"session_id":"s9","code":"UNAUTHENTICATED","message":"invalid session token"}],"poll_wait_ms":0}` + "\n"
	if status != 200 || body != want {
		t.Fatalf("poll: %d\n%s\nwant\n%s", status, body, want)
	}

	// Held: s2 gets an event while held; s1's cursor is past its events.
	done := make(chan string, 1)
	before := m.listener("s2")
	go func() {
		_, _, body := ts.call(t, request{method: "POST", path: "/v1/poll",
			body: `{"sessions":[{"session_id":"s1","token":"token-s1","cursor":3},{"session_id":"s2","token":"token-s2","cursor":0}],"wait_ms":4000}`})
		done <- body
	}()
	waitListening(t, m, "s2", before)
	m.append("s2", event(4, "tool_call_request", "c2"))
	want = `{"sessions":[{"session_id":"s1","events":[],"cursor":3},{"session_id":"s2","events":[{"seq":4,"type":"tool_call_request","id":"c2"}],"cursor":4}],"refused":[],"poll_wait_ms":0}` + "\n"
	if got := <-done; got != want {
		t.Fatalf("held poll:\n%s\nwant\n%s", got, want)
	}

	// Held: s1 closes during the hold.
	before = m.listener("s1")
	go func() {
		_, _, body := ts.call(t, request{method: "POST", path: "/v1/poll",
			body: `{"sessions":[{"session_id":"s1","token":"token-s1","cursor":3}],"wait_ms":4000}`})
		done <- body
	}()
	waitListening(t, m, "s1", before)
	m.log("s1").add(event(5, "call_cancelled", "c1"))
	m.end("s1", "closed")
	want = `{"sessions":[{"session_id":"s1","events":[{"seq":5,"type":"call_cancelled","id":"c1"}],"cursor":5,"ended":true}],"refused":[],"poll_wait_ms":0}` + "\n"
	if got := <-done; got != want {
		t.Fatalf("held poll of a closing session:\n%s\nwant\n%s", got, want)
	}
}

// replace ends sid's listener as the engine does when a newer stream or
// poll of the session takes its place.
func (m *multiSessions) replace(sid string) {
	m.mu.Lock()
	l, notify := m.listeners[sid], m.notify[sid]
	m.mu.Unlock()
	l.replaced.Store(true)
	notify()
}

// TestMultiReplaced: a session of a multi-session poll or stream that a
// newer stream or poll of it replaced leaves with the reason — the poll
// answers at once, its events ending with stream_replaced and without
// "ended"; the stream sends session_left (reason replaced) and goes on for
// the others.
func TestMultiReplaced(t *testing.T) {
	m, eng := newMultiSessions("s1", "s2")
	ts := newTestServer(t, eng, func(o *handlers.Options) { o.Heartbeat = time.Hour }, false)
	done := make(chan string, 1)
	before := m.listener("s1")
	go func() {
		_, _, body := ts.call(t, request{method: "POST", path: "/v1/poll",
			body: `{"sessions":[{"session_id":"s1","token":"token-s1","cursor":0},{"session_id":"s2","token":"token-s2","cursor":0}],"wait_ms":4000}`})
		done <- body
	}()
	waitListening(t, m, "s1", before)
	m.log("s1").add(event(1, "tool_call_request", "c1"))
	m.replace("s1")
	want := `{"sessions":[{"session_id":"s1","events":[{"type":"stream_replaced","session_id":"s1"}],"cursor":0},{"session_id":"s2","events":[],"cursor":0}],"refused":[],"poll_wait_ms":0}` + "\n"
	if got := <-done; got != want {
		t.Fatalf("poll with a session replaced:\n%s\nwant\n%s", got, want)
	}

	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			m, eng := newMultiSessions("s1", "s2")
			ts := newTestServer(t, eng, func(o *handlers.Options) { o.Heartbeat = time.Hour }, tr.http2)
			resp := ts.do(t, request{method: "POST", path: "/v1/streams",
				body: `{"sessions":[{"session_id":"s1","token":"token-s1"},{"session_id":"s2","token":"token-s2"}]}`})
			body := bufio.NewReader(resp.Body)
			if _, err := body.ReadString('}'); err != nil { // the retry hint and ready
				t.Fatal(err)
			}
			expect(t, body, "\n\n")
			m.replace("s1")
			expect(t, body, note("session_left", "s1", "replaced"))
			m.append("s2", event(2, "tool_call_request", "c2"))
			expect(t, body, sessionFrame("s2", 2, "tool_call_request", "c2"))
		})
	}
}

// listener returns the listener of sid's newest Listen (nil before any).
func (m *multiSessions) listener(sid string) *fakeListener {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listeners[sid]
}

// waitListening waits until a poll listens to sid with a listener other
// than before (read before the poll was sent: a poll that listened at
// once must not be mistaken for the earlier one), and checks it listens
// as a poll.
func waitListening(t *testing.T, m *multiSessions, sid string, before *fakeListener) {
	t.Helper()
	var streaming bool
	testwait.Until(t, 5*time.Second, "a poll listening to "+sid, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		l := m.listeners[sid]
		streaming = m.streaming[sid]
		return l != nil && l != before
	})
	if streaming {
		t.Fatal("a poll listened as a stream")
	}
}

// TestMultiPollShutdown: a session whose listener ends without a close
// (the gateway stopping) ends the held poll with its events and cursor,
// but not "ended": the session is still open, and its client polls again.
func TestMultiPollShutdown(t *testing.T) {
	m, eng := newMultiSessions("s1")
	ts := newTestServer(t, eng, nil, false)
	done := make(chan string, 1)
	before := m.listener("s1")
	go func() {
		_, _, body := ts.call(t, request{method: "POST", path: "/v1/poll",
			body: `{"sessions":[{"session_id":"s1","token":"token-s1","cursor":0}],"wait_ms":4000}`})
		done <- body
	}()
	waitListening(t, m, "s1", before)
	m.log("s1").add(event(1, "tool_call_request", "c1"))
	m.end("s1", "")
	want := `{"sessions":[{"session_id":"s1","events":[{"seq":1,"type":"tool_call_request","id":"c1"}],"cursor":1}],"refused":[],"poll_wait_ms":0}` + "\n"
	if got := <-done; got != want {
		t.Fatalf("poll held at shutdown:\n%s\nwant\n%s", got, want)
	}
}
