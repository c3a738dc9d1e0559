package server_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// The cap on the streams and held polls of one session
// (--max-streams-per-session, default 8) against a real gateway: a newer
// one replaces the oldest, which is told why and ends.

// openListeners is how many streams and polls the engine holds for s.
func (g *gateway) openListeners(s session) int {
	g.t.Helper()
	return server.OpenListenersForTest(g.t, g.Server, s.ID)
}

// Before the cap, every stream of a session stayed open: 20,000 of them
// took every file descriptor of the gateway.
func TestHundredStreamsOfOneSessionHoldEight(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("phone")
	streams := make([]*stream, 100)
	for i := range streams {
		streams[i] = g.openStream(s, "")
		streams[i].nextOfType("ready")
	}
	if n := g.openListeners(s); n != 8 {
		t.Fatalf("the engine holds %d streams of the session, want 8", n)
	}
	// The replaced ones were told why and their connections closed (so
	// their file descriptors are free); the newest 8 go on.
	for i, st := range streams[:92] {
		if ev := st.next(); ev.Event != "stream_replaced" || ev.Data["session_id"] != s.ID {
			t.Fatalf("stream %d: got %+v, want stream_replaced", i, ev)
		}
		if !st.ended() {
			t.Fatalf("stream %d was replaced but not ended", i)
		}
	}
	g.register(s, echoTool)
	call := g.startCall(s, "echo", map[string]any{"text": "hi"}, 5000)
	for i, st := range streams[92:] {
		if ev := st.nextOfType("tool_call_request"); ev.Data["id"] != call.ID {
			t.Fatalf("stream %d: got %+v, want the call", 92+i, ev)
		}
	}
}

func TestNinthStreamReplacesTheFirst(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("page")
	g.register(s, echoTool)
	var streams []*stream
	for range 9 {
		st := g.openStream(s, "")
		st.nextOfType("ready")
		streams = append(streams, st)
	}
	first := streams[0]
	if ev := first.next(); ev.Event != "stream_replaced" || ev.ID != "" || ev.Data["type"] != "stream_replaced" {
		t.Fatalf("the first stream got %+v, want stream_replaced without an id", ev)
	}
	if !first.ended() {
		t.Fatal("the replaced stream did not end")
	}
	if n := g.openListeners(s); n != 8 {
		t.Fatalf("%d streams open, want 8", n)
	}
	call := g.startCall(s, "echo", map[string]any{"text": "hi"}, 5000)
	for i, st := range streams[1:] {
		if ev := st.nextOfType("tool_call_request"); ev.Data["id"] != call.ID {
			t.Fatalf("stream %d: got %+v", i+1, ev)
		}
	}
}

// A config of 2 keeps 2; a held poll is the oldest, and returns at once,
// its events ending with stream_replaced.
func TestHeldPollReplacedReturnsAtOnce(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxStreamsPerSession = 2 })
	s := g.newSession("poller")
	type reply struct {
		status int
		body   []byte
		took   time.Duration
	}
	polled := make(chan reply, 1)
	go func() {
		start := time.Now()
		status, body := g.do("GET", "/v1/sessions/"+s.ID+"/poll?cursor=0&wait_ms=30000", s.Token, nil)
		polled <- reply{status, body, time.Since(start)}
	}()
	testwait.Until(t, 5*time.Second, "the poll to be held", func() bool { return g.openListeners(s) == 1 })
	for range 2 {
		g.openStream(s, "").nextOfType("ready")
	}
	var r reply
	select {
	case r = <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("the replaced poll was not answered")
	}
	var body struct {
		Events []map[string]any `json:"events"`
		Cursor *int64           `json:"cursor"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || r.status != 200 {
		t.Fatalf("poll: %d %s", r.status, r.body)
	}
	last := body.Events[len(body.Events)-1]
	if last["type"] != "stream_replaced" || last["session_id"] != s.ID || last["seq"] != nil || body.Cursor == nil {
		t.Fatalf("the replaced poll answered %s", r.body)
	}
	if n := g.openListeners(s); n != 2 {
		t.Fatalf("%d open, want 2", n)
	}
}

// On a multi-session stream only the replaced session leaves, with the
// reason; the stream goes on for the other.
func TestMultiStreamSessionReplaced(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxStreamsPerSession = 3 })
	a, b := g.twoSessions()
	multi, _ := g.openMulti(entry(a, -1), entry(b, -1))
	for range 3 {
		g.openStream(a, "").nextOfType("ready")
	}
	left := multi.nextOfType("session_left")
	if left.Data["session_id"] != a.ID || left.Data["reason"] != "replaced" {
		t.Fatalf("got %s, want session_left of A, reason replaced", left.Raw)
	}
	call := g.startCall(b, "echo", map[string]any{"text": "hi"}, 5000)
	if id := callOf(t, multi.nextOfType("tool_call_request"), b); id != call.ID {
		t.Fatalf("the stream carried %s, want B's call %s", id, call.ID)
	}
	if n := g.openListeners(a); n != 3 {
		t.Fatalf("A holds %d, want 3", n)
	}
	if n := g.openListeners(b); n != 1 {
		t.Fatalf("B holds %d, want 1", n)
	}
}

// A multi-session poll answers at once when one of its sessions is
// replaced: that session's events end with stream_replaced, and it has not
// ended.
func TestMultiPollSessionReplaced(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxStreamsPerSession = 1 })
	a, b := g.twoSessions()
	done := make(chan pollReply, 1)
	go func() { done <- g.multiPoll(30000, entry(a, 0), entry(b, 0)) }()
	testwait.Until(t, 5*time.Second, "the poll to be held", func() bool { return g.openListeners(a) == 1 })
	g.openStream(a, "").nextOfType("ready")
	var reply pollReply
	select {
	case reply = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the poll was not answered")
	}
	ra, rb := reply.Sessions[0], reply.Sessions[1]
	if ra.SessionID != a.ID || ra.Ended || len(ra.Events) != 1 || ra.Events[0].Type != "stream_replaced" {
		t.Fatalf("A in the reply: %+v", ra)
	}
	if rb.SessionID != b.ID || rb.Ended || len(rb.Events) != 0 {
		t.Fatalf("B in the reply: %+v", rb)
	}
}
