package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testwait"
)

// fakeClock is a wall clock that a test can move forward.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// TestSessionClose: closing cancels open calls (callers see CANCELLED,
// the stream gets call_cancelled with reason session_closed and ends),
// refuses the token afterwards and keeps the history.
func TestSessionClose(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("closing")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	rec := g.startCall(s, "echo", map[string]any{"text": "x"}, 0)
	st.nextOfType("tool_call_request")

	g.call("POST", "/v1/sessions/"+s.ID+"/close", s.Token, nil, 200, nil)
	if got := g.waitCall(rec.ID); got.Status != "cancelled" || got.Error.Code != "CANCELLED" {
		t.Fatalf("call after close = %+v", got)
	}
	if ev := st.nextOfType("call_cancelled"); ev.Data["reason"] != "session_closed" {
		t.Fatalf("event = %+v", ev)
	}
	if !st.ended() {
		t.Fatal("stream still open after the session closed")
	}
	status, body := g.do("POST", "/v1/sessions/"+s.ID+"/tools", s.Token, `{"tools":[]}`)
	if status != 401 || !strings.Contains(string(body), "closed") {
		t.Fatalf("token after close: %d %s", status, body)
	}
	var view struct {
		ClosedAt    string `json:"closed_at"`
		CloseReason string `json:"close_reason"`
	}
	g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
	if view.ClosedAt == "" || view.CloseReason != "closed" {
		t.Fatalf("session view = %+v", view)
	}
	var list struct {
		Calls []callRecord `json:"calls"`
	}
	g.call("GET", "/v1/calls?session_id="+s.ID, testAgentKey, nil, 200, &list)
	if len(list.Calls) != 1 {
		t.Fatalf("history = %+v", list.Calls)
	}
	var closedTools struct {
		Tools []any `json:"tools"`
	}
	g.call("GET", "/api/tools?session_id="+s.ID, testAgentKey, nil, 200, &closedTools)
	if closedTools.Tools == nil || len(closedTools.Tools) != 0 {
		t.Fatalf("tools of a closed session = %v, want []", closedTools.Tools)
	}
	if status, body := g.do("GET", "/api/tools?session_id=no-such-session", testAgentKey, nil); status != 404 {
		t.Fatalf("tools of an unknown session: %d %s", status, body)
	}
	status, body = g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "x"}})
	if status != 404 {
		t.Fatalf("call on closed session: %d %s", status, body)
	}
}

// TestCallRacingSessionClose: a call that passed its checks while its
// session was open but is stored after the close was written (too late for
// the close to cancel it) is cancelled at once rather than left waiting,
// never sent, until its deadline; a call made while the close is being
// written is refused.
func TestCallRacingSessionClose(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("racing")
	g.register(s, echoTool)
	eng := g.Server.Engine
	var once sync.Once
	eng.Hooks().OnBeforeCall(func(ctx context.Context, c toolgate.CallCheck) error {
		once.Do(func() {
			// Runs after the session check and before the call is stored.
			if err := eng.Sessions.CloseSession(ctx, s.ID); err != nil {
				t.Error(err)
			}
		})
		return nil
	})
	start := time.Now()
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{
		"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "x"}, "timeout_ms": 60000})
	if status != 200 {
		t.Fatalf("racing call: %d %s", status, body)
	}
	var rec callRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Status != "cancelled" || rec.Error == nil || rec.Error.Code != "CANCELLED" || !strings.Contains(rec.Error.Message, "closed") {
		t.Fatalf("racing call = %s", body)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the racing call took %s", waited)
	}
	if got := g.waitCall(rec.ID); got.Status != "cancelled" {
		t.Fatalf("stored record = %+v", got)
	}
}

// TestOfflineGraceAndExpiry: an offline session's tools stay callable for
// the grace period, then calls fail fast with SESSION_OFFLINE and the tools
// show offline; a poll brings it back; unseen for its time-to-live it
// expires, its open calls are cancelled and its token refused.
func TestOfflineGraceAndExpiry(t *testing.T) {
	clock := &fakeClock{}
	g := startGateway(t, func(c *serverConfig) {
		c.Now = clock.Now
		c.SessionGrace = time.Minute
		c.SessionTTL = time.Hour
		c.PollWait = time.Second
		c.MaxTimeout = 3 * time.Hour
	})
	s := g.newSession("phone")
	g.register(s, echoTool)

	clock.Advance(30 * time.Second) // within grace: the call is accepted and waits
	waiting := g.startCall(s, "echo", map[string]any{"text": "queued"}, int((2 * time.Hour).Milliseconds()))

	clock.Advance(time.Minute) // past grace
	status, body := g.do("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "x"}})
	if status != 503 || errorCode(body) != "SESSION_OFFLINE" {
		t.Fatalf("call past grace: %d %s", status, body)
	}
	var tools struct {
		Tools []struct {
			Online bool `json:"online"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools?session_id="+s.ID, testAgentKey, nil, 200, &tools)
	if len(tools.Tools) != 1 || tools.Tools[0].Online {
		t.Fatalf("tools past grace = %+v", tools)
	}

	// The client comes back by polling and receives the call that waited.
	var poll struct {
		Events []map[string]any `json:"events"`
	}
	g.call("GET", "/v1/sessions/"+s.ID+"/poll?wait_ms=0", s.Token, nil, 200, &poll)
	if len(poll.Events) != 1 || poll.Events[0]["id"] != waiting.ID {
		t.Fatalf("poll after return = %+v", poll)
	}
	g.call("POST", "/v1/calls", testAgentKey, map[string]any{"session_id": s.ID, "tool": "echo", "args": map[string]any{"text": "x"}, "wait": false}, 202, nil)

	clock.Advance(2 * time.Hour) // unseen past its time-to-live
	g.Server.Engine.Sessions.Sweep(context.Background())
	status, body = g.do("GET", "/v1/sessions/"+s.ID+"/poll?wait_ms=0", s.Token, nil)
	if status != 401 || !strings.Contains(string(body), "expired") {
		t.Fatalf("token after expiry: %d %s", status, body)
	}
	if got := g.waitCall(waiting.ID); got.Status != "cancelled" {
		t.Fatalf("open call after expiry = %+v", got)
	}
	var all struct {
		Tools []struct {
			Source struct {
				Kind string `json:"kind"`
			} `json:"source"`
		} `json:"tools"`
	}
	g.call("GET", "/api/tools", testAgentKey, nil, 200, &all)
	for _, tool := range all.Tools {
		if tool.Source.Kind != "builtin" {
			t.Fatalf("tools after expiry = %+v", all)
		}
	}
}

// TestHealthAndMetrics: /healthz answers, /metrics speaks the Prometheus
// text format with sessions online, calls by status and the latency
// histogram — to the agent key only.
func TestHealthAndMetrics(t *testing.T) {
	g := startGateway(t, nil)
	g.call("GET", "/healthz", "", nil, 200, nil)
	s := g.newSession("m")
	g.register(s, echoTool)
	st := g.openStream(s, "")
	rec := g.startCall(s, "echo", map[string]any{"text": "x"}, 0)
	st.nextOfType("tool_call_request")
	g.answer(s, rec.ID, "ok")
	g.waitCall(rec.ID)

	if status, body := g.do("GET", "/metrics", "", nil); status != 401 {
		t.Errorf("metrics without the agent key: %d %s, want 401", status, body)
	}
	status, body := g.do("GET", "/metrics", testAgentKey, nil)
	if status != 200 {
		t.Fatalf("metrics: %d", status)
	}
	text := string(body)
	for _, want := range []string{
		"toolgate_sessions_online 1",
		`toolgate_calls_total{status="completed"} 1`,
		`toolgate_calls_total{status="pending"} 1`,
		"toolgate_call_roundtrip_seconds_count 1",
		"toolgate_db_transactions_total",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestStaticAssets: the page and the SDK are served from the binary.
func TestStaticAssets(t *testing.T) {
	g := startGateway(t, nil)
	status, body := g.do("GET", "/", "", nil)
	if status != 200 || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Fatalf("/: %d", status)
	}
	if status, body := g.do("GET", "/no-such-file.js", "", nil); status != 404 || errorCode(body) != "NOT_FOUND" {
		t.Fatalf("missing asset: %d %s", status, body)
	}
}

// TestProgressPushesDeadline: each progress report moves the deadline to
// the report's time plus the call's timeout, never past the creation plus
// the gateway's maximum call length.
func TestProgressPushesDeadline(t *testing.T) {
	clock := &fakeClock{}
	g := startGateway(t, func(c *serverConfig) {
		c.Now = clock.Now
		c.MaxTimeout = 10 * time.Second
		c.DefaultTimeout = 5 * time.Second
	})
	s := g.newSession("slow")
	g.register(s, echoTool)
	rec := g.startCall(s, "echo", map[string]any{"text": "upload"}, 4000)
	created, _ := time.Parse(time.RFC3339, rec.Deadline)
	created = created.Add(-4 * time.Second)

	report := func() time.Time {
		var ack struct {
			Deadline string `json:"deadline"`
		}
		g.call("POST", "/v1/sessions/"+s.ID+"/progress", s.Token, map[string]any{"type": "tool_progress", "id": rec.ID, "progress": map[string]any{"current": 1}}, 200, &ack)
		d, err := time.Parse(time.RFC3339, ack.Deadline)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	clock.Advance(3 * time.Second)
	if got, want := report(), created.Add(7*time.Second); got.Sub(want).Abs() > 50*time.Millisecond {
		t.Fatalf("deadline after a report at +3s = %s, want %s", got, want)
	}
	clock.Advance(5 * time.Second) // +8s: the timeout would reach +12s, the cap is +10s
	if got, want := report(), created.Add(10*time.Second); got.Sub(want).Abs() > 50*time.Millisecond {
		t.Fatalf("deadline past the cap = %s, want %s", got, want)
	}
}

// TestStreamPresence: a session is online while its stream is open and
// offline as soon as the client closes it.
func TestStreamPresence(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("presence")
	online := func() bool {
		var view struct {
			Online bool `json:"online"`
		}
		g.call("GET", "/v1/sessions/"+s.ID, testAgentKey, nil, 200, &view)
		return view.Online
	}
	if online() {
		t.Fatal("online before any stream")
	}
	st := g.openStream(s, "")
	st.nextOfType("ready")
	if !online() {
		t.Fatal("offline with an open stream")
	}
	st.Close()
	testwait.Until(t, 5*time.Second, "the session offline after its stream closed", func() bool { return !online() })
}

// TestStreamConnectionNotReused: a stream's connection is closed when the
// stream ends, so its response says so, and a client never reuses it for
// its next request (it would find it reset).
func TestStreamConnectionNotReused(t *testing.T) {
	g := startGateway(t, nil)
	s := g.newSession("stream-conn")
	req, _ := http.NewRequest("GET", g.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !resp.Close || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("stream response: Close %v, headers %v", resp.Close, resp.Header)
	}
}
