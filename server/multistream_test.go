package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gatewaytest"
	"github.com/toolgate/toolgate/internal/testwait"
	"github.com/toolgate/toolgate/server"
)

// The multi-session stream and poll (POST /v1/streams, POST /v1/poll)
// against a real gateway: cursors per session, joins and leaves, refusals
// that disturb nobody, a session closing on a stream, the limits, and a
// resume after kill -9.

// entry is one session of a multi-session request; cursor < 0 is none.
func entry(s session, cursor int64) map[string]any {
	e := map[string]any{"session_id": s.ID, "token": s.Token}
	if cursor >= 0 {
		e["cursor"] = cursor
	}
	return e
}

// openMulti opens POST /v1/streams with the entries and returns the stream
// and its ready event.
func (g *gateway) openMulti(entries ...map[string]any) (*stream, sseEvent) {
	g.t.Helper()
	body, _ := json.Marshal(map[string]any{"sessions": entries})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", g.URL+"/v1/streams", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	st := g.readStream(req, cancel)
	ready := st.next()
	if ready.Event != "ready" {
		g.t.Fatalf("a multi-session stream opened with %+v", ready)
	}
	return st, ready
}

// twoSessions creates sessions a and b, each with the echo tool.
func (g *gateway) twoSessions() (a, b session) {
	g.t.Helper()
	a, b = g.newSession("a"), g.newSession("b")
	g.register(a, echoTool)
	g.register(b, echoTool)
	return a, b
}

// seqOf is the cursor in a multi-session event's id "<sid>:<seq>",
// checking that the id names sid.
func seqOf(t testing.TB, ev sseEvent, sid string) int64 {
	t.Helper()
	prefix, seq, ok := strings.Cut(ev.ID, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || prefix != sid || ev.Data["session_id"] != sid || ev.Data["seq"] != float64(n) {
		t.Fatalf("event %+v is not session %s's", ev, sid)
	}
	return n
}

// callOf is the call id of a tool_call_request for session s.
func callOf(t testing.TB, ev sseEvent, s session) string {
	t.Helper()
	seqOf(t, ev, s.ID)
	if ev.Event != "tool_call_request" {
		t.Fatalf("got %+v, want a tool_call_request of %s", ev, s.ID)
	}
	return ev.Data["id"].(string)
}

// pollReply is the reply of POST /v1/poll.
type pollReply struct {
	Sessions []struct {
		SessionID string `json:"session_id"`
		Events    []struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"events"`
		Cursor int64 `json:"cursor"`
		Ended  bool  `json:"ended"`
	} `json:"sessions"`
	Refused []struct {
		SessionID string `json:"session_id"`
		Code      string `json:"code"`
	} `json:"refused"`
}

func (g *gateway) multiPoll(waitMS int, entries ...map[string]any) pollReply {
	g.t.Helper()
	var reply pollReply
	g.call("POST", "/v1/poll", "", map[string]any{"sessions": entries, "wait_ms": waitMS}, 200, &reply)
	return reply
}

func TestMultiStreamCursorsPerSession(t *testing.T) {
	g := startGateway(t, nil)
	a, b := g.twoSessions()
	st, ready := g.openMulti(entry(a, -1), entry(b, -1))
	if got := ready.Data["sessions"]; len(got.([]any)) != 2 || !strings.HasPrefix(ready.Data["stream_id"].(string), "st_") {
		t.Fatalf("ready %s", ready.Raw)
	}
	// Events of the two sessions interleaved on one stream.
	a1 := g.startCall(a, "echo", map[string]any{"text": "a1"}, 60_000)
	if id := callOf(t, st.next(), a); id != a1.ID {
		t.Fatalf("first event is call %s, want %s", id, a1.ID)
	}
	b1 := g.startCall(b, "echo", map[string]any{"text": "b1"}, 60_000)
	ev := st.next()
	bCursor := seqOf(t, ev, b.ID)
	if callOf(t, ev, b) != b1.ID {
		t.Fatalf("second event %s", ev.Raw)
	}
	a2 := g.startCall(a, "echo", map[string]any{"text": "a2"}, 60_000)
	ev = st.next()
	aCursor := seqOf(t, ev, a.ID)
	if callOf(t, ev, a) != a2.ID {
		t.Fatalf("third event %s", ev.Raw)
	}
	for _, c := range []struct {
		s  session
		id string
	}{{a, a1.ID}, {b, b1.ID}, {a, a2.ID}} {
		if status, _ := g.answer(c.s, c.id, "ok"); status != 200 {
			t.Fatalf("answer %s: %d", c.id, status)
		}
	}
	st.Close()

	// While no stream is open, one more call each.
	b2 := g.startCall(b, "echo", map[string]any{"text": "b2"}, 60_000)
	a3 := g.startCall(a, "echo", map[string]any{"text": "a3"}, 60_000)

	// A poll from each session's own cursor gets exactly what is after it.
	reply := g.multiPoll(0, entry(a, aCursor), entry(b, bCursor))
	if len(reply.Sessions) != 2 || reply.Sessions[0].SessionID != a.ID || reply.Sessions[1].SessionID != b.ID ||
		len(reply.Sessions[0].Events) != 1 || reply.Sessions[0].Events[0].ID != a3.ID ||
		len(reply.Sessions[1].Events) != 1 || reply.Sessions[1].Events[0].ID != b2.ID || len(reply.Refused) != 0 {
		t.Fatalf("poll from the cursors: %+v", reply)
	}

	// A stream resumed from each session's own cursor: each gets its own
	// call after its cursor, nothing of before.
	st, _ = g.openMulti(entry(a, aCursor), entry(b, bCursor))
	got := map[string]string{}
	for range 2 {
		ev := st.next()
		sid, _, _ := strings.Cut(ev.ID, ":")
		got[sid] = ev.Data["id"].(string)
	}
	if got[a.ID] != a3.ID || got[b.ID] != b2.ID {
		t.Fatalf("resumed stream sent %v, want %s for a and %s for b", got, a3.ID, b2.ID)
	}
	// A cursor one session's log cannot serve refuses that session only.
	st2, ready := g.openMulti(entry(a, 1<<40), entry(b, bCursor))
	refused := ready.Data["refused"].([]any)
	if len(refused) != 1 || refused[0].(map[string]any)["session_id"] != a.ID || refused[0].(map[string]any)["code"] != "BAD_REQUEST" {
		t.Fatalf("a bad cursor: ready %s", ready.Raw)
	}
	if callOf(t, st2.next(), b) != b2.ID {
		t.Fatal("the other session was not served")
	}
}

func TestMultiStreamJoinAndLeave(t *testing.T) {
	g := startGateway(t, nil)
	a, b := g.twoSessions()
	online := func(s session) bool {
		var view struct {
			Online bool `json:"online"`
		}
		g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
		return view.Online
	}
	st, ready := g.openMulti(entry(a, -1))
	id := ready.Data["stream_id"].(string)
	if !online(a) || online(b) {
		t.Fatal("presence: a should be online, b not")
	}
	b1 := g.startCall(b, "echo", map[string]any{"text": "b1"}, 60_000)
	var joined map[string]any
	g.call("POST", "/v1/streams/"+id+"/sessions", "", entry(b, -1), 200, &joined)
	if joined["joined"] != true || joined["session_id"] != b.ID {
		t.Fatalf("join reply %v", joined)
	}
	if ev := st.next(); ev.Event != "session_joined" || ev.Data["session_id"] != b.ID {
		t.Fatalf("after the join: %+v", ev)
	}
	if callOf(t, st.next(), b) != b1.ID {
		t.Fatal("the joined session's open call was not sent")
	}
	if !online(b) {
		t.Fatal("a joined session is not online")
	}
	// Joining again changes nothing: no second session_joined, no resend.
	g.call("POST", "/v1/streams/"+id+"/sessions", "", entry(b, -1), 200, nil)
	a1 := g.startCall(a, "echo", map[string]any{"text": "a1"}, 60_000)
	if callOf(t, st.next(), a) != a1.ID {
		t.Fatal("a second join sent something")
	}

	// a leaves: session_left, then nothing more of a.
	if status, body := g.do("DELETE", "/v1/streams/"+id+"/sessions/"+a.ID, a.Token, nil); status != 204 {
		t.Fatalf("leave: %d %s", status, body)
	}
	if ev := st.next(); ev.Event != "session_left" || ev.Data["session_id"] != a.ID || ev.Data["reason"] != "left" {
		t.Fatalf("after the leave: %+v", ev)
	}
	g.startCall(a, "echo", map[string]any{"text": "a2"}, 60_000)
	b2 := g.startCall(b, "echo", map[string]any{"text": "b2"}, 60_000)
	if callOf(t, st.next(), b) != b2.ID {
		t.Fatal("a left session's call was sent")
	}
	testwait.Until(t, 5*time.Second, "a offline after it left", func() bool { return !online(a) })

	// Leaving again, leaving with another's token, an unknown stream.
	for _, c := range []struct {
		path, token string
		status      int
	}{
		{"/v1/streams/" + id + "/sessions/" + a.ID, a.Token, 404},
		{"/v1/streams/" + id + "/sessions/" + b.ID, a.Token, 403},
		{"/v1/streams/st_nope/sessions/" + b.ID, b.Token, 404},
	} {
		if status, body := g.do("DELETE", c.path, c.token, nil); status != c.status {
			t.Errorf("DELETE %s: %d %s, want %d", c.path, status, body, c.status)
		}
	}
	if status, _ := g.do("POST", "/v1/streams/st_nope/sessions", "", entry(a, -1)); status != 404 {
		t.Errorf("join of an unknown stream: %d, want 404", status)
	}
	// a joins again: it gets its open calls.
	g.call("POST", "/v1/streams/"+id+"/sessions", "", entry(a, -1), 200, nil)
	if ev := st.next(); ev.Event != "session_joined" {
		t.Fatalf("after the second join: %+v", ev)
	}
	var resent []string
	for range 2 {
		resent = append(resent, callOf(t, st.next(), a))
	}
	if !slices.Contains(resent, a1.ID) {
		t.Fatalf("the rejoined session got %v, want its open calls (with %s)", resent, a1.ID)
	}

	// The stream ends: both offline.
	st.Close()
	testwait.Until(t, 5*time.Second, "both offline after the stream closed", func() bool { return !online(a) && !online(b) })
	if status, _ := g.do("POST", "/v1/streams/"+id+"/sessions", "", entry(a, -1)); status != 404 {
		t.Errorf("join of an ended stream: %d, want 404", status)
	}
}

func TestMultiStreamRefusesOneDisturbsNone(t *testing.T) {
	g := startGateway(t, nil)
	a, b := g.newSession("a"), g.newSession("b")
	g.register(a, echoTool)
	wrong := map[string]any{"session_id": b.ID, "token": "tgs_wrong"}
	another := map[string]any{"session_id": b.ID, "token": a.Token}
	unknown := map[string]any{"session_id": "nope", "token": "tgs_wrong"}
	st, ready := g.openMulti(wrong, entry(a, -1), another, unknown, map[string]any{"token": a.Token})
	var codes []string
	for _, r := range ready.Data["refused"].([]any) {
		codes = append(codes, r.(map[string]any)["code"].(string))
	}
	if want := []string{"UNAUTHENTICATED", "PERMISSION_DENIED", "UNAUTHENTICATED", "BAD_REQUEST"}; !slices.Equal(codes, want) {
		t.Fatalf("refused %v, want %v (ready %s)", codes, want, ready.Raw)
	}
	if s := ready.Data["sessions"].([]any); len(s) != 1 || s[0] != a.ID {
		t.Fatalf("sessions %v", s)
	}
	c := g.startCall(a, "echo", map[string]any{"text": "x"}, 60_000)
	if callOf(t, st.next(), a) != c.ID {
		t.Fatal("the good session was not served")
	}
	reply := g.multiPoll(0, wrong, entry(a, -1), another)
	if len(reply.Sessions) != 1 || reply.Sessions[0].SessionID != a.ID || len(reply.Sessions[0].Events) != 1 ||
		len(reply.Refused) != 2 || reply.Refused[0].Code != "UNAUTHENTICATED" || reply.Refused[1].Code != "PERMISSION_DENIED" {
		t.Fatalf("poll: %+v", reply)
	}
	// A join with a wrong token is refused and the stream goes on.
	if status, _ := g.do("POST", "/v1/streams/"+ready.Data["stream_id"].(string)+"/sessions", "", wrong); status != 401 {
		t.Fatalf("join with a wrong token: %d, want 401", status)
	}
	c2 := g.startCall(a, "echo", map[string]any{"text": "y"}, 60_000)
	if callOf(t, st.next(), a) != c2.ID {
		t.Fatal("the stream stopped after a refused join")
	}
}

func TestMultiStreamSessionCloses(t *testing.T) {
	g := startGateway(t, nil)
	a, b := g.twoSessions()
	st, _ := g.openMulti(entry(a, -1), entry(b, -1))
	c := g.startCall(a, "echo", map[string]any{"text": "x"}, 60_000)
	callOf(t, st.next(), a)
	g.call("POST", "/v1/sessions/"+a.ID+"/close", a.Token, nil, 200, nil)
	ev := st.next()
	if seqOf(t, ev, a.ID); ev.Event != "call_cancelled" || ev.Data["id"] != c.ID {
		t.Fatalf("after the close: %+v", ev)
	}
	if ev := st.next(); ev.Event != "session_left" || ev.Data["reason"] != "closed" || ev.Data["session_id"] != a.ID {
		t.Fatalf("after the cancel: %+v", ev)
	}
	cb := g.startCall(b, "echo", map[string]any{"text": "y"}, 60_000)
	ev = st.next()
	if callOf(t, ev, b) != cb.ID {
		t.Fatal("the stream did not go on for the other session")
	}

	// A held poll returns a session that closes during the hold with its
	// last events and "ended".
	done := make(chan pollReply, 1)
	go func() { done <- g.multiPoll(10_000, entry(b, seqOf(t, ev, b.ID))) }()
	time.Sleep(100 * time.Millisecond) // the poll is held
	g.call("POST", "/v1/sessions/"+b.ID+"/close", b.Token, nil, 200, nil)
	select {
	case reply := <-done:
		if len(reply.Sessions) != 1 || !reply.Sessions[0].Ended || len(reply.Sessions[0].Events) != 1 ||
			reply.Sessions[0].Events[0].Type != "call_cancelled" || reply.Sessions[0].Events[0].ID != cb.ID {
			t.Fatalf("the held poll of a closing session: %+v", reply)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held poll did not return when its session closed")
	}
}

func TestMultiStreamLimits(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.MaxStreamSessions = 2 })
	a, b, c := g.newSession("a"), g.newSession("b"), g.newSession("c")
	body := func(ss ...session) map[string]any {
		var es []map[string]any
		for _, s := range ss {
			es = append(es, entry(s, -1))
		}
		return map[string]any{"sessions": es}
	}
	for _, path := range []string{"/v1/streams", "/v1/poll"} {
		status, data := g.do("POST", path, "", body(a, b, c))
		if status != 400 || !strings.Contains(string(data), `"limit":2`) {
			t.Errorf("%s with 3 sessions: %d %s, want 400 naming the limit", path, status, data)
		}
	}
	_, ready := g.openMulti(entry(a, -1), entry(b, -1))
	status, data := g.do("POST", "/v1/streams/"+ready.Data["stream_id"].(string)+"/sessions", "", entry(c, -1))
	if status != 409 || errorCode(data) != "CONFLICT" {
		t.Fatalf("a join past the limit: %d %s, want 409", status, data)
	}
}

// TestMultiNeedsACredential: a multi-session stream or poll is held only
// for a session that proved itself. Naming none is 400; a stream whose
// every session is refused ends after its ready event, and a poll of them
// answers at once — with --client-key set as without.
func TestMultiNeedsACredential(t *testing.T) {
	g := startGateway(t, func(c *server.Config) { c.ClientKey = "client-secret" })
	const unknown = "0190f000-0000-7000-8000-000000000000" // no such session
	// within answers method path body, giving up after 3 s.
	within := func(method, path, body string) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, g.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.String(), err
	}
	for _, path := range []string{"/v1/streams", "/v1/poll"} {
		for _, body := range []string{"", `{}`, `{"sessions":[]}`} {
			status, reply, err := within("POST", path, body)
			if err != nil || status != 400 || errorCode([]byte(reply)) != "BAD_REQUEST" {
				t.Errorf("%s %q: %d %s %v, want 400 BAD_REQUEST", path, body, status, reply, err)
			}
		}
	}
	refused := `{"sessions":[{"session_id":"` + unknown + `","token":"tgs_wrong"}],"wait_ms":60000}`
	status, reply, err := within("POST", "/v1/streams", refused)
	if err != nil || status != 200 || !strings.Contains(reply, `"sessions":[],"refused":[{"session_id":"`+unknown+`","code":"UNAUTHENTICATED"`) {
		t.Errorf("a stream of refused sessions: %d %q %v, want its ready event and its end", status, reply, err)
	}
	start := time.Now()
	status, reply, err = within("POST", "/v1/poll", refused)
	if err != nil || status != 200 || !strings.HasPrefix(reply, `{"sessions":[],"refused":[{"session_id":"`+unknown+`","code":"UNAUTHENTICATED"`) || time.Since(start) > 2*time.Second {
		t.Errorf("a poll of refused sessions: %d %q %v after %v, want its refusals at once", status, reply, err, time.Since(start))
	}
}

// TestMultiStreamResumesAfterKill kills the gateway with SIGKILL while a
// multi-session stream carries two sessions' open calls; a new stream
// with each session's cursor gets every open call again, per session.
func TestMultiStreamResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	proc := gatewaytest.Start(t, "--agent-key", testAgentKey)
	g := &gateway{t: t, URL: proc.URL}
	a, b := g.twoSessions()
	st, _ := g.openMulti(entry(a, -1), entry(b, -1))
	open := map[string][]string{}
	cursors := map[string]int64{}
	for i, s := range []session{a, b, a, b} {
		c := g.startCall(s, "echo", map[string]any{"text": strconv.Itoa(i)}, 60_000)
		ev := st.next()
		if callOf(t, ev, s) != c.ID {
			t.Fatalf("event %s, want call %s", ev.Raw, c.ID)
		}
		open[s.ID] = append(open[s.ID], c.ID)
		cursors[s.ID] = seqOf(t, ev, s.ID)
	}
	proc.Kill()
	st.Close()
	proc.Restart(t)

	st, ready := g.openMulti(entry(a, cursors[a.ID]), entry(b, cursors[b.ID]))
	if len(ready.Data["refused"].([]any)) != 0 {
		t.Fatalf("refused after the restart: %s", ready.Raw)
	}
	got := map[string][]string{}
	for range 4 {
		ev := st.next()
		sid, _, _ := strings.Cut(ev.ID, ":")
		got[sid] = append(got[sid], ev.Data["id"].(string))
	}
	for _, s := range []session{a, b} {
		if !slices.Equal(got[s.ID], open[s.ID]) {
			t.Errorf("session %s got %v again, want its open calls %v", s.ID, got[s.ID], open[s.ID])
		}
	}
}
